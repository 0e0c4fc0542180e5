--[[
  unregisterAgents: removes agents' definitions, waiting entries, dead-letter entries and a cron
  agent's record of its next fire.
  A lease still held is left alone: its holder may heartbeat and complete it, and
  completeAgent drops the agent instead of rescheduling it.

  Input:
    KEYS[1] waiting    ZSET name -> next run (ms)
    KEYS[2] defs       HASH name -> definition JSON
    KEYS[3] payloads   HASH name -> payload bytes
    KEYS[4] streaks    HASH name -> consecutive failures
    KEYS[5] index      ZSET name -> 0
    KEYS[6] dlq        ZSET name -> dead-lettered at (ms)
    KEYS[7] dlqinfo    HASH name -> dead-letter context JSON
    KEYS[8] cron       HASH name -> "token|next fire" of a cron agent's latest run

    ARGV[1..] names    agent names

  Output:
    removed            how many of the names existed
]]
local rcall = redis.call
local waitingKey, defsKey, payloadsKey, streaksKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local indexKey, dlqKey, dlqinfoKey, cronKey = KEYS[5], KEYS[6], KEYS[7], KEYS[8]

local removed = 0
for i = 1, #ARGV do
  local name = ARGV[i]
  removed = removed + rcall('HDEL', defsKey, name)
  rcall('HDEL', payloadsKey, name)
  rcall('HDEL', streaksKey, name)
  rcall('ZREM', waitingKey, name)
  rcall('ZREM', indexKey, name)
  rcall('ZREM', dlqKey, name)
  rcall('HDEL', dlqinfoKey, name)
  rcall('HDEL', cronKey, name)
end
return removed
