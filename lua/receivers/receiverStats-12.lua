--[[
  receiverStats: a receiver's figures for health. Read-only.

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
    KEYS[12] limits     HASH paused ("1")

  Output -> ReceiverStats:
    { now, scheduled, due, oldestDue (or -1), averageOverdueMs, inFlight, overdueInFlight,
      deadLettered, acked, paused (1 or 0), nextDue (or -1) }
    Averages are over at most 1,000 due messages; nextDue is the earliest delivery time after now.
]]
local rcall = redis.call
--@include nowMs

local k = K
local now = nowMs()
local due = rcall('ZRANGEBYSCORE', k.scheduled, '-inf', now, 'WITHSCORES', 'LIMIT', 0, 1000)
local oldest, total = -1, 0
for i = 2, #due, 2 do
  local score = tonumber(due[i])
  if oldest < 0 then oldest = score end
  total = total + (now - score)
end
local nextDue = rcall('ZRANGEBYSCORE', k.scheduled, '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
local average = 0
if #due > 0 then average = math.floor(total / (#due / 2)) end
return {
  now,
  rcall('ZCARD', k.scheduled),
  rcall('ZCOUNT', k.scheduled, '-inf', now),
  oldest,
  average,
  rcall('ZCARD', k.inflight),
  rcall('ZCOUNT', k.inflight, '-inf', '(' .. now),
  rcall('ZCARD', k.dlq),
  tonumber(rcall('HGET', k.stats, 'acked') or '0'),
  rcall('HGET', K.limits, 'paused') == '1' and 1 or 0,
  nextDue[2] and tonumber(nextDue[2]) or -1,
}
