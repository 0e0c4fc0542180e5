--[[
  readMessages: one page of a receiver's scheduled messages (by delivery time) or in-flight
  messages (by ack deadline), each with its metadata, its delivery record while in flight, its
  payload's size and at most its first bytes. Read-only; its work is bounded by the page.

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

    ARGV[1] state (str)      "scheduled" or "inflight": which set to page through
    ARGV[2] offset (uint)     rank to start at
    ARGV[3] count (uint)      most messages
    ARGV[4] head (uint)       most payload bytes to return per message

  Output -> MessagePage:
    { total in that set, (id, score, meta record or "", delivery record or "", payload bytes,
      payload head)* }
]]
local rcall = redis.call

local k = K
local set = A.state == 'inflight' and k.inflight or k.scheduled
local offset, count, head = A.offset, A.count, A.head
local page = rcall('ZRANGE', set, offset, offset + count - 1, 'WITHSCORES')
local out = { rcall('ZCARD', set) }
for i = 1, #page, 2 do
  local id = page[i]
  out[#out + 1] = id
  out[#out + 1] = page[i + 1]
  out[#out + 1] = rcall('HGET', k.meta, id) or ''
  out[#out + 1] = rcall('HGET', k.tokens, id) or ''
  out[#out + 1] = rcall('HSTRLEN', k.messages, id)
  out[#out + 1] = head > 0 and string.sub(rcall('HGET', k.messages, id) or '', 1, head) or ''
end
return out
