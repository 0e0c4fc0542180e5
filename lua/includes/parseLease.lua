-- parseLease: splits a lease record "token|worker|acquired_at|timeout_ms" into its fields.
-- Returns nil when the record is absent.
local function parseLease(rec)
  if not rec then return nil end
  local token, worker, acquiredAt, timeout = string.match(rec, '^(%d+)|([^|]*)|(%d+)|(%d+)$')
  if not token then return nil end
  return { token = token, worker = worker, acquiredAt = tonumber(acquiredAt), timeout = tonumber(timeout) }
end
