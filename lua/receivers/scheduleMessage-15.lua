--[[
  scheduleMessage: persists a message, due at deliverAtMs (absolute) or now + delayMs. With a
  key already naming a message not yet acked, returns that message and changes nothing.
  Announces the receiver on channel when the message is due before everything else scheduled.
  With a request field whose answer is remembered (a retry of a Schedule already applied),
  returns that answer and changes nothing, even after the message was acked.

  A key's window: a message created with windowMs > 0 holds its key in dedup until now +
  windowMs, whatever becomes of the message (delivered, acked, cancelled, dead-lettered: no
  other script touches dedup). A keyed call finding the key held there (with or without a
  window of its own) returns that message and changes nothing; this is checked before the
  message's own hold (keys). Each call that opens a window drops at most two lapsed ones (lapsed
  windows go faster than new ones come), and both dedup keys expire with the longest window
  taken, so a receiver that opens no more windows keeps none.

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
    KEYS[12] requests   ZSET request field -> remembered at (ms)
    KEYS[13] answers    HASH request field -> first answer JSON
    KEYS[14] dedup      HASH idempotency key -> "<id>|<deliver at ms>|<held until ms>"
    KEYS[15] dedupat    ZSET idempotency key -> held until (ms)

    ARGV[1] payload (bytes)
    ARGV[2] deliverAtMs (int)   absolute due time, or -1 to use delayMs
    ARGV[3] delayMs (uint)       delay from now (Redis clock)
    ARGV[4] key (str)           idempotency key, "" for none
    ARGV[5] channel (str)       where to announce: "P|S <wake-up channel>" or ""
    ARGV[6] wakeName (str)      name announced on channel ("r:<receiver>")
    ARGV[7] traceparent (str)   W3C trace context handed to the consumer, "" for none
    ARGV[8] request (str)       request field "schedule|<request id>", or "" for none
    ARGV[9] retentionMs (uint)   how long answers are remembered (at least)
    ARGV[10] maxEntries (uint)   most answers remembered per receiver
    ARGV[11] windowMs (uint)     how long key holds from now whatever becomes of the message; 0: only
                          while the message exists (ignored without a key)

  Output -> Scheduled:
    { created (1/0), id, deliverAt, heldUntil (ms; 0 when the key has no open window) }
    (a retry's: the first call's, which has no heldUntil when remembered before windows)
]]
local rcall = redis.call
--@include publish
--@include nowMs
--@include messageMeta
--@include recall
--@include remember

local k = K
local requestsKey, answersKey, dedupKey, dedupatKey = K.requests, K.answers, K.dedup, K.dedupat
local payload, deliverAt, delayMs, key = A.payload, A.deliverAtMs, A.delayMs, A.key
local channel, wakeName, traceparent, request = A.channel, A.wakeName, A.traceparent, A.request
local retentionMs, maxEntries, windowMs = A.retentionMs, A.maxEntries, A.windowMs
local again = recall(answersKey, request)
if again then return again end
local now = nowMs()
if key ~= '' then
  local held = rcall('HGET', dedupKey, key)
  if held then
    local id, at, untl = string.match(held, '^(.*)|(%d+)|(%d+)$')
    if id and tonumber(untl) > now then
      -- The message's current due time while it exists (a dead letter retried moved it).
      local meta = messageMeta(rcall('HGET', k.meta, id))
      local answer = { 0, id, meta and meta.at or tonumber(at), tonumber(untl) }
      remember(requestsKey, answersKey, request, answer, now, retentionMs, maxEntries)
      return answer
    end
  end
  local existing = rcall('HGET', k.keys, key)
  if existing then
    local meta = messageMeta(rcall('HGET', k.meta, existing))
    if meta then
      remember(requestsKey, answersKey, request, { 0, existing, meta.at, 0 }, now, retentionMs, maxEntries)
      return { 0, existing, meta.at, 0 }
    end
    rcall('HDEL', k.keys, key)
  end
end
local at = deliverAt
if at < 0 then at = now + delayMs end
local id = string.format('%020d', rcall('INCR', k.seq))
local head = rcall('ZRANGE', k.scheduled, 0, 0, 'WITHSCORES')
rcall('ZADD', k.scheduled, at, id)
rcall('HSET', k.messages, id, payload)
rcall('HSET', k.meta, id, encodeMeta(at, 0, key, traceparent))
if key ~= '' then rcall('HSET', k.keys, key, id) end
local heldUntil = 0
if key ~= '' and windowMs > 0 then
  heldUntil = now + windowMs
  local untl = string.format('%d', heldUntil)
  rcall('HSET', dedupKey, key, id .. '|' .. string.format('%d', at) .. '|' .. untl)
  rcall('ZADD', dedupatKey, untl, key)
  local lapsed = rcall('ZRANGEBYSCORE', dedupatKey, '-inf', string.format('%d', now), 'LIMIT', 0, 2)
  if #lapsed > 0 then
    rcall('ZREM', dedupatKey, unpack(lapsed))
    rcall('HDEL', dedupKey, unpack(lapsed))
  end
  -- Both keys expire when the longest open window lapses: at dedupat's highest score, set
  -- absolutely, so the keys go exactly when that window's heldUntil passes (a relative PEXPIRE
  -- would count from a later clock reading than now).
  local last = rcall('ZRANGE', dedupatKey, -1, -1, 'WITHSCORES')
  if tonumber(last[2]) == heldUntil then
    rcall('PEXPIREAT', dedupatKey, untl)
    rcall('PEXPIREAT', dedupKey, untl)
  end
end
rcall('HINCRBY', k.stats, 'scheduled', 1)
if head[2] == nil or at < tonumber(head[2]) then
  publish(channel, wakeName)
end
remember(requestsKey, answersKey, request, { 1, id, at, heldUntil }, now, retentionMs, maxEntries)
return { 1, id, at, heldUntil }
