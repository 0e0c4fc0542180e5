--[[
  expireDeliveries: a consumer's Receive stream broke without its half-close (its process died):
  each of its deliveries still in flight with the token it was given is due again now (its ack
  deadline set to now), as if its ack timeout had passed; the receiver is announced, so a
  consumer's next delivery round takes it again (deliverMessages: a new token, the delivery
  counted). A message acked or delivered again since (another token) is left alone.

  Input:
    KEYS of ReceiverKeys
    KEYS[1] inflight   ZSET id -> ack deadline (ms)
    KEYS[2] tokens     HASH id -> "token|consumer|delivered_at|key" (in flight)

    ARGV[1] channel (str)         where to announce: "P|S <wake-up channel>" or ""
    ARGV[2] wakeName (str)        name announced on channel ("r:<receiver>")
    ARGV[3..] deliveries (items)  the deliveries to expire
      id (str)                    the message
      token (str)                 the token it was delivered with

  Output -> Int:
    how many deliveries were made due again
]]
local rcall = redis.call
--@include publish
--@include nowMs

local inflightKey, tokensKey = K.inflight, K.tokens
local now = nowMs()
local expired = 0
for _, item in ipairs(A.deliveries) do
  local id, token = item.id, item.token
  local rec = rcall('HGET', tokensKey, id)
  if rec and string.match(rec, '^(%d+)|') == token and rcall('ZSCORE', inflightKey, id) then
    rcall('ZADD', inflightKey, 'XX', now, id)
    expired = expired + 1
  end
end
if expired > 0 then publish(A.channel, A.wakeName) end
return expired
