--[[
  queueStats: a queue's figures for health and the periodic log line. Read-only.

  Input:
    KEYS of QueueKeys
    KEYS[1] waiting    ZSET name -> next run (ms)
    KEYS[2] working    ZSET name -> lease deadline (ms)
    KEYS[3] dlq        ZSET name -> dead-lettered at (ms)
    KEYS[4] stats      HASH completed, failed, dead_lettered, expired -> counts
    KEYS[5] limits     HASH paused, concurrency, rate, burst, tokens, at, key_concurrency,
                       key_rate, key_burst, priority_aging (flow control)
    KEYS[6] pending    HASH child -> parents still pending: the blocked agents
    KEYS[7] outbox     ZSET "<parent>|<seq>" -> written at (ms): finishes whose children are
                       being released

    ARGV[1] stuckAgeMs (uint)   a lease this far past its deadline is stuck

  Output -> QueueStats:
    { now, waiting, due, oldestDue, working, overdueLeases, deadLettered, averageOverdueMs,
      stuck, completed, paused, concurrency, rate, burst, keyConcurrency, keyRate, keyBurst,
      tokens, priorityAging, nextDue, blocked, releasing, oldestRelease, expired, group }
    paused is 1 or 0; concurrency, rate, burst and the key limits are "" when unset; tokens is
    what the bucket holds now ("" without a rate limit); priorityAging is in ms, "" when unset.
    A keyed queue's promoted agents wait at minus their due time (acquireAgents): their due
    time is the score's absolute value.
    oldestDue is the earliest next run among due agents, or -1 when none is due; nextDue is the
    earliest next run after now, or -1 when none waits for its time;
    overdueLeases counts leases past their deadline; averageOverdueMs is over at most 1,000 due
    agents (the oldest promoted ones and the oldest not yet promoted, 500 of each at most).
    blocked counts agents waiting for parents; releasing counts finishes whose children are
    not all released yet, and oldestRelease is when the oldest of them was written (-1: none);
    expired counts the agents that finished as expired (expireAgent); group is the shared
    concurrency group the queue is a member of, "" for none.
]]
local rcall = redis.call
--@include nowMs

local waitingKey, workingKey, dlqKey, statsKey, limitsKey = K.waiting, K.working, K.dlq, K.stats, K.limits
local pendingKey, outboxKey = K.pending, K.outbox
local stuckAgeMs = A.stuckAgeMs
local now = nowMs()
local oldestDue, total, sampled = -1, 0, 0
local function sample(entries)
  for i = 2, #entries, 2 do
    local score = math.abs(tonumber(entries[i]))
    if oldestDue < 0 or score < oldestDue then oldestDue = score end
    total = total + (now - score)
    sampled = sampled + 1
  end
end
sample(rcall('ZREVRANGEBYSCORE', waitingKey, '(0', '-inf', 'WITHSCORES', 'LIMIT', 0, 500))
sample(rcall('ZRANGEBYSCORE', waitingKey, 0, now, 'WITHSCORES', 'LIMIT', 0, 500))
local lim = rcall('HMGET', limitsKey, 'paused', 'concurrency', 'rate', 'burst', 'tokens', 'at', 'key_concurrency',
  'key_rate', 'key_burst', 'priority_aging', 'group')
local tokens = ''
if lim[3] then
  -- The bucket as acquireAgents would find it now.
  local t, at = tonumber(lim[5] or lim[4]), tonumber(lim[6] or now)
  if now > at then t = math.min(tonumber(lim[4]), t + (now - at) * tonumber(lim[3]) / 1000) end
  tokens = string.format('%.3f', t)
end
local nextDue = rcall('ZRANGEBYSCORE', waitingKey, '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
local oldestRelease = rcall('ZRANGE', outboxKey, 0, 0, 'WITHSCORES')
local average = 0
if sampled > 0 then average = math.floor(total / sampled) end
return {
  now,
  rcall('ZCARD', waitingKey),
  rcall('ZCOUNT', waitingKey, '-inf', now),
  oldestDue,
  rcall('ZCARD', workingKey),
  rcall('ZCOUNT', workingKey, '-inf', '(' .. now),
  rcall('ZCARD', dlqKey),
  average,
  rcall('ZCOUNT', workingKey, '-inf', '(' .. (now - stuckAgeMs)),
  tonumber(rcall('HGET', statsKey, 'completed') or '0'),
  lim[1] == '1' and 1 or 0,
  lim[2] or '',
  lim[3] or '',
  lim[4] or '',
  lim[7] or '',
  lim[8] or '',
  lim[9] or '',
  tokens,
  lim[10] or '',
  nextDue[2] and tonumber(nextDue[2]) or -1,
  rcall('HLEN', pendingKey),
  rcall('ZCARD', outboxKey),
  oldestRelease[2] and tonumber(oldestRelease[2]) or -1,
  tonumber(rcall('HGET', statsKey, 'expired') or '0'),
  lim[11] or '',
}
