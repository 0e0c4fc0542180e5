--[[
  touchWorker: records that a worker is alive, scored by the Redis clock.

  Input:
    KEYS[1] workers    ZSET worker id -> last seen (ms)

    ARGV[1] worker     worker id

  Output:
    now                the time recorded (ms)
]]
local rcall = redis.call
--@include nowMs

local now = nowMs()
rcall('ZADD', KEYS[1], now, ARGV[1])
return now
