--[[
  completeAgent: ends a lease with an outcome and decides the agent's next run.

  SUCCESS: failure streak cleared; next run at acquired_at + interval, never in the past; a
  one-shot agent (interval 0) is removed entirely. A failure grows the streak; at max_attempts
  (0 = unlimited) the agent moves to the dead-letter set, otherwise it waits for the backoff of
  its class (failureDelay), jittered, replaced by retryAfter when that is larger. An agent
  unregistered while held is dropped. TIMEOUT is the class the zombie sweeper uses.

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

    ARGV[1]  name
    ARGV[2]  token
    ARGV[3]  outcome            SUCCESS | PERMANENT_FORBIDDEN | THROTTLED | TRANSIENT |
                                SERVER_ERROR | UNKNOWN | TIMEOUT
    ARGV[4]  message            failure description, kept in the dead-letter context
    ARGV[5]  retryAfterMs       the worker's Retry-After, 0 for none
    ARGV[6]  forbiddenMs        PERMANENT_FORBIDDEN backoff
    ARGV[7]  throttledBaseMs    THROTTLED first backoff
    ARGV[8]  throttledMult      THROTTLED multiplier per further failure
    ARGV[9]  throttledCapMs     THROTTLED cap
    ARGV[10] maxImmediate       TRANSIENT / SERVER_ERROR immediate retries
    ARGV[11] jitterRatio        ± ratio applied to every non-zero backoff
    ARGV[12] seed               random seed for the jitter
    ARGV[13] channel            wake-up channel ("" for none)
    ARGV[14] queue              queue name (wake-up message, dead-letter context)

  Output:
    { -1 }                          LEASE_LOST: token stale or unknown; nothing changed
    { 0, nextRun, streak }          RESCHEDULED
    { 1, 0, 0 }                     REMOVED: one-shot success, or no definition left
    { 2, deadLetteredAt, streak }   DEAD_LETTERED
]]
local rcall = redis.call
--@include nowMs
--@include parseLease
--@include addWaiting
--@include jitter
--@include failureDelay

local waitingKey, workingKey, defsKey, payloadsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local leasesKey, streaksKey, indexKey, dlqKey, dlqinfoKey = KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9]
local name, token, outcome, message = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local retryAfterMs = tonumber(ARGV[5])
local policy = {
  forbiddenMs = tonumber(ARGV[6]),
  throttledBaseMs = tonumber(ARGV[7]),
  throttledMultiplier = tonumber(ARGV[8]),
  throttledCapMs = tonumber(ARGV[9]),
  maxImmediateRetries = tonumber(ARGV[10]),
}
local jitterRatio = tonumber(ARGV[11])
math.randomseed(tonumber(ARGV[12]))
local channel, queue = ARGV[13], ARGV[14]

local lease = parseLease(rcall('HGET', leasesKey, name))
if not lease or lease.token ~= token then
  return { -1 }
end
local now = nowMs()
rcall('ZREM', workingKey, name)
rcall('HDEL', leasesKey, name)

local def = rcall('HGET', defsKey, name)
if not def then
  return { 1, 0, 0 }
end
def = cjson.decode(def)

if outcome == 'SUCCESS' then
  rcall('HDEL', streaksKey, name)
  local interval = tonumber(def['interval_ms'])
  if interval == 0 then
    rcall('HDEL', defsKey, name)
    rcall('HDEL', payloadsKey, name)
    rcall('ZREM', indexKey, name)
    return { 1, 0, 0 }
  end
  local nextRun = lease.acquiredAt + interval
  if nextRun < now then nextRun = now end
  addWaiting(waitingKey, name, nextRun, channel, queue)
  return { 0, nextRun, 0 }
end

local streak = rcall('HINCRBY', streaksKey, name, 1)
local maxAttempts = tonumber(def['max_attempts'])
if maxAttempts > 0 and streak >= maxAttempts then
  rcall('ZADD', dlqKey, now, name)
  rcall('HSET', dlqinfoKey, name, cjson.encode({
    source = 'agent', queue = queue, name = name, outcome = outcome, message = message,
    failed_at = now, attempts = streak, worker = lease.worker,
  }))
  return { 2, now, streak }
end

local delay = jitter(failureDelay(outcome, streak, tonumber(def['error_interval_ms']), policy), jitterRatio)
if retryAfterMs > delay then delay = retryAfterMs end
addWaiting(waitingKey, name, now + delay, channel, queue)
return { 0, now + delay, streak }
