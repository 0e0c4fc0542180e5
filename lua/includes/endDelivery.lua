-- endDelivery: takes a message out of flight (its consumer's count goes down by one).
local function endDelivery(k, id)
  local rec = rcall('HGET', k.tokens, id)
  rcall('ZREM', k.inflight, id)
  rcall('HDEL', k.tokens, id)
  if rec then
    local consumer = string.match(rec, '^%d+|([^|]*)|')
    if consumer and rcall('HINCRBY', k.consumers, consumer, -1) <= 0 then
      rcall('HDEL', k.consumers, consumer)
    end
  end
  return rec
end
