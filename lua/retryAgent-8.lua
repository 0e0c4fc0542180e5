--[[
  retryAgent: puts a dead-lettered agent back in waiting, due at once, with a clean failure
  streak. Its kept finish (the dead letter's, as Await answers it) is dropped: the new run
  supersedes it, so an Await after the retry waits for that run.

  Input:
    KEYS[1] waiting    ZSET name -> next run (ms)
    KEYS[2] defs       HASH name -> definition JSON
    KEYS[3] streaks    HASH name -> consecutive failures
    KEYS[4] dlq        ZSET name -> dead-lettered at (ms)
    KEYS[5] dlqinfo    HASH name -> dead-letter context JSON
    KEYS[6] index      ZSET name -> 0
    KEYS[7] results    HASH name -> result record
    KEYS[8] resultsat  ZSET name -> kept until (ms)

    ARGV[1] name       agent name
    ARGV[2] channel    where to announce: "P|S <wake-up channel>" or ""
    ARGV[3] queue      queue name, published on channel

  Output:
    1 put back; 0 not dead-lettered here
]]
local rcall = redis.call
--@include publish
--@include nowMs
--@include addWaiting

local waitingKey, defsKey, streaksKey, dlqKey, dlqinfoKey, indexKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local resultsKey, resultsatKey = KEYS[7], KEYS[8]
local name, channel, queue = ARGV[1], ARGV[2], ARGV[3]
if rcall('ZREM', dlqKey, name) == 0 then
  return 0
end
rcall('HDEL', dlqinfoKey, name)
rcall('HDEL', streaksKey, name)
if rcall('HEXISTS', defsKey, name) == 0 then
  rcall('ZREM', indexKey, name)
  return 0
end
rcall('HDEL', resultsKey, name)
rcall('ZREM', resultsatKey, name)
addWaiting(waitingKey, name, nowMs(), channel, queue)
return 1
