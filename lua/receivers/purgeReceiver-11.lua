--[[
  purgeReceiver: one page of the auto-purge of a receiver. Finds, and unless dryRun removes:
  dead letters past their TTL or beyond the size bound (with their message), on the first page
  (cursor "0"); message bodies and metadata of messages in no state (not scheduled, in flight
  or dead-lettered), page by page.

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

    ARGV[1] dryRun (bool)     "1": report only
    ARGV[2] dlqTtlMs (uint)   dead-letter TTL (0: none)
    ARGV[3] dlqMax (uint)     dead-letter size bound (0: none)
    ARGV[4] cursor (str)     HSCAN cursor over metadata ("0" to start)
    ARGV[5] limit (uint)      entries per page

  Output -> PurgePage:
    { nextCursor, (id, reason, action)* }   action REMOVED
]]
local rcall = redis.call
--@include nowMs
--@include messageMeta
--@include trimDeadLetters

local k = K
local dryRun = A.dryRun
local cursor, limit = A.cursor, A.limit
local now = nowMs()
local out = {}
if cursor == '0' then
  local gone = trimDeadLetters(k.dlq, k.dlqinfo, now, A.dlqTtlMs, A.dlqMax, function(id)
    rcall('HDEL', k.messages, id)
    rcall('HDEL', k.meta, id)
  end, dryRun)
  for _, id in ipairs(gone) do
    out[#out + 1] = id
    out[#out + 1] = 'dead letter past its TTL or beyond the size bound'
    out[#out + 1] = 'REMOVED'
  end
end
local scan = rcall('HSCAN', k.meta, cursor, 'COUNT', limit)
local entries = scan[2]
for i = 1, #entries, 2 do
  local id = entries[i]
  if not rcall('ZSCORE', k.scheduled, id) and not rcall('ZSCORE', k.inflight, id) and not rcall('ZSCORE', k.dlq, id) then
    out[#out + 1] = id
    out[#out + 1] = 'message in no state (not scheduled, in flight or dead-lettered)'
    out[#out + 1] = 'REMOVED'
    if not dryRun then
      local meta = messageMeta(entries[i + 1])
      if meta and meta.key ~= '' and rcall('HGET', k.keys, meta.key) == id then rcall('HDEL', k.keys, meta.key) end
      rcall('HDEL', k.messages, id)
      rcall('HDEL', k.meta, id)
    end
  end
end
local result = { scan[1] }
for _, v in ipairs(out) do result[#result + 1] = v end
return result
