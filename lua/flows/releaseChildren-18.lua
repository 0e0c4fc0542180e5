--[[
  releaseChildren: applies parents' finishes to blocked children of this queue (the child's
  slot), each as releaseChild says. Each item names a child, one parent ("<parent queue>|
  <parent>") and the parent's result record. Idempotent: a parent already applied, or a child
  no longer blocked, changes nothing (the item is done), so a release replayed after a crash
  applies once. A failure under WAIT changes nothing and the item is not done.

  Input:
    KEYS of QueueKeys
    KEYS[1] waiting    ZSET name -> next run (ms)
    KEYS[2] defs       HASH name -> definition JSON
    KEYS[3] payloads   HASH name -> payload bytes
    KEYS[4] pending    HASH name -> parents still pending
    KEYS[5] results   HASH name -> result record (finished)
    KEYS[6] resultsat ZSET name -> kept until (ms)
    KEYS[7] fanout    SET names with children
    KEYS[8] children  base of "children:<parent>"
    KEYS[9]  outbox    ZSET "<parent>|<seq>" -> written at (ms)
    KEYS[10] outboxres HASH "<parent>|<seq>" -> result record
    KEYS[11] awaited   ZSET name -> awaited until (ms)
    KEYS[12] deps      base of "deps:<child>"
    KEYS[13] stats     HASH a batch's counts: total, succeeded, failed, closed, done_at
    KEYS[14] leases    HASH name -> lease record: a running child a cascade reaches is marked
    KEYS[15] streaks   HASH name -> consecutive failures (a child a cascade removes)
    KEYS[16] dlq       ZSET name -> dead-lettered at (ms) (a child a cascade removes)
    KEYS[17] dlqinfo   HASH name -> dead-letter context JSON (a child a cascade removes)
    KEYS[18] cron      HASH name -> "token|next fire" (a child a cascade removes)

    ARGV[1] channel (str)       where to announce: "P|S <wake-up channel>" or "", then
                                "\n<outbox channel>" (announceOutbox)
    ARGV[2] queue (str)         queue name
    ARGV[3] resultTtlMs (uint)  how long finishes are kept (results.retention_ms)
    ARGV[4] resultMax (uint)    most finishes kept per queue (results.max_entries)
    ARGV[5..] releases (items)  the finishes to apply
      child (str)               the child (of this queue)
      parent (str)              "<parent queue>|<parent>"
      record (bytes)            the parent's result record

  Output -> Released: per item 1 (done) or 0 (kept: WAIT on a failure); then outbox entries written
]]
local rcall = redis.call
--@include memberKey
--@include leaseRecord
--@include publish
--@include nowMs
--@include addWaiting
--@include keepsFinish
--@include finished
--@include finishBatch
--@include releaseChild
flowKeys(K, A.resultTtlMs, A.resultMax)
local r = {
  waiting = K.waiting, defs = K.defs, payloads = K.payloads, pending = K.pending, stats = K.stats,
  leases = K.leases, streaks = K.streaks, dlq = K.dlq, dlqinfo = K.dlqinfo, cron = K.cron,
  channel = A.channel, queue = A.queue,
}
local now = nowMs()
local out = {}
for _, item in ipairs(A.releases) do
  out[#out + 1] = releaseChild(r, item.child, item.parent, item.record, now)
end
out[#out + 1] = endFinished(r.channel, r.queue, now)
return out
