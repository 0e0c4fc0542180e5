--[[
  deliverMessages: one round of delivery to one consumer. First, messages whose ack deadline
  passed leave flight: due again at once, or dead-lettered once delivered maxDeliveries times.
  Then up to (maxInFlight - what the consumer already holds, at most limit) due messages go in
  flight at this consumer, each with a new token and a higher delivery count.

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
    KEYS[12] limits     HASH paused ("1": AdminService.Pause): nothing is delivered, expired
                        deliveries still come back; Resume announces the receiver

    ARGV[1] consumer (str)        consumer id
    ARGV[2] maxInFlight (uint)     the consumer's bound on unacked messages
    ARGV[3] ackTimeoutMs (uint)    how long a delivery waits for its Ack
    ARGV[4] maxDeliveries (uint)   deliveries before a message is dead-lettered
    ARGV[5] limit (uint)           most messages to move in one call
    ARGV[6] receiver (str)        receiver name (dead-letter context)
    ARGV[7] dlqTtlMs (uint)        dead-letter TTL (0: none)
    ARGV[8] dlqMax (uint)          dead-letter size bound (0: none)

  Output -> Delivered:
    { now, nextDue (or -1), redelivered, deadLettered, (id, payload, "deliverAt|count|token[|traceparent]")* }
    nextDue is the earliest of the next due message (unless the consumer is at its bound) and
    the next ack deadline.
]]
local rcall = redis.call
--@include nowMs
--@include messageMeta
--@include endDelivery
--@include trimDeadLetters

local k = K
local consumer, maxInFlight, ackTimeoutMs = A.consumer, A.maxInFlight, A.ackTimeoutMs
local maxDeliveries, limit, receiver = A.maxDeliveries, A.limit, A.receiver
local now = nowMs()
local redelivered, deadLettered = 0, 0

for _, id in ipairs(rcall('ZRANGEBYSCORE', k.inflight, '-inf', now, 'LIMIT', 0, limit)) do
  local rec = endDelivery(k, id)
  local meta = messageMeta(rcall('HGET', k.meta, id))
  if meta and meta.count >= maxDeliveries then
    rcall('ZADD', k.dlq, now, id)
    rcall('HSET', k.dlqinfo, id, cjson.encode({
      source = 'receiver', receiver = receiver, id = id, error_class = 'MAX_DELIVERIES',
      message = 'not acked after ' .. meta.count .. ' deliveries', failed_at = now, attempts = meta.count,
      consumer = rec and string.match(rec, '^%d+|([^|]*)|') or '', deliver_at = meta.at,
    }))
    if meta.key ~= '' then rcall('HDEL', k.keys, meta.key) end
    rcall('HINCRBY', k.stats, 'dead_lettered', 1)
    deadLettered = deadLettered + 1
    trimDeadLetters(k.dlq, k.dlqinfo, now, A.dlqTtlMs, A.dlqMax, function(gone)
      rcall('HDEL', k.messages, gone)
      rcall('HDEL', k.meta, gone)
    end, false)
  elseif meta then
    rcall('ZADD', k.scheduled, now, id)
    redelivered = redelivered + 1
  end
end

local out = { now, -1, redelivered, deadLettered }
if rcall('HGET', K.limits, 'paused') == '1' then
  -- Paused: wait for Resume's wake-up, or for the next ack deadline.
  local f = rcall('ZRANGE', k.inflight, 0, 0, 'WITHSCORES')
  if f[2] then out[2] = tonumber(f[2]) end
  return out
end
local room = maxInFlight - tonumber(rcall('HGET', k.consumers, consumer) or '0')
if room > limit then room = limit end
-- The page of due messages goes in flight with one command per key: one ZREM, one HMGET each
-- of metadata and payloads, one INCRBY numbering the page's tokens in order, one HSET each of
-- metadata and tokens, one ZADD of ack deadlines.
local ids = room > 0 and rcall('ZRANGEBYSCORE', k.scheduled, '-inf', now, 'LIMIT', 0, room) or {}
if #ids > 0 then
  rcall('ZREM', k.scheduled, unpack(ids))
  local metas = rcall('HMGET', k.meta, unpack(ids))
  local payloads = rcall('HMGET', k.messages, unpack(ids))
  local firstToken = rcall('INCRBY', k.seq, #ids) - #ids + 1
  local deadline = now + ackTimeoutMs
  local recordTail = '|' .. consumer .. '|' .. string.format('%d', now) .. '|'
  -- Counters instead of #.
  local metaSet, tokenSet, flight, m, f, o = {}, {}, {}, 0, 0, #out
  for i, id in ipairs(ids) do
    local meta, payload = messageMeta(metas[i]), payloads[i]
    if meta and payload then
      local token = string.format('%d', firstToken + i - 1)
      local at, count, key, tp = meta.at, meta.count + 1, meta.key, meta.traceparent
      metaSet[m + 1], metaSet[m + 2] = id, encodeMeta(at, count, key, tp)
      -- The idempotency key rides in the token record, so an ack need not read the metadata.
      tokenSet[m + 1], tokenSet[m + 2] = id, token .. recordTail .. key
      m = m + 2
      flight[f + 1], flight[f + 2] = deadline, id
      f = f + 2
      local delivery = string.format('%d|%d|', at, count) .. token
      if tp ~= '' then delivery = delivery .. '|' .. tp end
      out[o + 1], out[o + 2], out[o + 3] = id, payload, delivery
      o = o + 3
    end
  end
  local got = f / 2
  if got > 0 then
    rcall('HSET', k.meta, unpack(metaSet))
    rcall('ZADD', k.inflight, unpack(flight))
    rcall('HSET', k.tokens, unpack(tokenSet))
    rcall('HINCRBY', k.consumers, consumer, got)
    rcall('HINCRBY', k.stats, 'delivered', got)
  end
end
-- A consumer at its bound waits for an Ack (announced) or an ack deadline, not for due
-- messages it could not take anyway.
local nextDue = -1
local full = tonumber(rcall('HGET', k.consumers, consumer) or '0') >= maxInFlight
local s = rcall('ZRANGE', k.scheduled, 0, 0, 'WITHSCORES')
if s[2] and not full then nextDue = tonumber(s[2]) end
local f = rcall('ZRANGE', k.inflight, 0, 0, 'WITHSCORES')
if f[2] and (nextDue < 0 or tonumber(f[2]) < nextDue) then nextDue = tonumber(f[2]) end
out[2] = nextDue
return out
