--[[
  closeBatch: closes a batch (see openBatch): its "open" count goes, and it is done at once
  when no member is pending (finishBatch). Closing twice changes nothing.

  Input:
    KEYS of QueueKeys
    KEYS[1]  defs       HASH name -> definition JSON (the sentinel's)
    KEYS[2]  pending    HASH name -> pending count
    KEYS[3]  stats      HASH total, succeeded, failed, closed, created_at, done_at, callbacks
    KEYS[4]  results   HASH name -> result record (finished)
    KEYS[5]  resultsat ZSET name -> kept until (ms)
    KEYS[6]  fanout    SET names with children
    KEYS[7]  children  base of "children:<parent>"
    KEYS[8]  outbox    ZSET "<parent>|<seq>" -> written at (ms)
    KEYS[9]  outboxres HASH "<parent>|<seq>" -> result record
    KEYS[10] awaited   ZSET name -> awaited until (ms)
    KEYS[11] deps      base of "deps:<name>"

    ARGV[1] channel (str)       where to announce: "P|S <wake-up channel>" or "", then
                                "\n<outbox channel>" (announceOutbox)
    ARGV[2] queue (str)         the batch's queue name ("~<batch>")
    ARGV[3] resultTtlMs (uint)  how long finishes are kept (results.retention_ms)
    ARGV[4] resultMax (uint)    most finishes kept per queue (results.max_entries)
    ARGV[5] batch (str)         the batch's name

  Output -> BatchStep: { code, outboxed } code 1 closed now, 0 closed before, -1 no such batch
]]
local rcall = redis.call
--@include memberKey
--@include publish
--@include nowMs
--@include keepsFinish
--@include finished
--@include finishBatch
flowKeys(K, A.resultTtlMs, A.resultMax)
local defsKey, pendingKey, statsKey = K.defs, K.pending, K.stats
local channel, queue, batch = A.channel, A.queue, A.batch
local b = { defs = defsKey, pending = pendingKey, stats = statsKey }
if rcall('EXISTS', statsKey) == 0 then return { -1, 0 } end
if rcall('HGET', statsKey, 'closed') == '1' then return { 0, 0 } end
local now = nowMs()
rcall('HSET', statsKey, 'closed', '1')
if rcall('HINCRBY', pendingKey, batch, -1) <= 0 then finishBatch(b, batch, now) end
return { 1, endFinished(channel, queue, now) }
