-- keyLeaseEnded: a lease of a keyed agent ended (key: from its record, "@key"; nil for an
-- agent without one): its key holds one lease fewer ("held|<key>" in the limits hash, counted up
-- by acquireAgents), so the key may be granted again.
local function keyLeaseEnded(limitsKey, key)
  if key and rcall('HINCRBY', limitsKey, 'held|' .. key, -1) <= 0 then rcall('HDEL', limitsKey, 'held|' .. key) end
end
