--[[
  cancelMessage: removes a scheduled or in-flight message.

  Input:
    KEYS of ReceiverKeys
    KEYS[1]  scheduled  ZSET id -> deliver at (ms)
    KEYS[2]  inflight   ZSET id -> ack deadline (ms)
    KEYS[3]  messages   HASH id -> payload bytes
    KEYS[4]  meta       HASH id -> "deliver_at|delivery_count|key[|traceparent]"
    KEYS[5]  keys       HASH idempotency key -> id
    KEYS[6]  tokens     HASH id -> "token|consumer|delivered_at|key" (in flight)
    KEYS[7]  consumers  HASH consumer id -> messages in flight
    KEYS[8]  seq        STRING counter: ids and tokens
    KEYS[9]  dlq        ZSET id -> dead-lettered at (ms)
    KEYS[10] dlqinfo    HASH id -> dead-letter context JSON
    KEYS[11] stats      HASH scheduled, delivered, redelivered, acked, dead_lettered -> counts

    ARGV[1] id (str)

  Output -> Int:
    1 removed; 0 no such message (acked, dead-lettered or unknown)
]]
local rcall = redis.call
--@include messageMeta
--@include endDelivery

local k = K
local id = A.id
local scheduled = rcall('ZREM', k.scheduled, id) == 1
local flying = rcall('ZSCORE', k.inflight, id)
if not scheduled and not flying then
  return 0
end
if flying then endDelivery(k, id) end
local meta = messageMeta(rcall('HGET', k.meta, id))
if meta and meta.key ~= '' then rcall('HDEL', k.keys, meta.key) end
rcall('HDEL', k.messages, id)
rcall('HDEL', k.meta, id)
return 1
