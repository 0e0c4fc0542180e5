-- expireAgent: an agent whose expiry ("expire_at_ms" in its definition: Agent.expire_at or ttl)
-- passed before any run of it started finishes as expired (X) without running: its definition,
-- payload, streak and expiring entries and its parents go, it is counted in stats
-- ("expired", for health), and it finishes (finished: its children's outbox entry — a failure
-- for them —, awaiters told, its record kept where keepsFinish or finished says so).
-- Called at grant time by the acquire scripts (grantLeases, acquireKeyed) and by the sweeper
-- (expireAgents); the caller has already taken it out of waiting or pending, and called
-- flowKeys. K holds defs, payloads, streaks, stats and expiring.
local function expireAgent(K, name, def, now)
  rcall('HDEL', K.defs, name)
  rcall('HDEL', K.payloads, name)
  rcall('HDEL', K.streaks, name)
  rcall('ZREM', K.expiring, name)
  rcall('HINCRBY', K.stats, 'expired', 1)
  dropParents(name, def)
  finished(name, resultRecord('X', '', 0, now, 'expired before any run started', ''), now, keepsFinish(def))
end
