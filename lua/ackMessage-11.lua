--[[
  ackMessage: ends a delivered message for good, if token is its current delivery's. Announces
  the receiver when messages are due, since the consumer may have been at its in-flight bound;
  with always = "1" (a shard of a sharded receiver, whose consumer's bound spans the shards and
  may have messages due in another) after every ack.

  Input:
    KEYS[1]  scheduled  ZSET id -> deliver at (ms)
    KEYS[2]  inflight   ZSET id -> ack deadline (ms)
    KEYS[3]  messages   HASH id -> payload bytes
    KEYS[4]  meta       HASH id -> "deliver_at|delivery_count|key"
    KEYS[5]  keys       HASH idempotency key -> id
    KEYS[6]  tokens     HASH id -> "token|consumer|delivered_at" (in flight)
    KEYS[7]  consumers  HASH consumer id -> messages in flight
    KEYS[8]  seq        STRING counter: ids and tokens
    KEYS[9]  dlq        ZSET id -> dead-lettered at (ms)
    KEYS[10] dlqinfo    HASH id -> dead-letter context JSON
    KEYS[11] stats      HASH scheduled, delivered, redelivered, acked, dead_lettered -> counts

    ARGV[1] id
    ARGV[2] token
    ARGV[3] channel    where to announce: "P|S <wake-up channel>" or ""
    ARGV[4] wakeName   name announced on channel ("r:<receiver>")
    ARGV[5] always     "1": announce after every ack; "": only when messages are due here

  Output:
    { 0 } acked; { -1 } LEASE_LOST
]]
local rcall = redis.call
--@include publish
--@include nowMs
--@include receiverKeys
--@include messageMeta
--@include endDelivery

local k = receiverKeys()
local id, token, channel, wakeName, always = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local rec = rcall('HGET', k.tokens, id)
if not rec or string.match(rec, '^(%d+)|') ~= token then
  return { -1 }
end
endDelivery(k, id)
local meta = messageMeta(rcall('HGET', k.meta, id))
if meta and meta.key ~= '' then rcall('HDEL', k.keys, meta.key) end
rcall('HDEL', k.messages, id)
rcall('HDEL', k.meta, id)
rcall('HINCRBY', k.stats, 'acked', 1)
if always == '1' or rcall('ZRANGEBYSCORE', k.scheduled, '-inf', nowMs(), 'LIMIT', 0, 1)[1] then
  publish(channel, wakeName)
end
return { 0 }
