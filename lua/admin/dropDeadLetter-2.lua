--[[
  dropDeadLetter: drops one entry of a pool's dead-letter queue for good.

  Input:
    KEYS of PoolKeys
    KEYS[1] dlq        ZSET id -> dead-lettered at (ms)
    KEYS[2] dlqinfo    HASH id -> dead-letter context JSON

    ARGV[1] id (str)   resource id

  Output -> Int:
    1 deleted; 0 not dead-lettered here
]]
local rcall = redis.call
if rcall('ZREM', K.dlq, A.id) == 0 then
  return 0
end
rcall('HDEL', K.dlqinfo, A.id)
return 1
