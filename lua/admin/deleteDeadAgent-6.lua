--[[
  deleteDeadAgent: drops a dead-lettered agent for good, with its definition.

  Input:
    KEYS of QueueKeys
    KEYS[1] dlq        ZSET name -> dead-lettered at (ms)
    KEYS[2] dlqinfo    HASH name -> dead-letter context JSON
    KEYS[3] defs       HASH name -> definition JSON
    KEYS[4] payloads   HASH name -> payload bytes
    KEYS[5] streaks    HASH name -> consecutive failures
    KEYS[6] waiting    ZSET name -> next run (ms)

    ARGV[1] name (str)  agent name

  Output -> Int:
    1 deleted; 0 not dead-lettered here
]]
local rcall = redis.call
local dlqKey, dlqinfoKey, defsKey, payloadsKey = K.dlq, K.dlqinfo, K.defs, K.payloads
local streaksKey, waitingKey = K.streaks, K.waiting
local name = A.name
if rcall('ZREM', dlqKey, name) == 0 then
  return 0
end
rcall('HDEL', dlqinfoKey, name)
rcall('HDEL', defsKey, name)
rcall('HDEL', payloadsKey, name)
rcall('HDEL', streaksKey, name)
rcall('ZREM', waitingKey, name)
return 1
