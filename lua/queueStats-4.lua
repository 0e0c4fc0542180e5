--[[
  queueStats: a queue's counts for health and the periodic log line. Read-only.

  Input:
    KEYS[1] waiting    ZSET name -> next run (ms)
    KEYS[2] working    ZSET name -> lease deadline (ms)
    KEYS[3] dlq        ZSET name -> dead-lettered at (ms)

  Output:
    { now, waiting, due, oldestDue, working, overdueLeases, deadLettered }
    oldestDue is the earliest next run among due agents, or -1 when none is due;
    overdueLeases counts leases past their deadline.
]]
local rcall = redis.call
--@include nowMs

local waitingKey, workingKey, dlqKey = KEYS[1], KEYS[2], KEYS[3]
local now = nowMs()
local head = rcall('ZRANGE', waitingKey, 0, 0, 'WITHSCORES')
local oldestDue = -1
if head[2] and tonumber(head[2]) <= now then oldestDue = tonumber(head[2]) end
return {
  now,
  rcall('ZCARD', waitingKey),
  rcall('ZCOUNT', waitingKey, '-inf', now),
  oldestDue,
  rcall('ZCARD', workingKey),
  rcall('ZCOUNT', workingKey, '-inf', '(' .. now),
  rcall('ZCARD', dlqKey),
}
