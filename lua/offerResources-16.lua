--[[
  offerResources: makes resources idle, in order: each is handed to the first live claim in the
  pool's line, or appended to the ready queue. A resource already idle or claimed is left alone
  (deduplicated by id); a dead-lettered one is taken out of the dead-letter queue. With a
  request field whose answer is remembered (a retry of an Offer already applied), returns that
  answer and changes nothing.

  Input:
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

    ARGV[1] channel    where to announce: "P|S <pool events channel>" or ""
    ARGV[2] pool       pool name
    ARGV[3] request    request field "offer|<request id>", or "" for none
    ARGV[4] retentionMs how long answers are remembered (at least)
    ARGV[5] maxEntries most answers remembered per pool
    ARGV[6..] pairs    resource id, attributes JSON

  Output:
    { idle, handed, duplicates }   (a retry's: the first call's)
]]
local rcall = redis.call
--@include publish
--@include nowMs
--@include poolKeys
--@include placeResource
--@include recall
--@include remember

local k = poolKeys()
local channel, pool, request = ARGV[1], ARGV[2], ARGV[3]
local again = recall(KEYS[16], request)
if again then return again end
local now = nowMs()
local idle, handed, duplicates = 0, 0, 0
for i = 6, #ARGV, 2 do
  local id, attrs = ARGV[i], ARGV[i + 1]
  if rcall('ZSCORE', k.idle, id) or rcall('ZSCORE', k.claimed, id) then
    duplicates = duplicates + 1
  else
    rcall('ZREM', k.dlq, id)
    rcall('HDEL', k.dlqinfo, id)
    rcall('HSET', k.resources, id, attrs)
    if placeResource(k, id, now, channel, pool, false) == 'handed' then
      handed = handed + 1
    else
      idle = idle + 1
    end
  end
end
rcall('HINCRBY', k.stats, 'offered', idle + handed)
publish(channel, 'C|' .. pool)
remember(KEYS[15], KEYS[16], request, { idle, handed, duplicates }, now, tonumber(ARGV[4]), tonumber(ARGV[5]))
return { idle, handed, duplicates }
