--[[
  resumePool: resumes a paused pool (one shard of a sharded one): what sat idle while claims
  waited in line is handed to them now, oldest resource to the first live claim, as Offer
  would have; then the pool is announced ("C|pool") for its watchers.

  Input:
    KEYS of PoolKeys
    KEYS[1]  idle       ZSET resource id -> ready-queue order (FIFO)
    KEYS[2]  resources  HASH resource id -> attributes JSON
    KEYS[3]  claimed    ZSET resource id -> claimed at (ms)
    KEYS[4]  claims     HASH resource id -> "token|claimer|claimed_at|claim attributes JSON"
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

    ARGV[1] channel (str)   where to announce: "P|S <events channel>" or ""
    ARGV[2] pool (str)      pool name (announcements)

  Output -> Resumed: { 1 if it was paused (0 if not), resources handed to waiting claims }
]]
local rcall = redis.call
--@include publish
--@include nowMs
--@include claimRecord
--@include placeResource

local k = K
local channel, pool = A.channel, A.pool
local changed = rcall('HDEL', k.limits, 'paused')
local now, handed = nowMs(), 0
while rcall('ZCARD', k.line) > 0 do
  local id = rcall('ZRANGE', k.idle, 0, 0)[1]
  if not id then break end
  rcall('ZREM', k.idle, id)
  rcall('HDEL', k.idleat, id)
  if placeResource(k, id, now, channel, pool, true) ~= 'handed' then break end
  handed = handed + 1
end
publish(channel, 'C|' .. pool)
return { changed, handed }
