--[[
  releaseChildren: applies parents' finishes to blocked children of this queue (the child's
  slot). Each item names a child, one parent ("<parent queue>|<parent>") and the parent's result
  record. Idempotent: a parent already applied, or a child no longer blocked, changes nothing
  (the item is done), so a release replayed after a crash applies once.

  A success, or any finish under RUN_ANYWAY, is recorded in the child's parents and counted
  down; the last one makes the child due at once. A failure under CANCEL removes the child, which
  finishes as cancelled (finished: its own children are released in turn). A failure under WAIT
  changes nothing and the item is not done: the child stays attached to the parent for a retry.
  A batch's sentinel (its definition says "batch") counts its members' finishes in stats and,
  instead of becoming due, finishes when its last pending one is applied (finishBatch).

  Input:
    KEYS[1] waiting    ZSET name -> next run (ms)
    KEYS[2] defs       HASH name -> definition JSON
    KEYS[3] payloads   HASH name -> payload bytes
    KEYS[4] index      ZSET name -> 0
    KEYS[5] pending    HASH name -> parents still pending
    KEYS[6] results   HASH name -> result record (finished)
    KEYS[7] resultsat ZSET name -> kept until (ms)
    KEYS[8] fanout    SET names with children
    KEYS[9] children  base of "children:<parent>"
    KEYS[10] outbox    ZSET "<parent>|<seq>" -> written at (ms)
    KEYS[11] outboxres HASH "<parent>|<seq>" -> result record
    KEYS[12] awaited   ZSET name -> awaited until (ms)
    KEYS[13] deps      base of "deps:<child>"
    KEYS[14] stats     HASH a batch's counts: total, succeeded, failed, closed, done_at

    ARGV[1] channel    where to announce: "P|S <wake-up channel>" or ""
    ARGV[2] queue      queue name
    ARGV[3] resultTtlMs how long finishes are kept (results.retention_ms)
    ARGV[4] resultMax  most finishes kept per queue (results.max_entries)
    ARGV[5..] triples  child, "<parent queue>|<parent>", result record

  Output: per triple 1 (done) or 0 (kept: WAIT on a failure); then outbox entries written
]]
local rcall = redis.call
--@include memberKey
--@include publish
--@include nowMs
--@include addWaiting
--@include finished
--@include finishBatch
local waitingKey, defsKey, payloadsKey, indexKey, pendingKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
flowKeys(6, ARGV[3], ARGV[4])
local b = { defs = defsKey, pending = pendingKey, stats = KEYS[14] }
local channel, queue = ARGV[1], ARGV[2]
local now = nowMs()
local out = {}
for i = 5, #ARGV, 3 do
  local child, parent, record = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local depsKey = memberKey(F.deps, child)
  local state = rcall('HEXISTS', pendingKey, child) == 1 and rcall('HGET', depsKey, parent)
  local done = 1
  if state and string.sub(state, 1, 1) == 'p' then
    local policy, finish = string.sub(state, 2, 2), string.sub(record, 1, 1)
    if finish == 'S' or policy == 'A' then
      rcall('HSET', depsKey, parent, record)
      local batch = string.find(rcall('HGET', defsKey, child) or '', '"batch":1', 1, true)
      if batch then rcall('HINCRBY', b.stats, finish == 'S' and 'succeeded' or 'failed', 1) end
      if rcall('HINCRBY', pendingKey, child, -1) <= 0 then
        if batch then
          finishBatch(b, child, now)
        else
          rcall('HDEL', pendingKey, child)
          addWaiting(waitingKey, child, now, channel, queue)
        end
      end
    elseif policy == 'C' then
      rcall('HDEL', pendingKey, child)
      rcall('HDEL', defsKey, child)
      rcall('HDEL', payloadsKey, child)
      rcall('ZREM', indexKey, child)
      rcall('UNLINK', depsKey)
      finished(child, resultRecord('C', '', 0, now, 'parent ' .. parent .. ' failed', ''), now)
    else
      done = 0
    end
  end
  out[#out + 1] = done
end
out[#out + 1] = endFinished(channel, queue, now)
return out
