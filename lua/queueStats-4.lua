--[[
  queueStats: a queue's figures for health and the periodic log line. Read-only.

  Input:
    KEYS[1] waiting    ZSET name -> next run (ms)
    KEYS[2] working    ZSET name -> lease deadline (ms)
    KEYS[3] dlq        ZSET name -> dead-lettered at (ms)
    KEYS[4] stats      HASH completed, failed, dead_lettered -> counts

    ARGV[1] stuckAgeMs   a lease this far past its deadline is stuck

  Output:
    { now, waiting, due, oldestDue, working, overdueLeases, deadLettered, averageOverdueMs,
      stuck, completed }
    oldestDue is the earliest next run among due agents, or -1 when none is due;
    overdueLeases counts leases past their deadline; averageOverdueMs is over at most 1,000 due
    agents.
]]
local rcall = redis.call
--@include nowMs

local waitingKey, workingKey, dlqKey, statsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local stuckAgeMs = tonumber(ARGV[1])
local now = nowMs()
local due = rcall('ZRANGEBYSCORE', waitingKey, '-inf', now, 'WITHSCORES', 'LIMIT', 0, 1000)
local oldestDue, total = -1, 0
for i = 2, #due, 2 do
  local score = tonumber(due[i])
  if oldestDue < 0 then oldestDue = score end
  total = total + (now - score)
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
}
