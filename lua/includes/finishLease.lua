-- finishLease: ends a verified lease of name with outcome and decides the agent's next run.
-- SUCCESS clears the streak and runs again at acquired_at + interval (never in the past), or
-- removes a one-shot agent. A failure grows the streak; at max_attempts (0 = unlimited) the
-- agent is dead-lettered, otherwise it waits for its class's backoff (failureDelay), jittered,
-- replaced by retryAfterMs when larger. An agent with no definition left is dropped.
-- Counts completed / failed / dead_lettered in k.stats. Dead letters are trimmed to the TTL
-- and size of the policy; an agent whose dead letter is trimmed away is removed.
-- A cron agent's success runs again at the fire recorded for the run (cronNext).
-- A success, and a failure that dead-letters, is recorded with the run's result where someone
-- can read it (finished, keepsFinish; the script has called flowKeys).
-- A run a cascade marked (lease flag "k": releaseChild) ends the agent whatever the outcome:
-- removed, finished as cancelled by a cascade (its children are cancelled in turn), counted as
-- cancelled; so a Complete, a timeout or an orphaned lease that comes before the heartbeat ends
-- it as the heartbeat would.
-- k: {waiting, working, defs, payloads, leases, streaks, dlq, dlqinfo, stats, cron}.
-- Returns { code, time, streak }: 0 rescheduled at time, 1 removed, 2 dead-lettered at time.
local function finishLease(k, name, lease, outcome, message, retryAfterMs, policy, now, channel, queue, result)
  rcall('ZREM', k.working, name)
  rcall('HDEL', k.leases, name)
  local def = rcall('HGET', k.defs, name)
  if not def then
    return { 1, 0, 0 }
  end
  local keep = keepsFinish(def)
  if lease.cascade then
    rcall('HDEL', k.defs, name)
    rcall('HDEL', k.payloads, name)
    rcall('HDEL', k.streaks, name)
    rcall('HDEL', k.cron, name)
    dropParents(name, def)
    rcall('HINCRBY', k.stats, 'cancelled', 1)
    finished(name, resultRecord('c', '', lease.token, now, 'cancelled: an ancestor was cancelled', result or ''), now,
      keep)
    return { 1, 0, 0 }
  end
  def = cjson.decode(def)

  if outcome == 'SUCCESS' then
    rcall('HINCRBY', k.stats, 'completed', 1)
    rcall('HDEL', k.streaks, name)
    finished(name, resultRecord('S', 'SUCCESS', lease.token, now, '', result or ''), now, keep)
    if def['cron'] then
      local nextRun = cronNext(k.cron, name, lease.token, lease.acquiredAt, now)
      addWaiting(k.waiting, name, nextRun, channel, queue)
      return { 0, nextRun, 0 }
    end
    local interval = tonumber(def['interval_ms'] or 0)
    if interval == 0 then
      if def['parents'] then rcall('UNLINK', memberKey(F.deps, name)) end
      rcall('HDEL', k.defs, name)
      rcall('HDEL', k.payloads, name)
      return { 1, 0, 0 }
    end
    local nextRun = lease.acquiredAt + interval
    if nextRun < now then nextRun = now end
    addWaiting(k.waiting, name, nextRun, channel, queue)
    return { 0, nextRun, 0 }
  end

  rcall('HINCRBY', k.stats, 'failed', 1)
  local streak = rcall('HINCRBY', k.streaks, name, 1)
  local maxAttempts = tonumber(def['max_attempts'] or 0)
  if maxAttempts > 0 and streak >= maxAttempts then
    rcall('ZADD', k.dlq, now, name)
    rcall('HSET', k.dlqinfo, name, cjson.encode({
      source = 'agent', queue = queue, name = name, outcome = outcome, message = message,
      failed_at = now, attempts = streak, worker = lease.worker,
    }))
    rcall('HINCRBY', k.stats, 'dead_lettered', 1)
    finished(name, resultRecord('D', outcome, lease.token, now, message, result or ''), now, keep)
    trimDeadLetters(k.dlq, k.dlqinfo, now, policy.dlqTtlMs, policy.dlqMaxEntries, function(gone)
      rcall('HDEL', k.defs, gone)
      rcall('HDEL', k.payloads, gone)
      rcall('HDEL', k.streaks, gone)
    end, false)
    return { 2, now, streak }
  end

  local delay = jitter(failureDelay(outcome, streak, tonumber(def['error_interval_ms']), policy), policy.jitterRatio)
  if retryAfterMs > delay then delay = retryAfterMs end
  addWaiting(k.waiting, name, now + delay, channel, queue)
  return { 0, now + delay, streak }
end
