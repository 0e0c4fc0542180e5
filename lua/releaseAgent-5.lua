--[[
  releaseAgent: hands a lease back without counting a failure; the agent is due again after
  delay plus a random jitter. An agent unregistered while held is dropped.

  Input:
    KEYS[1] waiting    ZSET name -> next run (ms)
    KEYS[2] working    ZSET name -> lease deadline (ms)
    KEYS[3] defs       HASH name -> definition JSON
    KEYS[4] leases     HASH name -> "token|worker|acquired_at|timeout_ms"
    KEYS[5] limits     HASH flow control (acquireAgents): "blocked" is cleared and announced

    ARGV[1] name
    ARGV[2] token
    ARGV[3] delayMs    delay before the agent is due again
    ARGV[4] jitterMs   upper bound of a random delay added to it
    ARGV[5] seed       random seed for the jitter
    ARGV[6] channel    where to announce: "P|S <wake-up channel>" or ""
    ARGV[7] queue      queue name, published on channel
    ARGV[8] atMs       when given, the agent is due at exactly this time instead (a skipped
                       cron run waits for its next fire)

  Output:
    { -1 }             LEASE_LOST: token stale or unknown; nothing changed
    { 0, nextRun }     RESCHEDULED
    { 1, 0 }           REMOVED: no definition left
]]
local rcall = redis.call
--@include publish
--@include nowMs
--@include parseLease
--@include addWaiting
--@include wakeBlocked
--@include keyLeaseEnded

local waitingKey, workingKey, defsKey, leasesKey, limitsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local name, token = ARGV[1], ARGV[2]
local delayMs, jitterMs = tonumber(ARGV[3]), tonumber(ARGV[4])
math.randomseed(tonumber(ARGV[5]))
local channel, queue = ARGV[6], ARGV[7]

local lease = parseLease(rcall('HGET', leasesKey, name))
if not lease or lease.token ~= token then
  return { -1 }
end
rcall('ZREM', workingKey, name)
rcall('HDEL', leasesKey, name)
keyLeaseEnded(limitsKey, lease.key, 1, name)
wakeBlocked(limitsKey, channel, queue)
if rcall('HEXISTS', defsKey, name) == 0 then
  return { 1, 0 }
end
local nextRun = nowMs() + delayMs
if jitterMs > 0 then nextRun = nextRun + math.random(0, jitterMs) end
if ARGV[8] and ARGV[8] ~= '' then nextRun = tonumber(ARGV[8]) end
addWaiting(waitingKey, name, nextRun, channel, queue)
return { 0, nextRun }
