-- leaseRecord: the lease record, one per held agent (HASH leases, name -> record), written and
-- read here only (its Rust side is `crate::queues::records::LeaseRecord`):
--
--   "token|worker|acquired_at|timeout_ms[@key][!group][|flags|progress]"
--
-- "@key" marks a lease of a keyed agent (acquireKeyed); "!group" a lease granted under a shared
-- concurrency group (the queue's `group` when it was granted: every script that ends it gives
-- that group's place back, whatever the queue's group is by then). Both are part of head, so
-- every rewrite of the record keeps them. Keys and group names are names ([A-Za-z0-9._-]).
-- flags holds "c" when CancelRun marked the run, or "k" when a cascade did (releaseChild: the
-- run ends at its next heartbeat or Complete, and the agent with it), and "w<n>" when a
-- WatchAgent stream watches the agent (watchEvent: n numbers the lease's updates, 0 at its
-- grant); progress is what the holder last reported and comes last, so it may hold '|'. A
-- record without the "|flags|progress" tail
-- reads as no flags and no progress.

-- A number as decimal digits; a string (already digits) as it is, with no conversion.
local function decimal(n)
  if type(n) == 'string' then return n end
  return string.format('%d', n)
end

-- The record of a new lease. Numbers may be given as numbers or decimal strings; key nil: not
-- keyed ("" too: a keyed agent with no key holds a plain lease); group nil or "": no group; flags
-- and progress nil: no tail.
local function encodeLease(token, worker, acquiredAt, timeout, key, flags, progress, group)
  local rec = decimal(token) .. '|' .. worker .. '|' .. decimal(acquiredAt) .. '|' .. decimal(timeout)
  if key and key ~= '' then rec = rec .. '@' .. key end
  if group and group ~= '' then rec = rec .. '!' .. group end
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
  local token, worker, acquiredAt, timeout, keyPart, groupPart, rest =
    string.match(rec, '^(%d+)|([^|]*)|(%d+)|(%d+)(@?[^|!]*)(!?[^|]*)(.*)$')
  if not token then return nil end
  local flags, progress = '', ''
  if rest ~= '' then flags, progress = string.match(rest, '^|([^|]*)|(.*)$') end
  flags = flags or ''
  return {
    token = token, worker = worker, acquiredAt = tonumber(acquiredAt), timeout = tonumber(timeout),
    cancel = string.find(flags, '[ck]') ~= nil, cascade = string.find(flags, 'k', 1, true) ~= nil,
    watch = tonumber(string.match(flags, 'w(%d+)')), progress = progress or '',
    key = keyPart ~= '' and string.sub(keyPart, 2) or nil,
    group = groupPart ~= '' and string.sub(groupPart, 2) or nil,
    head = token .. '|' .. worker .. '|' .. acquiredAt .. '|' .. timeout .. keyPart .. groupPart,
  }
end

-- A lease's flags: cancel (CancelRun marked the run), watch (nil: not watched; else the number
-- of its last update), cascade (a cascade marked the run: "k" in place of "c").
local function leaseFlags(cancel, watch, cascade)
  local mark = cascade and 'k' or (cancel and 'c' or '')
  return mark .. (watch and string.format('w%d', watch) or '')
end

-- The token alone (a decimal string), or nil: the hot paths decide on it before parsing.
local function leaseToken(rec)
  return rec and string.match(rec, '^(%d+)|')
end

-- The key of a keyed agent's lease, or nil.
local function leaseKey(rec)
  if not string.find(rec, '@', 1, true) then return nil end -- a plain search: most have no key
  return string.match(rec, '^%d+|[^|]*|%d+|%d+@([^|!]*)')
end

-- The group a lease was granted under, or nil.
local function leaseGroup(rec)
  if not string.find(rec, '!', 1, true) then return nil end -- a plain search: most have no group
  return string.match(rec, '^%d+|[^|]*|%d+|%d+@?[^|!]*!([^|]*)')
end
