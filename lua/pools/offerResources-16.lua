--[[
  offerResources: makes resources idle, in order: each is handed to the first live claim in the
  pool's line, or appended to the ready queue. A resource already idle or claimed is left alone
  (deduplicated by id); a dead-lettered one is taken out of the dead-letter queue. With a
  request field whose answer is remembered (a retry of an Offer already applied), returns that
  answer and changes nothing.

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

    ARGV[1] channel (str)    where to announce: "P|S <pool events channel>" or ""
    ARGV[2] pool (str)       pool name
    ARGV[3] request (str)    request field "offer|<request id>", or "" for none
    ARGV[4] retentionMs (uint) how long answers are remembered (at least)
    ARGV[5] maxEntries (uint) most answers remembered per pool
    ARGV[6..] offered (items)  one per resource, in the order offered:
      id (str)         resource id
      attrs (str)      attributes JSON

  Output -> Offered:
    { idle, handed, duplicates }   (a retry's: the first call's)
]]
local rcall = redis.call
--@include publish
--@include nowMs
--@include claimRecord
--@include placeResource
--@include recall
--@include remember

local k = K
local channel, pool, request = A.channel, A.pool, A.request
local again = recall(K.answers, request)
if again then return again end
local now = nowMs()
local idle, handed, duplicates = 0, 0, 0
for _, r in ipairs(A.offered) do
  local id, attrs = r.id, r.attrs
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
remember(K.requests, K.answers, request, { idle, handed, duplicates }, now, A.retentionMs, A.maxEntries)
return { idle, handed, duplicates }
