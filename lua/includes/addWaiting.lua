-- addWaiting: puts name into the waiting set at score, and publishes a wake-up on channel
-- when it becomes the earliest entry, so long-polling Acquires on every replica re-check.
-- (A keyed queue's promoted agents wait at negative scores, handed out by acquireAgents in an
-- order of their own; the earliest entry is the earliest of the others.)
local function addWaiting(waitingKey, name, score, channel, queue)
  local head = rcall('ZRANGEBYSCORE', waitingKey, 0, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  rcall('ZADD', waitingKey, score, name)
  if head[2] == nil or score < tonumber(head[2]) then
    publish(channel, queue)
  end
end
