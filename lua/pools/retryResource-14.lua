--[[
  retryResource: offers a dead-lettered resource again, with the attributes it was offered
  with: to the first claim in line, else the back of the ready queue.

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

    ARGV[1] id (str)         resource id
    ARGV[2] channel (str)    where to announce: "P|S <pool events channel>" or ""
    ARGV[3] pool (str)       pool name

  Output -> Int:
    1 put back; 0 not dead-lettered here
]]
local rcall = redis.call
--@include publish
--@include nowMs
--@include claimRecord
--@include placeResource

local k = K
local id, channel, pool = A.id, A.channel, A.pool
local info = rcall('HGET', k.dlqinfo, id)
if rcall('ZREM', k.dlq, id) == 0 then
  return 0
end
rcall('HDEL', k.dlqinfo, id)
local attrs = '{}'
if info then
  local decoded = cjson.decode(info)
  if type(decoded['attributes']) == 'table' and next(decoded['attributes']) ~= nil then
    attrs = cjson.encode(decoded['attributes'])
  end
end
rcall('HSET', k.resources, id, attrs)
placeResource(k, id, nowMs(), channel, pool, false)
publish(channel, 'C|' .. pool)
return 1
