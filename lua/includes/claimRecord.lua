-- claimRecord: the claim record of a held resource (HASH claims, id -> record), written and read
-- by the scripts only (Baton answers a claim from the script's reply, never from the record):
--
--   "token|claimer|claimed_at|attributes JSON"
--
-- The attributes come last, so they may hold '|'.

-- The record of a new claim; token and at may be numbers or decimal strings.
local function encodeClaim(token, claimer, at, attrs)
  return string.format('%d', token) .. '|' .. claimer .. '|' .. string.format('%d', at) .. '|' .. attrs
end

-- The record's fields, or nil when it is absent or not a claim record.
local function claimRecord(rec)
  if not rec then return nil end
  local token, claimer, at, attrs = string.match(rec, '^(%d+)|([^|]*)|(%d+)|(.*)$')
  if not token then return nil end
  return { token = token, claimer = claimer, at = tonumber(at), attrs = attrs }
end
