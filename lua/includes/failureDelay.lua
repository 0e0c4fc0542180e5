-- failureDelay: the backoff before the next run after a failure of class outcome, given the
-- failure streak (already counting this failure), the agent's error interval and the policy
-- (readPolicy). A lease whose holder vanished — ORPHANED (its worker went silent, its stream
-- broke) or TIMEOUT (its deadline passed without a word) — runs again at once, whichever sweep
-- took it back: the run still counts toward max_attempts (finishLease), but no backoff. UNKNOWN
-- waits the error interval.
local function failureDelay(outcome, streak, errorIntervalMs, p)
  if outcome == 'PERMANENT_FORBIDDEN' then
    return p.forbiddenMs
  elseif outcome == 'THROTTLED' then
    local d = p.throttledBaseMs * (p.throttledMultiplier ^ (streak - 1))
    if d > p.throttledCapMs then d = p.throttledCapMs end
    return math.floor(d)
  elseif outcome == 'TRANSIENT' or outcome == 'SERVER_ERROR' then
    if streak <= p.maxImmediateRetries then return 0 end
    return errorIntervalMs
  elseif outcome == 'ORPHANED' or outcome == 'TIMEOUT' then
    return 0
  end
  -- UNKNOWN
  return errorIntervalMs
end
