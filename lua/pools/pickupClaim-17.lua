--[[
  pickupClaim: settles a claim waiting in line, for the replica that holds its caller.
  peek:    a resource assigned to it is taken; otherwise it keeps waiting.
  end:     the wait ended with the caller still there: an assigned resource is taken;
           otherwise the claim leaves the line.
  abandon: the caller went away: the claim leaves the line, and a resource assigned to it goes
           back to the front of the ready queue (or to the next claim in line).
  A resource taken starts its hold (if any) and is remembered under the claim's request field.

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
    KEYS[15] requests   ZSET request field -> remembered at (ms)
    KEYS[16] answers    HASH request field -> first answer JSON
    KEYS[17] holds      ZSET "resource id|token" -> hold deadline (ms) of claims with a hold

    ARGV[1] claimId (str)    the claim's id
    ARGV[2] mode (str)       "peek", "end" or "abandon"
    ARGV[3] channel (str)    where to announce: "P|S <pool events channel>" or ""
    ARGV[4] pool (str)       pool name
    ARGV[5] request (str)    the claim's request field "claim|<claimer>|<request id>", or ""
    ARGV[6] retentionMs (uint) how long answers are remembered (at least)
    ARGV[7] maxEntries (uint) most answers remembered per pool
    ARGV[8] holdMs (uint)     how long the claim may be held before it comes back (0: no hold)

  Output -> PickedUp:
    { 1, resource id, token, claimed at, attributes JSON }   taken
    { 0 }                                                    still waiting (peek)
    { -1 }                                                   left the line / gave back / gone
]]
local rcall = redis.call
--@include publish
--@include nowMs
--@include claimRecord
--@include placeResource
--@include mergeAttrs
--@include remember

local k = K
local claimId, mode, channel, pool = A.claimId, A.mode, A.channel, A.pool

local assignment = rcall('HGET', k.assigned, claimId)
if assignment then
  local id, token = string.match(assignment, '^([^|]*)|(%d+)|')
  local claim = claimRecord(rcall('HGET', k.claims, id))
  rcall('HDEL', k.assigned, claimId)
  if not claim or claim.token ~= token then
    return { -1 }
  end
  if mode ~= 'abandon' then
    local now = nowMs()
    local holdMs = A.holdMs
    if holdMs > 0 then rcall('ZADD', K.holds, now + holdMs, id .. '|' .. token) end
    local answer = { 1, id, token, claim.at, mergeAttrs(rcall('HGET', k.resources, id), claim.attrs) }
    remember(K.requests, K.answers, A.request, answer, now, A.retentionMs, A.maxEntries)
    return answer
  end
  rcall('ZREM', k.claimed, id)
  rcall('HDEL', k.claims, id)
  placeResource(k, id, nowMs(), channel, pool, true)
  publish(channel, 'C|' .. pool)
  return { -1 }
end
if mode == 'peek' and rcall('ZSCORE', k.line, claimId) then
  return { 0 }
end
if rcall('ZREM', k.line, claimId) == 1 then
  rcall('HDEL', k.lineinfo, claimId)
  if rcall('ZCARD', k.line) == 0 then rcall('DEL', k.scaleup) end
  publish(channel, 'C|' .. pool)
end
return { -1 }
