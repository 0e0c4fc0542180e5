-- readTerm: the election's current term record, or nil when there has never been one.
-- Fields: token (string), candidate, expiresAt, ttl (numbers), active (boolean).
local function readTerm(termKey)
  local t = rcall('HMGET', termKey, 'token', 'candidate', 'expires_at', 'ttl', 'active')
  if not t[1] then return nil end
  return { token = t[1], candidate = t[2], expiresAt = tonumber(t[3]), ttl = tonumber(t[4]), active = t[5] == '1' }
end
