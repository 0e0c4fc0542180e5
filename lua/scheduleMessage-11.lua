--[[
  scheduleMessage: persists a message, due at deliverAtMs (absolute) or now + delayMs. With a
  key already naming a message not yet acked, returns that message and changes nothing.
  Announces the receiver on channel when the message is due before everything else scheduled.

  Input:
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

    ARGV[1] payload
    ARGV[2] deliverAtMs   absolute due time, or -1 to use delayMs
    ARGV[3] delayMs       delay from now (Redis clock)
    ARGV[4] key           idempotency key, "" for none
    ARGV[5] channel       where to announce: "P|S <wake-up channel>" or ""
    ARGV[6] wakeName      name announced on channel ("r:<receiver>")
    ARGV[7] traceparent   W3C trace context handed to the consumer, "" for none

  Output:
    { created (1/0), id, deliverAt }
]]
local rcall = redis.call
--@include publish
--@include nowMs
--@include receiverKeys
--@include messageMeta

local k = receiverKeys()
local payload, deliverAt, delayMs, key = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local channel, wakeName, traceparent = ARGV[5], ARGV[6], ARGV[7]
if key ~= '' then
  local existing = rcall('HGET', k.keys, key)
  if existing then
    local meta = messageMeta(rcall('HGET', k.meta, existing))
    if meta then return { 0, existing, meta.at } end
    rcall('HDEL', k.keys, key)
  end
end
local now = nowMs()
local at = deliverAt
if at < 0 then at = now + delayMs end
local id = string.format('%020d', rcall('INCR', k.seq))
local head = rcall('ZRANGE', k.scheduled, 0, 0, 'WITHSCORES')
rcall('ZADD', k.scheduled, at, id)
rcall('HSET', k.messages, id, payload)
local tail = traceparent ~= '' and '|' .. traceparent or ''
rcall('HSET', k.meta, id, string.format('%d', at) .. '|0|' .. key .. tail)
if key ~= '' then rcall('HSET', k.keys, key, id) end
rcall('HINCRBY', k.stats, 'scheduled', 1)
if head[2] == nil or at < tonumber(head[2]) then
  publish(channel, wakeName)
end
return { 1, id, at }
