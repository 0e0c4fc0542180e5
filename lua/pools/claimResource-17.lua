--[[
  claimResource: takes the oldest idle resource if no live claim waits before this one;
  otherwise (with a wait) joins the pool's line, unless the line is full. Claims in line whose
  wait ended are dropped from the head first. Raises the scale-up signal, once, when a claim
  has to wait with nothing idle. With a hold, a resource taken is given back by the sweeper
  (reclaimAssignments) once the hold ends unreturned. With a request field whose answer is
  remembered (a retry of a Claim that took a resource), returns that answer and changes
  nothing; a resource taken with a request field is remembered (a claim that waits in line is
  remembered when it is picked up).

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

    ARGV[1] claimer (str)    claimer id
    ARGV[2] attrs (str)      attributes JSON to attach to the resource
    ARGV[3] waitMs (uint)     how long the claim may wait in line (0: do not wait)
    ARGV[4] maxLine (uint)    most claims the line holds
    ARGV[5] channel (str)    where to announce: "P|S <pool events channel>" or ""
    ARGV[6] pool (str)       pool name
    ARGV[7] request (str)    request field "claim|<claimer>|<request id>", or "" for none
    ARGV[8] retentionMs (uint) how long answers are remembered (at least)
    ARGV[9] maxEntries (uint) most answers remembered per pool
    ARGV[10] holdMs (uint)    how long the claim may be held before it comes back (0: no hold)

  Output -> ClaimReply:
    { 1, resource id, token, claimed at, attributes JSON }   claimed (or a retry's first answer)
    { 0 }                                                    nothing idle, no wait
    { 2, claim id, scale-up raised (1/0) }                   waiting in line
    { -2 }                                                   line full
]]
local rcall = redis.call
--@include claimRecord
--@include publish
--@include nowMs
--@include mergeAttrs
--@include recall
--@include remember

local k = K
local claimer, attrs, waitMs, maxLine = A.claimer, A.attrs, A.waitMs, A.maxLine
local channel, pool, request, holdMs = A.channel, A.pool, A.request, A.holdMs
local again = recall(K.answers, request)
if again then return again end
local now = nowMs()

-- Claims whose wait ended can be ahead in line: drop them.
while true do
  local head = rcall('ZRANGE', k.line, 0, 0)[1]
  if not head then break end
  local deadline = tonumber(string.match(rcall('HGET', k.lineinfo, head) or '', '^[^|]*|(%d+)|') or '0')
  if deadline >= now then break end
  rcall('ZREM', k.line, head)
  rcall('HDEL', k.lineinfo, head)
end

-- A paused pool hands out nothing: the claim waits in line (or gets nothing) like one that
-- found nothing idle, without raising the scale-up signal.
local paused = rcall('HGET', k.limits, 'paused') == '1'
if rcall('ZCARD', k.line) == 0 and not paused then
  local id = rcall('ZRANGE', k.idle, 0, 0)[1]
  if id then
    rcall('ZREM', k.idle, id)
    rcall('HDEL', k.idleat, id)
    local token = string.format('%d', rcall('INCR', k.seq))
    rcall('ZADD', k.claimed, now, id)
    rcall('HSET', k.claims, id, encodeClaim(token, claimer, now, attrs))
    publish(channel, 'C|' .. pool)
    rcall('HINCRBY', k.stats, 'claimed', 1)
    if holdMs > 0 then rcall('ZADD', K.holds, now + holdMs, id .. '|' .. token) end
    local answer = { 1, id, token, now, mergeAttrs(rcall('HGET', k.resources, id), attrs) }
    remember(K.requests, K.answers, request, answer, now, A.retentionMs, A.maxEntries)
    return answer
  end
  rcall('DEL', k.scaleup)
end
if waitMs <= 0 then
  return { 0 }
end
if rcall('ZCARD', k.line) >= maxLine then
  return { -2 }
end
local claimId = string.format('%020d', rcall('INCR', k.seq))
rcall('ZADD', k.line, now, claimId)
rcall('HSET', k.lineinfo, claimId, claimer .. '|' .. string.format('%d', now + waitMs) .. '|' .. attrs)
local raised = 0
if rcall('ZCARD', k.idle) == 0 and rcall('SET', k.scaleup, '1', 'NX') then
  raised = 1
end
publish(channel, 'C|' .. pool)
return { 2, claimId, raised }
