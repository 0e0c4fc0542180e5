--[[
  poolStatus: a pool's counts. Read-only.

  Input:
    KEYS of PoolKeys
    KEYS[1]  idle       ZSET resource id -> ready-queue order (FIFO)
    KEYS[2]  resources  HASH resource id -> offered attributes JSON
    KEYS[3]  claimed    ZSET resource id -> claimed at (ms)
    KEYS[4]  claims     HASH resource id -> "token|claimer|claimed_at|attributes JSON"
    KEYS[5]  line       ZSET claim id -> arrival (ms); ties by id, which grows
    KEYS[6]  lineinfo   HASH claim id -> "claimer|wait deadline (ms)|attributes JSON"
    KEYS[7]  assigned   HASH claim id -> "resource id|token|wait deadline (ms)" (not yet picked up)
    KEYS[8]  seq        STRING counter: tokens, claim ids, ready-queue order
    KEYS[9]  scaleup    STRING "1" while the scale-up signal is raised
    KEYS[10] dlq        ZSET resource id -> dead-lettered at (ms)
    KEYS[11] dlqinfo    HASH resource id -> dead-letter context JSON
    KEYS[12] idleat     HASH resource id -> idle since (ms)
    KEYS[13] stats      HASH claimed, offered, dead_lettered -> counts
    KEYS[14] limits     HASH paused ("1": AdminService.Pause)

    ARGV[1] stuckAgeMs (uint)   a claim held this long is stuck

  Output -> PoolStats:
    { now, idle, claimed, waiting claims, first arrival in line (or -1), scale-up (1/0),
      dead-lettered, oldest idle since (or -1), average idle ms, stuck claims, claimed count }
    Idle ages are over at most 1,000 idle resources.
]]
local rcall = redis.call
--@include nowMs

local k = K
local stuckAgeMs = A.stuckAgeMs
local now = nowMs()
local head = rcall('ZRANGE', k.line, 0, 0, 'WITHSCORES')
local first = -1
if head[2] then first = tonumber(head[2]) end
local oldestIdle, total, n = -1, 0, 0
for _, id in ipairs(rcall('ZRANGE', k.idle, 0, 999)) do
  local since = tonumber(rcall('HGET', k.idleat, id) or tostring(now))
  if oldestIdle < 0 or since < oldestIdle then oldestIdle = since end
  total = total + (now - since)
  n = n + 1
end
local average = 0
if n > 0 then average = math.floor(total / n) end
return {
  now,
  rcall('ZCARD', k.idle),
  rcall('ZCARD', k.claimed),
  rcall('ZCARD', k.line),
  first,
  rcall('EXISTS', k.scaleup),
  rcall('ZCARD', k.dlq),
  oldestIdle,
  average,
  rcall('ZCOUNT', k.claimed, '-inf', '(' .. (now - stuckAgeMs)),
  tonumber(rcall('HGET', k.stats, 'claimed') or '0'),
  rcall('HGET', k.limits, 'paused') == '1' and 1 or 0,
}
