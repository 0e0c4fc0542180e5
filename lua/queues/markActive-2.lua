--[[
  markActive: records in the index of active queues that a queue may get leases now, by the
  Redis clock. Written before the script that grants them: the sweepers walk this index, not
  every registered queue (see store::active). A queue that is not registered has no agent to
  grant, and is left out (a call naming an unknown queue creates no key).

  Input:
    KEYS[1] active  ZSET queue -> when it was last marked (ms)
    KEYS[2] queues  SET of every registered queue (same slot: the registry's)

    ARGV[1] queue (str)   the queue (one shard of a sharded one)
    ARGV[2] keep (bool)   true to leave a queue already marked as it is, false to mark it now

  Output -> Int: -1 if the queue is not registered, 1 if it was not in the index, else 0
]]
local rcall = redis.call
--@include nowMs

if rcall('SISMEMBER', K.queues, A.queue) == 0 then return -1 end
if A.keep then
  return rcall('ZADD', K.active, 'NX', nowMs(), A.queue)
end
return rcall('ZADD', K.active, nowMs(), A.queue)
