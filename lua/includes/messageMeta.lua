-- messageMeta: the metadata of a scheduled message (HASH meta, id -> record), written and read by
-- the scripts; its Rust side, which reads it for ListMessages, is
-- `crate::receivers::records::MessageMeta`:
--
--   "deliver_at|delivery_count|key[|traceparent]"
--
-- key is "" for none (an idempotency key holds no '|'); "|traceparent" is left out when there
-- is none, and the traceparent comes last.

-- The record; at and count may be numbers or decimal strings, traceparent "" for none.
local function encodeMeta(at, count, key, traceparent)
  local rec = string.format('%d|%d|', at, count) .. key
  if traceparent ~= '' then rec = rec .. '|' .. traceparent end
  return rec
end

-- The record's fields, or nil when it is absent or not a metadata record.
local function messageMeta(rec)
  if not rec then return nil end
  local at, count, key, tail = string.match(rec, '^(%d+)|(%d+)|([^|]*)(.*)$')
  if not at then return nil end
  return { at = tonumber(at), count = tonumber(count), key = key, traceparent = string.sub(tail, 2) }
end
