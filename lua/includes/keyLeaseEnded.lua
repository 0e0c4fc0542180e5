-- keyLeaseEnded: n leases (default 1) of a keyed agent ended (key: from the lease record, "@key";
-- nil for an agent without one): its key holds n leases fewer ("held|<key>" in the limits hash,
-- counted up by acquireAgents), so the key may be granted again. A count that reaches 0 is
-- deleted (an absent count is 0), so a drained queue keeps no per-key counter and nothing has
-- to sweep them; a count below 0 (left by a fleet of mixed versions) is dropped too.
local function keyLeaseEnded(limitsKey, key, n)
  if key and rcall('HINCRBY', limitsKey, 'held|' .. key, -(n or 1)) <= 0 then rcall('HDEL', limitsKey, 'held|' .. key) end
end
