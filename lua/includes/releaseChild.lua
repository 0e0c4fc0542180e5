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
-- A finish that cascades (c, u: finished) cancels the child whatever its policy (cascadeChild).
--
-- r: {waiting, defs, payloads, pending, stats, leases, streaks, dlq, dlqinfo, cron, channel,
-- queue}; the script has called flowKeys. parent is "<parent queue>|<parent>". Returns 1 (done)
-- or 0 (kept). Needs leaseRecord.

-- The message of a descendant a cascade cancels: the ancestor's, passed down unchanged (the
-- parent's own when the parent is where the cascade began).
local function descendantMessage(record, parent)
  local rec = parseResultRecord(record)
  local prefix = 'cancelled: ancestor '
  if rec and string.sub(rec.message, 1, #prefix) == prefix then return rec.message end
  return cascadeMessage(parent)
end

-- A cascade reaches a child of parent's: one still blocked on it, or one it released already
-- (deps:<child> holds its finish) and not finished since. A running child's lease is marked "k"
-- (heartbeatLeases ends the run and removes the agent); any other is removed now, without
-- running, and finishes cancelled with a record that cascades in turn (its children's outbox
-- entry). A child that is not the parent's (a new agent of that name) is left alone. Done.
local function cascadeChild(r, child, parent, record, now)
  local depsKey = memberKey(F.deps, child)
  local state = rcall('HGET', depsKey, parent)
  if not state then return 1 end
  local def = rcall('HGET', r.defs, child)
  if not def then return 1 end
  if string.sub(state, 1, 1) ~= 'p' or rcall('HEXISTS', r.pending, child) == 0 then
    local lease = parseLease(rcall('HGET', r.leases, child))
    if lease then
      if not lease.cascade then rcall('HSET', r.leases, child, rewriteLease(lease, leaseFlags(true, lease.watch, true), lease.progress)) end
      return 1
    end
  end
  rcall('HDEL', r.pending, child)
  rcall('ZREM', r.waiting, child)
  rcall('ZREM', r.dlq, child)
  rcall('HDEL', r.dlqinfo, child)
  rcall('HDEL', r.defs, child)
  rcall('HDEL', r.payloads, child)
  rcall('HDEL', r.streaks, child)
  rcall('HDEL', r.cron, child)
  rcall('UNLINK', depsKey)
  finished(child, resultRecord('c', '', 0, now, descendantMessage(record, parent), ''), now, keepsFinish(def))
  return 1
end

local function releaseChild(r, child, parent, record, now)
  if cascades(record) then return cascadeChild(r, child, parent, record, now) end
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
        if F.due then F.due[#F.due + 1] = child end
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
