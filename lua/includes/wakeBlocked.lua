-- wakeBlocked: a lease ended. When acquireAgents found the queue at its concurrency limit with
-- due work left ("blocked" in the limits hash), the queue is announced once, so waiting
-- Acquires and sessions re-check instead of waiting for a timer.
local function wakeBlocked(limitsKey, channel, queue)
  if rcall('HDEL', limitsKey, 'blocked') == 1 then publish(channel, queue) end
end
