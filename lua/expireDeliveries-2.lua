--[[
  expireDeliveries: a consumer's Receive stream broke without its half-close (its process died):
  each of its deliveries still in flight with the token it was given is due again now (its ack
  deadline set to now), as if its ack timeout had passed; the receiver is announced, so a
  consumer's next delivery round takes it again (deliverMessages: a new token, the delivery
  counted). A message acked or delivered again since (another token) is left alone.

  Input:
    KEYS[1] inflight   ZSET id -> ack deadline (ms)
    KEYS[2] tokens     HASH id -> "token|consumer|delivered_at|key" (in flight)

    ARGV[1] channel    where to announce: "P|S <wake-up channel>" or ""
    ARGV[2] wakeName   name announced on channel ("r:<receiver>")
    ARGV[3..] id, token pairs

  Output:
    how many deliveries were made due again
]]
local rcall = redis.call
--@include publish
--@include nowMs

local inflightKey, tokensKey = KEYS[1], KEYS[2]
local now = nowMs()
local expired = 0
for i = 3, #ARGV - 1, 2 do
  local id, token = ARGV[i], ARGV[i + 1]
  local rec = rcall('HGET', tokensKey, id)
  if rec and string.match(rec, '^(%d+)|') == token and rcall('ZSCORE', inflightKey, id) then
    rcall('ZADD', inflightKey, 'XX', now, id)
    expired = expired + 1
  end
end
if expired > 0 then publish(ARGV[1], ARGV[2]) end
return expired
