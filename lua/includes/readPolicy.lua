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
--@untyped
-- The positional form, for the scripts of lua/ not typed yet: readPolicy(i) reads the eight
-- fields above, in that order, from ARGV[i].
local readPolicyNamed = readPolicy
local function readPolicy(i)
  return readPolicyNamed({
    forbiddenMs = tonumber(ARGV[i]),
    throttledBaseMs = tonumber(ARGV[i + 1]),
    throttledMultiplier = tonumber(ARGV[i + 2]),
    throttledCapMs = tonumber(ARGV[i + 3]),
    maxImmediateRetries = tonumber(ARGV[i + 4]),
    jitterRatio = tonumber(ARGV[i + 5]),
    dlqTtlMs = tonumber(ARGV[i + 6]),
    dlqMaxEntries = tonumber(ARGV[i + 7]),
  })
end
