--[[
  releaseAgent: hands a lease back without counting a failure; the agent is due again after
  delay plus a random jitter. An agent unregistered while held is dropped.

  Input:
    KEYS of QueueKeys
    KEYS[1] waiting    ZSET name -> next run (ms)
    KEYS[2] working    ZSET name -> lease deadline (ms)
    KEYS[3] defs       HASH name -> definition JSON
    KEYS[4] leases     HASH name -> "token|worker|acquired_at|timeout_ms"
    KEYS[5] limits     HASH flow control (acquireAgents): "blocked" is cleared and announced
    KEYS[6] group     HASH the queue's shared concurrency group, as named by ARGV groupName
                       (groupLimits): its limits and held counts; a queue in no group
                       passes a key of its own slot, never touched
    KEYS[7] groupblocked SET "<queue>|<channel>": member queues held back by the group

    ARGV[1] name (str)       agent name
    ARGV[2] token (str)      the lease's token (decimal)
    ARGV[3] delayMs (uint)   delay before the agent is due again
    ARGV[4] jitterMs (uint)  upper bound of a random delay added to it
    ARGV[5] seed (uint)      random seed for the jitter
    ARGV[6] channel (str)    where to announce: "P|S <wake-up channel>" or ""
    ARGV[7] queue (str)      queue name, published on channel
    ARGV[8] atMs (str)       when not "", the agent is due at exactly this time (ms) instead (a
                             skipped cron run waits for its next fire)
    ARGV[9] groupName (str) the group whose keys these are ("" for none): a grant counts under the
                            queue's group, a lease end under its record's (groupLimits)

  Output -> Released:
    { -1 }             LEASE_LOST: token stale or unknown; nothing changed
    { 0, nextRun }     RESCHEDULED
    { 1, 0 }           REMOVED: no definition left
]]
local rcall = redis.call
--@include publish
--@include nowMs
--@include leaseRecord
--@include addWaiting
--@include wakeBlocked
--@include countsKeys
--@include keyLeaseEnded
--@include groupLimits

local waitingKey, workingKey, defsKey, leasesKey, limitsKey = K.waiting, K.working, K.defs, K.leases, K.limits
local name, token = A.name, A.token
local delayMs, jitterMs = A.delayMs, A.jitterMs
math.randomseed(A.seed)
local channel, queue = A.channel, A.queue

local lease = parseLease(rcall('HGET', leasesKey, name))
if not lease or lease.token ~= token then
  return { -1 }
end
checkGroups(A.groupName, { lease.group })
rcall('ZREM', workingKey, name)
rcall('HDEL', leasesKey, name)
keyLeaseEnded(limitsKey, lease.key, name)
groupLeaseEnded(K, lease.group, 1, lease.key and { [lease.key] = 1 })
wakeBlocked(limitsKey, channel, queue)
if rcall('HEXISTS', defsKey, name) == 0 then
  return { 1, 0 }
end
local nextRun = nowMs() + delayMs
if jitterMs > 0 then nextRun = nextRun + math.random(0, jitterMs) end
if A.atMs ~= '' then nextRun = tonumber(A.atMs) end
addWaiting(waitingKey, name, nextRun, channel, queue)
return { 0, nextRun }
