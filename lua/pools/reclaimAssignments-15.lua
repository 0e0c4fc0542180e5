--[[
  reclaimAssignments: gives back resources assigned to claims that were never picked up
  (their replica died while they waited): any assignment past its wait deadline + graceMs goes
  back to the front of the ready queue (or to the next claim in line). Then ends claims whose
  hold (Claim's hold) ended unreturned: at most limit holds past their deadline are read; each
  still held with its token goes back like a Return with reuse (to the next claim in line, else
  the back of the ready queue), and its token is refused from then on; a hold whose claim ended
  otherwise is dropped.

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
    KEYS[15] holds      ZSET "resource id|token" -> hold deadline (ms) of claims with a hold

    ARGV[1] graceMs (uint)    how long past the wait deadline an assignment may stay unpicked
    ARGV[2] limit (uint)      most assignments to inspect, and most holds past their deadline
    ARGV[3] channel (str)    where to announce: "P|S <pool events channel>" or ""
    ARGV[4] pool (str)       pool name

  Output -> Int:
    reclaimed          how many resources went back (assignments and ended holds)
]]
local rcall = redis.call
--@include publish
--@include nowMs
--@include claimRecord
--@include placeResource

local k = K
local graceMs, limit, channel, pool = A.graceMs, A.limit, A.channel, A.pool
local now = nowMs()
local scan = rcall('HSCAN', k.assigned, '0', 'COUNT', limit)[2]
local reclaimed = 0
for i = 1, #scan, 2 do
  local id, token, deadline = string.match(scan[i + 1], '^([^|]*)|(%d+)|(%d+)$')
  if deadline and tonumber(deadline) + graceMs < now then
    rcall('HDEL', k.assigned, scan[i])
    local claim = claimRecord(rcall('HGET', k.claims, id))
    if claim and claim.token == token then
      rcall('ZREM', k.claimed, id)
      rcall('HDEL', k.claims, id)
      placeResource(k, id, now, channel, pool, true)
      reclaimed = reclaimed + 1
    end
  end
end
for _, hold in ipairs(rcall('ZRANGEBYSCORE', K.holds, '-inf', now, 'LIMIT', 0, limit)) do
  rcall('ZREM', K.holds, hold)
  local id, token = string.match(hold, '^(.*)|(%d+)$')
  local claim = id and claimRecord(rcall('HGET', k.claims, id))
  if claim and claim.token == token then
    rcall('ZREM', k.claimed, id)
    rcall('HDEL', k.claims, id)
    placeResource(k, id, now, channel, pool, false)
    reclaimed = reclaimed + 1
  end
end
if reclaimed > 0 then publish(channel, 'C|' .. pool) end
return reclaimed
