--[[
  completeAgent: ends a lease with the worker's outcome and decides the agent's next run
  (finishLease: success reschedules or removes a one-shot agent; failures back off by class
  and dead-letter at max_attempts). A stale or unknown token changes nothing.

  Input:
    KEYS[1] waiting    ZSET name -> next run (ms)
    KEYS[2] working    ZSET name -> lease deadline (ms)
    KEYS[3] defs       HASH name -> definition JSON
    KEYS[4] payloads   HASH name -> payload bytes
    KEYS[5] leases     HASH name -> "token|worker|acquired_at|timeout_ms"
    KEYS[6] streaks    HASH name -> consecutive failures
    KEYS[7] index      ZSET name -> 0
    KEYS[8] dlq        ZSET name -> dead-lettered at (ms)
    KEYS[9] dlqinfo    HASH name -> dead-letter context JSON
    KEYS[10] stats     HASH completed, failed, dead_lettered -> counts

    ARGV[1]  name
    ARGV[2]  token
    ARGV[3]  outcome            SUCCESS | PERMANENT_FORBIDDEN | THROTTLED | TRANSIENT |
                                SERVER_ERROR | UNKNOWN
    ARGV[4]  message            failure description, kept in the dead-letter context
    ARGV[5]  retryAfterMs       the worker's Retry-After, 0 for none
    ARGV[6..13] policy          forbiddenMs, throttledBaseMs, throttledMult, throttledCapMs,
                                maxImmediate, jitterRatio, dlqTtlMs, dlqMaxEntries (readPolicy)
    ARGV[14] seed               random seed for the jitter
    ARGV[15] channel            where to announce: "P|S <wake-up channel>" or ""
    ARGV[16] queue              queue name (wake-up message, dead-letter context)

  Output:
    { -1 }                          LEASE_LOST: token stale or unknown; nothing changed
    { 0, nextRun, streak }          RESCHEDULED
    { 1, 0, 0 }                     REMOVED: one-shot success, or no definition left
    { 2, deadLetteredAt, streak }   DEAD_LETTERED
]]
local rcall = redis.call
--@include publish
--@include nowMs
--@include parseLease
--@include addWaiting
--@include jitter
--@include failureDelay
--@include readPolicy
--@include trimDeadLetters
--@include finishLease

local k = {
  waiting = KEYS[1], working = KEYS[2], defs = KEYS[3], payloads = KEYS[4], leases = KEYS[5],
  streaks = KEYS[6], index = KEYS[7], dlq = KEYS[8], dlqinfo = KEYS[9], stats = KEYS[10],
}
local name, token, outcome, message = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local retryAfterMs = tonumber(ARGV[5])
local policy = readPolicy(6)
math.randomseed(tonumber(ARGV[14]))
local channel, queue = ARGV[15], ARGV[16]

local lease = parseLease(rcall('HGET', k.leases, name))
if not lease or lease.token ~= token then
  return { -1 }
end
return finishLease(k, name, lease, outcome, message, retryAfterMs, policy, nowMs(), channel, queue)
