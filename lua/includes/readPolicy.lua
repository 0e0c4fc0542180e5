-- readPolicy: the agent policy, from a typed script's ARGV: A.forbiddenMs, A.throttledBaseMs,
-- A.throttledMultiplier, A.throttledCapMs, A.maxImmediateRetries, A.jitterRatio, A.dlqTtlMs,
-- A.dlqMaxEntries (its header declares the eight, typed as numbers).
local function readPolicy(A)
  return {
    forbiddenMs = A.forbiddenMs,
    throttledBaseMs = A.throttledBaseMs,
    throttledMultiplier = A.throttledMultiplier,
    throttledCapMs = A.throttledCapMs,
    maxImmediateRetries = A.maxImmediateRetries,
    jitterRatio = A.jitterRatio,
    dlqTtlMs = A.dlqTtlMs,
    dlqMaxEntries = A.dlqMaxEntries,
  }
end
