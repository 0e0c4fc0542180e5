-- messageMeta: parses "deliver_at|delivery_count|key" of a message, or nil.
local function messageMeta(rec)
  if not rec then return nil end
  local at, count, key = string.match(rec, '^(%d+)|(%d+)|(.*)$')
  if not at then return nil end
  return { at = tonumber(at), count = tonumber(count), key = key }
end
