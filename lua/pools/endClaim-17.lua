--[[
  endClaim: ends a claim presented with its token. reuse: the resource is placed again (to the
  next claim in line, else the back of the ready queue); giveback: the same, but to the front
  (its claimer never got it); return: it leaves the pool until offered again; fail: it moves to the pool's dead-letter queue with the error and its
  context. A stale or unknown token changes nothing. Ending a claim drops its hold.

  Request field: for reuse, return and fail, a remembered answer (a retry of a call already
  applied) is returned and changes nothing, and an applied call is remembered. For giveback it
  is the claim's own field, forgotten with the claim (its claimer never got the answer, so a
  retry of that Claim claims afresh).

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

    ARGV[1] id (str)         resource id
    ARGV[2] token (str)      the claim's token
    ARGV[3] action (str)     "reuse", "giveback", "return" or "fail"
    ARGV[4] error (str)      failure description (fail)
    ARGV[5] channel (str)    where to announce: "P|S <pool events channel>" or ""
    ARGV[6] pool (str)       pool name
    ARGV[7] dlqTtlMs (uint)   dead-letter TTL (0: none)
    ARGV[8] dlqMax (uint)     dead-letter queue size bound (0: none)
    ARGV[9] request (str)    "<action>|<id>|<token>|<request id>", the claim's field (giveback), or ""
    ARGV[10] retentionMs (uint) how long answers are remembered (at least)
    ARGV[11] maxEntries (uint) most answers remembered per pool

  Output -> Int:
    { -1 }             LEASE_LOST
    { 0 }              done (or a retry's first answer)
]]
local rcall = redis.call
--@include publish
--@include nowMs
--@include claimRecord
--@include placeResource
--@include trimDeadLetters
--@include recall
--@include remember

local k = K
local id, token, action, message, channel, pool = A.id, A.token, A.action, A.error, A.channel, A.pool
local request = A.request
if action ~= 'giveback' then
  local again = recall(K.answers, request)
  if again then return again end
end
local claim = claimRecord(rcall('HGET', k.claims, id))
if not claim or claim.token ~= token then
  return { -1 }
end
local now = nowMs()
rcall('ZREM', k.claimed, id)
rcall('HDEL', k.claims, id)
rcall('ZREM', K.holds, id .. '|' .. token)
if action == 'reuse' or action == 'giveback' then
  placeResource(k, id, now, channel, pool, action == 'giveback')
elseif action == 'fail' then
  rcall('ZADD', k.dlq, now, id)
  rcall('HSET', k.dlqinfo, id, cjson.encode({
    source = 'pool', pool = pool, id = id, error = message, failed_at = now, claimer = claim.claimer,
    claimed_at = claim.at, token = claim.token,
    attributes = cjson.decode(rcall('HGET', k.resources, id) or '{}'),
  }))
  rcall('HDEL', k.resources, id)
  rcall('HINCRBY', k.stats, 'dead_lettered', 1)
  trimDeadLetters(k.dlq, k.dlqinfo, now, A.dlqTtlMs, A.dlqMax, nil, false)
else
  rcall('HDEL', k.resources, id)
end
publish(channel, 'C|' .. pool)
if action == 'giveback' then
  if request ~= '' then
    rcall('ZREM', K.requests, request)
    rcall('HDEL', K.answers, request)
  end
else
  remember(K.requests, K.answers, request, { 0 }, now, A.retentionMs, A.maxEntries)
end
return { 0 }
