--[[
  unregisterAgents: removes agents' definitions, waiting entries, dead-letter entries and a cron
  agent's record of its next fire.
  A lease still held is left alone: its holder may heartbeat and complete it, and
  completeAgent drops the agent instead of rescheduling it.
  An agent that existed finishes as unregistered (finished: its result record, its children's
  outbox entry, Await callers told); a blocked agent's parents go with it, and an agent waiting
  for an event leaves its wait (its run is over: its steps and signals go). With cascade its
  finish cascades ("u"): its children are cancelled whatever their policy, and theirs in turn
  (releaseChild), as Baton releases the outbox page by page.

  Input:
    KEYS of QueueKeys
    KEYS[1] waiting    ZSET name -> next run (ms)
    KEYS[2] defs       HASH name -> definition JSON
    KEYS[3] payloads   HASH name -> payload bytes
    KEYS[4] streaks    HASH name -> consecutive failures
    KEYS[5] dlq        ZSET name -> dead-lettered at (ms)
    KEYS[6] dlqinfo    HASH name -> dead-letter context JSON
    KEYS[7] cron       HASH name -> "token|next fire" of a cron agent's latest run
    KEYS[8] pending    HASH name -> parents still pending (blocked agents)
    KEYS[9]  unattached ZSET name -> registered at: blocked agents not yet attached to parents
    KEYS[10] results   HASH name -> result record (finished)
    KEYS[11] resultsat ZSET name -> kept until (ms)
    KEYS[12] fanout    SET names with children
    KEYS[13] children  base of "children:<parent>"
    KEYS[14] outbox    ZSET "<parent>|<seq>" -> written at (ms)
    KEYS[15] outboxres HASH "<parent>|<seq>" -> result record
    KEYS[16] awaited   ZSET name -> awaited until (ms)
    KEYS[17] deps      base of "deps:<child>"
    KEYS[18] steps     HASH name -> the steps its current run recorded: dropped (kept with a
                       kept finish: runSteps)
    KEYS[19] waits     HASH name -> wait record: an agent waiting for an event leaves its wait
    KEYS[20] waitat    ZSET name -> until (ms): the waits with a time

    ARGV[1] channel (str)       where to announce: "P|S <wake-up channel>" or "", then
                                "\n<outbox channel>" (announceOutbox)
    ARGV[2] queue (str)         queue name
    ARGV[3] resultTtlMs (uint)  how long finishes are kept (results.retention_ms)
    ARGV[4] resultMax (uint)    most finishes kept per queue (results.max_entries)
    ARGV[5] cascade (bool)      the finishes cascade to the descendants
    ARGV[6..] agents (items)    one item per agent:
      name (str)                agent name

  Output -> Unregistered:
    { removed, outboxed, cascaded }  how many of the names existed; outbox entries written;
    children those entries took for a cascade
]]
local rcall = redis.call
--@include publish
--@include nowMs
--@include memberKey
--@include keepsFinish
--@include finished
--@include runSteps
local waitingKey, defsKey, payloadsKey, streaksKey = K.waiting, K.defs, K.payloads, K.streaks
local dlqKey, dlqinfoKey, cronKey = K.dlq, K.dlqinfo, K.cron
local pendingKey, unattachedKey = K.pending, K.unattached
flowKeys(K, A.resultTtlMs, A.resultMax)
stepsKeys(K.steps)
local channel, queue = A.channel, A.queue

local now = nowMs()
local removed = 0
for _, item in ipairs(A.agents) do
  local name = item.name
  local def = rcall('HGET', defsKey, name)
  if def then
    removed = removed + 1
    rcall('HDEL', defsKey, name)
    dropParents(name, def)
    finished(name, resultRecord(A.cascade and 'u' or 'U', '', 0, now, '', ''), now, keepsFinish(def))
    stepsEnded(name, 0)
  end
  rcall('HDEL', payloadsKey, name)
  rcall('HDEL', streaksKey, name)
  rcall('ZREM', waitingKey, name)
  rcall('ZREM', dlqKey, name)
  rcall('HDEL', dlqinfoKey, name)
  rcall('HDEL', cronKey, name)
  rcall('HDEL', pendingKey, name)
  rcall('ZREM', unattachedKey, name)
  if rcall('HDEL', K.waits, name) == 1 then rcall('ZREM', K.waitat, name) end
end
stepsSettle(F.kept, F.results, now)
local outboxed = endFinished(channel, queue, now)
return { removed, outboxed, F.cascaded }
