--[[
  releaseOutbox: releases a page of this queue's outbox in this slot as far as it can. The page
  (outboxPage) is the oldest entries written at or before `before`, up to `limit` children in
  all across entries. Children of this same queue are released here (releaseChild) and leave
  their entry's set at once; a kept one (WAIT on a failure) goes back to the parent's live set
  of children, for its next finish; an entry whose set is empty is dropped. Children of other
  queues stay in their entries and are answered, for Baton to release in their own slots
  (releaseChildren) and then drop from the entries (advanceOutbox). Replaying it changes
  nothing more: a child released leaves the entry in the same script.

  Input:
    KEYS of QueueKeys
    KEYS[1] waiting    ZSET name -> next run (ms)
    KEYS[2] defs       HASH name -> definition JSON
    KEYS[3] payloads   HASH name -> payload bytes
    KEYS[4] pending    HASH name -> parents still pending
    KEYS[5] results   HASH name -> result record (finished)
    KEYS[6] resultsat ZSET name -> kept until (ms)
    KEYS[7] fanout    SET names with children
    KEYS[8] children  base of "children:<parent>" and of "children:<parent>|<seq>"
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
    ARGV[5] before (str)        only entries written at or before this (ms); "+inf" for any
    ARGV[6] limit (uint)        most children (and most entries) in the page

  Output -> OutboxRelease: { children released here, outbox entries written (children of agents cancelled
          here), entries written at or before `before` that remain, then per entry with
          children of other queues: member, record, n, then those n children
          ("<child queue>|<child>") }
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
--@include outboxPage
--@include releasePage
flowKeys(K, A.resultTtlMs, A.resultMax)
local r = {
  waiting = K.waiting, defs = K.defs, payloads = K.payloads, pending = K.pending, stats = K.stats,
  leases = K.leases, streaks = K.streaks, dlq = K.dlq, dlqinfo = K.dlqinfo, cron = K.cron,
  channel = A.channel, queue = A.queue,
}
local before = A.before
local now = nowMs()
local here, rest = releasePage(r, before, A.limit, now)
local out = { 0, 0, 0 }
for _, v in ipairs(rest) do out[#out + 1] = v end
out[1], out[2] = here, endFinished(r.channel, r.queue, now)
out[3] = rcall('ZCOUNT', F.outbox, '-inf', before)
return out
