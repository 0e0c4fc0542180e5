-- readPolicy: the agent policy from eight consecutive ARGV entries starting at i:
-- forbiddenMs, throttledBaseMs, throttledMultiplier, throttledCapMs, maxImmediateRetries,
-- jitterRatio, dlqTtlMs, dlqMaxEntries.
local function readPolicy(i)
  return {
    forbiddenMs = tonumber(ARGV[i]),
    throttledBaseMs = tonumber(ARGV[i + 1]),
    throttledMultiplier = tonumber(ARGV[i + 2]),
    throttledCapMs = tonumber(ARGV[i + 3]),
    maxImmediateRetries = tonumber(ARGV[i + 4]),
    jitterRatio = tonumber(ARGV[i + 5]),
    dlqTtlMs = tonumber(ARGV[i + 6]),
    dlqMaxEntries = tonumber(ARGV[i + 7]),
  }
end
