--[[
  openBatch: creates a batch (its sentinel agent, named as the batch, blocked by one pending
  "open" count until closed) or finds it, and adds members: each "<queue>|<name>" becomes a
  pending parent of the sentinel (RUN_ANYWAY: any finish counts), once. A closed batch adds
  nothing. With close, the batch is closed after the members are added, and done at once if
  nothing is pending (finishBatch). The sentinel is listed in unattached until Baton has
  attached it to the new members (the flows sweep repairs a crash in between).

  Input:
    KEYS of QueueKeys
    KEYS[1]  defs       HASH name -> definition JSON (the sentinel's)
    KEYS[2]  pending    HASH name -> pending count (members not finished, + 1 while open)
    KEYS[3]  stats      HASH total, succeeded, failed, closed, created_at, done_at, callbacks
    KEYS[4]  unattached ZSET name -> since (ms): members not yet attached
    KEYS[5]  results   HASH name -> result record (finished)
    KEYS[6]  resultsat ZSET name -> kept until (ms)
    KEYS[7]  fanout    SET names with children
    KEYS[8]  children  base of "children:<parent>"
    KEYS[9]  outbox    ZSET "<parent>|<seq>" -> written at (ms)
    KEYS[10] outboxres HASH "<parent>|<seq>" -> result record
    KEYS[11] awaited   ZSET name -> awaited until (ms)
    KEYS[12] deps      base of "deps:<name>" (the sentinel's pending members)

    ARGV[1] channel (str)       where to announce: "P|S <wake-up channel>" or "", then
                                "\n<outbox channel>" (announceOutbox)
    ARGV[2] queue (str)         the batch's queue name ("~<batch>")
    ARGV[3] resultTtlMs (uint)  how long finishes are kept (results.retention_ms)
    ARGV[4] resultMax (uint)    most finishes kept per queue (results.max_entries)
    ARGV[5] batch (str)         the batch (and its sentinel's) name
    ARGV[6] callbacks (str)     "" when the call gives none, else the callbacks ("<queue>|<name>"
                                lines): recorded when the batch is created; a later call must
                                give the same
    ARGV[7] close (bool)        close after adding
    ARGV[8..] members (items)   the members to add
      queue (str)               a member's queue
      name (str)                its name

  Output -> BatchStep: { code, outboxed } code 1 created, 0 found, -1 closed (nothing added), -2 other
          callbacks than recorded (nothing changed)
]]
local rcall = redis.call
--@include memberKey
--@include publish
--@include nowMs
--@include keepsFinish
--@include finished
--@include finishBatch
local defsKey, pendingKey, statsKey, unattachedKey = K.defs, K.pending, K.stats, K.unattached
flowKeys(K, A.resultTtlMs, A.resultMax)
local channel, queue, batch, callbacks, close = A.channel, A.queue, A.batch, A.callbacks, A.close
local b = { defs = defsKey, pending = pendingKey, stats = statsKey }
local now = nowMs()
local code = 0
if rcall('HEXISTS', defsKey, batch) == 0 then
  if rcall('EXISTS', statsKey) == 1 then return { -1, 0 } end -- done already: closed for good
  rcall('HSET', defsKey, batch, '{"timeout_ms":1,"error_interval_ms":1,"batch":1}')
  rcall('HSET', pendingKey, batch, 1)
  rcall('HSET', statsKey, 'total', 0, 'succeeded', 0, 'failed', 0, 'created_at', string.format('%d', now),
    'callbacks', callbacks)
  code = 1
else
  local c = rcall('HMGET', statsKey, 'closed', 'callbacks')
  if c[1] == '1' then return { -1, 0 } end
  if callbacks ~= '' and callbacks ~= c[2] then return { -2, 0 } end
end
local depsKey = memberKey(F.deps, batch)
local added = 0
for _, m in ipairs(A.members) do
  if rcall('HSETNX', depsKey, m.queue .. '|' .. m.name, 'pA') == 1 then added = added + 1 end
end
if added > 0 then
  rcall('HINCRBY', pendingKey, batch, added)
  rcall('HINCRBY', statsKey, 'total', added)
  rcall('ZADD', unattachedKey, now, batch)
end
if close then
  rcall('HSET', statsKey, 'closed', '1')
  if rcall('HINCRBY', pendingKey, batch, -1) <= 0 then finishBatch(b, batch, now) end
end
return { code, endFinished(channel, queue, now) }
