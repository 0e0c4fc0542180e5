--[[
  markActive: records in the index of active queues that a queue may get leases now, by the
  Redis clock. Written before the script that grants them: the sweepers walk this index, not
  every registered queue (see store::active). A queue that is not registered has no agent to
  grant, and is left out (a call naming an unknown queue creates no key).

  Input:
    KEYS[1] active  ZSET queue -> when it was last marked (ms)
    KEYS[2] queues  SET of every registered queue (same slot: the registry's)

    ARGV[1] queue   the queue (one shard of a sharded one)
    ARGV[2] only    "NX" to leave a queue already marked as it is, "" to mark it now

  Output: -1 if the queue is not registered, 1 if it was not in the index, else 0
]]
local rcall = redis.call
--@include nowMs

if rcall('SISMEMBER', KEYS[2], ARGV[1]) == 0 then return -1 end
if ARGV[2] == 'NX' then
  return rcall('ZADD', KEYS[1], 'NX', nowMs(), ARGV[1])
end
return rcall('ZADD', KEYS[1], nowMs(), ARGV[1])
