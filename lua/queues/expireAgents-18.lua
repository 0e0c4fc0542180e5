--[[
  expireAgents: the sweeper's step of expiry. Takes up to `limit` entries of expiring whose
  time has come, and finishes as expired (expireAgent) each agent still waiting or blocked whose
  definition still carries that expiry: it never ran. An entry whose agent started a run (its
  first grant dropped the expiry from its definition), holds a lease, or is gone is dropped;
  one whose definition carries a later expiry (a Register since) is put back at that time.
  The work per call is bounded by `limit`; the acquire scripts check the same expiry at grant
  time, so an agent met by a worker before this step runs is never granted either.

  Input:
    KEYS of QueueKeys
    KEYS[1] waiting    ZSET name -> next run (ms)
    KEYS[2] working    ZSET name -> lease deadline (ms)
    KEYS[3] defs       HASH name -> definition JSON
    KEYS[4] payloads   HASH name -> payload bytes
    KEYS[5] streaks    HASH name -> consecutive failures
    KEYS[6] stats      HASH "expired" -> agents expired
    KEYS[7] pending    HASH name -> parents still pending (blocked agents)
    KEYS[8] unattached ZSET name -> registered at: blocked agents not yet attached to parents
    KEYS[9]  order     ZSET name -> rank * 2^42 + tag: promoted agents of a keyed queue
    KEYS[10] expiring  ZSET name -> expire at (ms): agents with an expiry not started yet
    KEYS[11] results   HASH name -> result record (finished)
    KEYS[12] resultsat ZSET name -> kept until (ms)
    KEYS[13] fanout    SET names with children
    KEYS[14] children  base of "children:<parent>"
    KEYS[15] outbox    ZSET "<parent>|<seq>" -> written at (ms)
    KEYS[16] outboxres HASH "<parent>|<seq>" -> result record
    KEYS[17] awaited   ZSET name -> awaited until (ms)
    KEYS[18] deps      base of "deps:<child>"

    ARGV[1] channel (str)       where to announce: "P|S <wake-up channel>" or "", then
                                "\n<outbox channel>" (announceOutbox)
    ARGV[2] queue (str)         queue name
    ARGV[3] resultTtlMs (uint)  how long finishes are kept (results.retention_ms)
    ARGV[4] resultMax (uint)    most finishes kept per queue (results.max_entries)
    ARGV[5] limit (uint)        most expiring entries to take

  Output -> Expired:
    { expired, taken, outboxed }  agents expired; entries taken (limit: call again); outbox
    entries written
]]
local rcall = redis.call
--@include publish
--@include nowMs
--@include memberKey
--@include defField
--@include keepsFinish
--@include finished
--@include expireAgent
flowKeys(K, A.resultTtlMs, A.resultMax)

local now = nowMs()
local due = rcall('ZRANGEBYSCORE', K.expiring, '-inf', now, 'LIMIT', 0, A.limit)
if #due == 0 then return { 0, 0, 0 } end
rcall('ZREM', K.expiring, unpack(due))
local defs = rcall('HMGET', K.defs, unpack(due))
local expired = 0
for j, name in ipairs(due) do
  local def = defs[j]
  local expireAt = def and defExpireAt(def)
  if expireAt and expireAt > now then
    rcall('ZADD', K.expiring, expireAt, name)
  elseif expireAt and not rcall('ZSCORE', K.working, name) then
    local waiting = rcall('ZREM', K.waiting, name) == 1
    local blocked = rcall('HDEL', K.pending, name) == 1
    if waiting or blocked then
      if waiting then rcall('ZREM', K.order, name) end
      if blocked then rcall('ZREM', K.unattached, name) end
      expireAgent(K, name, def, now)
      expired = expired + 1
    end
  end
end
return { expired, #due, endFinished(A.channel, A.queue, now) }
