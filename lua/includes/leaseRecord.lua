-- leaseRecord: the lease record, one per held agent (HASH leases, name -> record), written and
-- read here only (its Rust side is `crate::queues::records::LeaseRecord`):
--
--   "token|worker|acquired_at|timeout_ms[@key][|flags|progress]"
--
-- "@key" marks a lease of a keyed agent (acquireKeyed); it is part of head, so every rewrite of
-- the record keeps it. flags is "c" when CancelRun marked the run, "k" when a cascade did
-- (releaseChild: the run ends at the next heartbeat, and the agent with it); progress is what
-- the holder last reported and comes last, so it may hold '|'. A record without the "|flags|progress" tail
-- reads as no flags and no progress.

-- The record of a new lease. Numbers may be given as numbers or decimal strings; key nil: not
-- keyed ("" too: a keyed agent with no key holds a plain lease); flags and progress nil: no tail.
local function encodeLease(token, worker, acquiredAt, timeout, key, flags, progress)
  local rec = string.format('%d', token) .. '|' .. worker .. '|' .. string.format('%d|%d', acquiredAt, timeout)
  if key and key ~= '' then rec = rec .. '@' .. key end
  if flags or progress then rec = rec .. '|' .. (flags or '') .. '|' .. (progress or '') end
  return rec
end

-- A parsed lease's record with new flags and progress (head kept as it was).
local function rewriteLease(lease, flags, progress)
  return lease.head .. '|' .. flags .. '|' .. progress
end

-- The record's fields, or nil when the record is absent or not a lease record.
local function parseLease(rec)
  if not rec then return nil end
  local token, worker, acquiredAt, timeout, keyPart, rest =
    string.match(rec, '^(%d+)|([^|]*)|(%d+)|(%d+)(@?[^|]*)(.*)$')
  if not token then return nil end
  local flags, progress = '', ''
  if rest ~= '' then flags, progress = string.match(rest, '^|([^|]*)|(.*)$') end
  return {
    token = token, worker = worker, acquiredAt = tonumber(acquiredAt), timeout = tonumber(timeout),
    cancel = flags == 'c' or flags == 'k', cascade = flags == 'k', progress = progress or '',
    key = keyPart ~= '' and string.sub(keyPart, 2) or nil,
    head = token .. '|' .. worker .. '|' .. acquiredAt .. '|' .. timeout .. keyPart,
  }
end

-- The token alone (a decimal string), or nil: the hot paths decide on it before parsing.
local function leaseToken(rec)
  return rec and string.match(rec, '^(%d+)|')
end

-- The key of a keyed agent's lease, or nil.
local function leaseKey(rec)
  return string.match(rec, '^%d+|[^|]*|%d+|%d+@([^|]*)')
end
