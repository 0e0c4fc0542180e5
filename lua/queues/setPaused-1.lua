--[[
  setPaused: pauses or resumes a queue, pool or receiver (one shard of a sharded one). Paused,
  nothing is handed out; what is waiting stays. Resuming announces the source so that waiting
  Acquires, claims and consumers look again.

  Input:
    KEYS[1] limits   HASH of the source's flow control; "paused" = "1"

    ARGV[1] paused (bool)   true to pause, false to resume
    ARGV[2] channel (str)   where to announce: "P|S <wake-up channel>" or ""
    ARGV[3] message (str)   what to announce on resuming (the name its waiters wait under)

  Output -> Int: 1 if the state changed, 0 if it already was so
]]
local rcall = redis.call
--@include publish

local limitsKey, channel, message = K.limits, A.channel, A.message
if A.paused then
  return rcall('HSETNX', limitsKey, 'paused', '1')
end
local changed = rcall('HDEL', limitsKey, 'paused')
-- Announced even when it was not paused: cheap, and a waiter that missed a wake-up looks again.
publish(channel, message)
return changed
