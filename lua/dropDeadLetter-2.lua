--[[
  dropDeadLetter: drops one entry of a pool's dead-letter queue for good.

  Input:
    KEYS[1] dlq        ZSET id -> dead-lettered at (ms)
    KEYS[2] dlqinfo    HASH id -> dead-letter context JSON

    ARGV[1] id         resource id

  Output:
    1 deleted; 0 not dead-lettered here
]]
local rcall = redis.call
if rcall('ZREM', KEYS[1], ARGV[1]) == 0 then
  return 0
end
rcall('HDEL', KEYS[2], ARGV[1])
return 1
