-- waitRecord: an agent waiting for an event or a time (HASH waits, name -> record; ZSET waitat,
-- name -> until, for a wait with a time), written and read here only (its Rust side is
-- `crate::queues::records::WaitRecord`):
--
--   "<event>|<until ms>|<since ms>"
--
-- event is "" for a wait for a time only, until 0 for a wait without one; an event name is
-- [A-Za-z0-9._-], so it holds no '|'.

local function encodeWait(event, untilMs, since)
  return event .. '|' .. string.format('%d', untilMs) .. '|' .. string.format('%d', since)
end

-- { event, untilMs, since }, or nil when rec is not a wait record.
local function parseWait(rec)
  local event, untilMs, since = string.match(rec or '', '^([^|]*)|(%d+)|(%d+)$')
  if not event then return nil end
  return { event = event, untilMs = tonumber(untilMs), since = tonumber(since) }
end
