--[[
  retryMessage: puts a dead-lettered message back, due at once, with its delivery count reset.

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
    ARGV[2] channel (str)    where to announce: "P|S <wake-up channel>" or ""
    ARGV[3] wakeName (str)   name announced on channel ("r:<receiver>")

  Output -> Int:
    1 put back; 0 not dead-lettered here
]]
local rcall = redis.call
--@include publish
--@include nowMs
--@include messageMeta

local k = K
local id, channel, wakeName = A.id, A.channel, A.wakeName
local meta = messageMeta(rcall('HGET', k.meta, id))
if rcall('ZREM', k.dlq, id) == 0 then
  return 0
end
rcall('HDEL', k.dlqinfo, id)
if not meta or rcall('HEXISTS', k.messages, id) == 0 then
  return 0
end
rcall('HSET', k.meta, id, encodeMeta(meta.at, 0, meta.key, meta.traceparent))
if meta.key ~= '' then rcall('HSET', k.keys, meta.key, id) end
rcall('ZADD', k.scheduled, nowMs(), id)
publish(channel, wakeName)
return 1
