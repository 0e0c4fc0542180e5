--[[
  queueStats: a queue's figures for health and the periodic log line. Read-only.

  Input:
    KEYS[1] waiting    ZSET name -> next run (ms)
    KEYS[2] working    ZSET name -> lease deadline (ms)
    KEYS[3] dlq        ZSET name -> dead-lettered at (ms)
    KEYS[4] stats      HASH completed, failed, dead_lettered -> counts
    KEYS[5] limits     HASH paused, concurrency, rate, burst, tokens, at (flow control)

    ARGV[1] stuckAgeMs   a lease this far past its deadline is stuck

  Output:
    { now, waiting, due, oldestDue, working, overdueLeases, deadLettered, averageOverdueMs,
      stuck, completed, paused, concurrency, rate, burst, tokens }
    paused is 1 or 0; concurrency, rate, burst are "" when unset; tokens is what the bucket holds
    now ("" without a rate limit).
    oldestDue is the earliest next run among due agents, or -1 when none is due;
    overdueLeases counts leases past their deadline; averageOverdueMs is over at most 1,000 due
    agents.
]]
local rcall = redis.call
--@include nowMs

local waitingKey, workingKey, dlqKey, statsKey, limitsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local stuckAgeMs = tonumber(ARGV[1])
local now = nowMs()
local due = rcall('ZRANGEBYSCORE', waitingKey, '-inf', now, 'WITHSCORES', 'LIMIT', 0, 1000)
local oldestDue, total = -1, 0
for i = 2, #due, 2 do
  local score = tonumber(due[i])
  if oldestDue < 0 then oldestDue = score end
  total = total + (now - score)
end
local lim = rcall('HMGET', limitsKey, 'paused', 'concurrency', 'rate', 'burst', 'tokens', 'at')
local tokens = ''
if lim[3] then
  -- The bucket as acquireAgents would find it now.
  local t, at = tonumber(lim[5] or lim[4]), tonumber(lim[6] or now)
  if now > at then t = math.min(tonumber(lim[4]), t + (now - at) * tonumber(lim[3]) / 1000) end
  tokens = string.format('%.3f', t)
end
local average = 0
if #due > 0 then average = math.floor(total / (#due / 2)) end
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
  tokens,
}
