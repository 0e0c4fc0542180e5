-- messageMeta: parses "deliver_at|delivery_count|key[|traceparent]" of a message, or nil.
-- tail is "" or "|<traceparent>", kept as it is by every script that rewrites the record.
local function messageMeta(rec)
  if not rec then return nil end
  local at, count, key, tail = string.match(rec, '^(%d+)|(%d+)|([^|]*)(.*)$')
  if not at then return nil end
  return { at = tonumber(at), count = tonumber(count), key = key, tail = tail }
end
