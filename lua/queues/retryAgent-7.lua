--[[
  retryAgent: puts a dead-lettered agent back in waiting, due at once, with a clean failure
  streak. Its kept finish (the dead letter's, as Await answers it) is dropped: the new run
  supersedes it, so an Await after the retry waits for that run.

  Input:
    KEYS of QueueKeys
    KEYS[1] waiting    ZSET name -> next run (ms)
    KEYS[2] defs       HASH name -> definition JSON
    KEYS[3] streaks    HASH name -> consecutive failures
    KEYS[4] dlq        ZSET name -> dead-lettered at (ms)
    KEYS[5] dlqinfo    HASH name -> dead-letter context JSON
    KEYS[6] results    HASH name -> result record
    KEYS[7] resultsat  ZSET name -> kept until (ms)

    ARGV[1] name (str)     agent name
    ARGV[2] channel (str)  where to announce: "P|S <wake-up channel>" or ""
    ARGV[3] queue (str)    queue name, published on channel

  Output -> Int:
    1 put back; 0 not dead-lettered here
]]
local rcall = redis.call
--@include publish
--@include nowMs
--@include addWaiting

local waitingKey, defsKey, streaksKey, dlqKey, dlqinfoKey = K.waiting, K.defs, K.streaks, K.dlq, K.dlqinfo
local resultsKey, resultsatKey = K.results, K.resultsat
local name, channel, queue = A.name, A.channel, A.queue
if rcall('ZREM', dlqKey, name) == 0 then
  return 0
end
rcall('HDEL', dlqinfoKey, name)
rcall('HDEL', streaksKey, name)
if rcall('HEXISTS', defsKey, name) == 0 then
  return 0
end
rcall('HDEL', resultsKey, name)
rcall('ZREM', resultsatKey, name)
addWaiting(waitingKey, name, nowMs(), channel, queue)
return 1
