-- claimRecord: parses a claim record "token|claimer|claimed_at|attributes JSON", or nil.
local function claimRecord(rec)
  if not rec then return nil end
  local token, claimer, at, attrs = string.match(rec, '^(%d+)|([^|]*)|(%d+)|(.*)$')
  if not token then return nil end
  return { token = token, claimer = claimer, at = tonumber(at), attrs = attrs }
end
