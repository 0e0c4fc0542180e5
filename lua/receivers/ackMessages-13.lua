--[[
  ackMessages: ends delivered messages for good, each whose token is its current delivery's;
  one call for a batch (one command per key for all of them). Announces the receiver when
  something was acked and messages are due, since a consumer may have been at its in-flight
  bound; with always = "1" (a shard of a sharded receiver, whose consumers' bound spans the
  shards and may have messages due in another) after every batch that acked something. An ack
  with a request field whose answer is remembered (a retry of an ack already applied) is
  answered acked and changes nothing; an applied ack with a request field is remembered.

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

    ARGV[1] channel (str)    where to announce: "P|S <wake-up channel>" or ""
    ARGV[2] wakeName (str)   name announced on channel ("r:<receiver>")
    ARGV[3] always (str)     "1": announce after every batch that acked; "": only when messages are due
    ARGV[4] retentionMs (uint) how long answers are remembered (at least)
    ARGV[5] maxEntries (uint) most answers remembered per receiver
    ARGV[6..] acks (items)  one per ack, in order:
      id (str)          message id
      token (str)       the delivery's token
      request (str)     request field ("ack|<id>|<token>|<request id>" or "")

  Output -> Acked:
    one integer per ack, in order (a retry's: the first call's): 0 acked, -1 LEASE_LOST (not in flight with that token, or
    acked earlier in the same batch)
]]
local rcall = redis.call
--@include messageMeta
--@include publish
--@include nowMs
--@include recall
--@include remember

local k = K
local requestsKey, answersKey = K.requests, K.answers
local channel, wakeName, always = A.channel, A.wakeName, A.always
local retentionMs, maxEntries = A.retentionMs, A.maxEntries
local n = #A.acks
local ids = {}
for i = 1, n do ids[i] = A.acks[i].id end
local recs = rcall('HMGET', k.tokens, unpack(ids))

-- A token record carries the message's idempotency key since it was delivered; one written
-- before that ("token|consumer|delivered_at") sends its ack to the metadata for the key.
local out, done, seen, held, keys, d = {}, {}, {}, {}, {}, 0
local remembered = {}
for i = 1, n do
  local id, rec, request = ids[i], recs[i], A.acks[i].request
  local token, consumer, rest
  if rec then token, consumer, rest = string.match(rec, '^(%d+)|([^|]*)|%d+(.*)$') end
  local again = recall(answersKey, request)
  if again then
    out[i] = again[1]
  elseif token and token == A.acks[i].token and not seen[id] then
    seen[id] = true
    d = d + 1
    done[d] = id
    held[consumer] = (held[consumer] or 0) + 1
    -- rest: "|key" (possibly "|"), or "" for a record written before keys rode in it.
    local key
    if rest == '' then
      local meta = messageMeta(rcall('HGET', k.meta, id))
      key = meta and meta.key
    else
      key = string.sub(rest, 2)
    end
    if key and key ~= '' then keys[#keys + 1] = key end
    if request ~= '' then remembered[#remembered + 1] = request end
    out[i] = 0
  else
    out[i] = -1
  end
end
if d == 0 then return out end

local now = nowMs()
for _, request in ipairs(remembered) do
  remember(requestsKey, answersKey, request, { 0 }, now, retentionMs, maxEntries)
end

rcall('ZREM', k.inflight, unpack(done))
rcall('HDEL', k.tokens, unpack(done))
for consumer, count in pairs(held) do
  if rcall('HINCRBY', k.consumers, consumer, -count) <= 0 then rcall('HDEL', k.consumers, consumer) end
end
if #keys > 0 then rcall('HDEL', k.keys, unpack(keys)) end
rcall('HDEL', k.messages, unpack(done))
rcall('HDEL', k.meta, unpack(done))
rcall('HINCRBY', k.stats, 'acked', #done)
if always == '1' or rcall('ZRANGEBYSCORE', k.scheduled, '-inf', now, 'LIMIT', 0, 1)[1] then
  publish(channel, wakeName)
end
return out
