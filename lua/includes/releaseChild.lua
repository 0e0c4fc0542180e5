-- releaseChild: applies one parent's finish to a blocked child of this queue (the child's slot).
-- Idempotent: a parent already applied, or a child no longer blocked, changes nothing (done), so
-- a release replayed after a crash applies once.
--
-- A success, or any finish under RUN_ANYWAY, is recorded in the child's parents and counted
-- down; the last one makes the child due at once. A failure under CANCEL removes the child, which
-- finishes as cancelled (finished: its own children are released in turn). A failure under WAIT
-- changes nothing and the release is not done: the child stays attached to the parent for a
-- retry. A batch's sentinel (its definition says "batch") counts its members' finishes in stats
-- and, instead of becoming due, finishes when its last pending one is applied (finishBatch).
--
-- r: {waiting, defs, payloads, pending, stats, channel, queue}; the script has called
-- flowKeys. parent is "<parent queue>|<parent>". Returns 1 (done) or 0 (kept).
local function releaseChild(r, child, parent, record, now)
  local depsKey = memberKey(F.deps, child)
  local state = rcall('HEXISTS', r.pending, child) == 1 and rcall('HGET', depsKey, parent)
  if not state or string.sub(state, 1, 1) ~= 'p' then return 1 end
  local policy, finish = string.sub(state, 2, 2), resultFinish(record)
  if finish == 'S' or policy == 'A' then
    rcall('HSET', depsKey, parent, record)
    local batch = string.find(rcall('HGET', r.defs, child) or '', '"batch":1', 1, true)
    if batch then rcall('HINCRBY', r.stats, finish == 'S' and 'succeeded' or 'failed', 1) end
    if rcall('HINCRBY', r.pending, child, -1) <= 0 then
      if batch then
        finishBatch(r, child, now)
      else
        rcall('HDEL', r.pending, child)
        addWaiting(r.waiting, child, now, r.channel, r.queue)
      end
    end
    return 1
  elseif policy == 'C' then
    local def = rcall('HGET', r.defs, child)
    rcall('HDEL', r.pending, child)
    rcall('HDEL', r.defs, child)
    rcall('HDEL', r.payloads, child)
    rcall('UNLINK', depsKey)
    finished(child, resultRecord('C', '', 0, now, 'parent ' .. parent .. ' failed', ''), now, keepsFinish(def))
    return 1
  end
  return 0
end
