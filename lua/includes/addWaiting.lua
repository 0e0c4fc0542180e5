-- addWaiting: puts name into the waiting set at score, and publishes a wake-up on channel
-- when it becomes the earliest entry, so long-polling Acquires on every replica re-check.
local function addWaiting(waitingKey, name, score, channel, queue)
  local head = rcall('ZRANGE', waitingKey, 0, 0, 'WITHSCORES')
  rcall('ZADD', waitingKey, score, name)
  if head[2] == nil or score < tonumber(head[2]) then
    publish(channel, queue)
  end
end
