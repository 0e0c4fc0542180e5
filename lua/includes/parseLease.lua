-- parseLease: splits a lease record "token|worker|acquired_at|timeout_ms[@key]" (optionally
-- followed by "|flags|progress": flags "c" when CancelRun marked the run, progress as the holder
-- last reported it) into its fields. "@key" marks a lease of a keyed agent (acquireAgents); it
-- is part of head, so every rewrite of the record keeps it. Returns nil when the record is absent.
local function parseLease(rec)
  if not rec then return nil end
  local token, worker, acquiredAt, timeout, keyPart, rest =
    string.match(rec, '^(%d+)|([^|]*)|(%d+)|(%d+)(@?[^|]*)(.*)$')
  if not token then return nil end
  local flags, progress = '', ''
  if rest ~= '' then flags, progress = string.match(rest, '^|([^|]*)|(.*)$') end
  return {
    token = token, worker = worker, acquiredAt = tonumber(acquiredAt), timeout = tonumber(timeout),
    cancel = flags == 'c', progress = progress or '',
    key = keyPart ~= '' and string.sub(keyPart, 2) or nil,
    head = token .. '|' .. worker .. '|' .. acquiredAt .. '|' .. timeout .. keyPart,
  }
end
