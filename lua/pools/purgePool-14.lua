--[[
  purgePool: one page of the auto-purge of a pool. Finds, and unless dryRun acts on: claims
  held longer than maxClaimAgeMs (the claim ends, the resource is dead-lettered, reason
  PURGED); idle resources older than maxIdleAgeMs (dead-lettered); offered attributes of a
  resource that is neither idle nor claimed, idle-since times and line entries with nothing
  behind them (orphaned metadata, removed); dead letters past their TTL or beyond the size
  bound (removed). Claims and dead letters are handled on the first page (cursor "0");
  offered attributes, line entries and idle-since times are scanned page by page (HSCAN of
  `limit`), so no call's work grows with the size of the pool.

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

    ARGV[1] dryRun (bool)          "1": report only
    ARGV[2] maxIdleAgeMs (uint)    idle longer is stale (0: never)
    ARGV[3] maxClaimAgeMs (uint)   claimed longer is stale (0: never)
    ARGV[4] dlqTtlMs (uint)        dead-letter TTL (0: none)
    ARGV[5] dlqMax (uint)          dead-letter size bound (0: none)
    ARGV[6] cursor (str)          "0" to start; else the cursor the page before returned
    ARGV[7] limit (uint)           entries per page
    ARGV[8] channel (str)         where to announce: "P|S <pool events channel>" or ""
    ARGV[9] pool (str)            pool name

  Output -> PurgePage:
    { nextCursor, (id, reason, action)* }   action DEAD_LETTERED | REMOVED
]]
local rcall = redis.call
--@include publish
--@include nowMs
--@include claimRecord
--@include trimDeadLetters

local k = K
local dryRun = A.dryRun
local maxIdleAgeMs, maxClaimAgeMs = A.maxIdleAgeMs, A.maxClaimAgeMs
local dlqTtlMs, dlqMax = A.dlqTtlMs, A.dlqMax
local cursor, limit, channel, pool = A.cursor, A.limit, A.channel, A.pool
local now = nowMs()
local out = {}
local changed = false
local function found(id, reason, action)
  out[#out + 1] = id
  out[#out + 1] = reason
  out[#out + 1] = action
end
local function deadLetter(id, reason, claimer)
  rcall('ZADD', k.dlq, now, id)
  rcall('HSET', k.dlqinfo, id, cjson.encode({
    source = 'pool', pool = pool, id = id, error = reason, error_class = 'PURGED', failed_at = now,
    claimer = claimer, attributes = cjson.decode(rcall('HGET', k.resources, id) or '{}'),
  }))
  rcall('HDEL', k.resources, id)
  rcall('HINCRBY', k.stats, 'dead_lettered', 1)
  changed = true
end

if cursor == '0' then
  if maxClaimAgeMs > 0 then
    local old = rcall('ZRANGEBYSCORE', k.claimed, '-inf', '(' .. (now - maxClaimAgeMs), 'WITHSCORES', 'LIMIT', 0, limit)
    for i = 1, #old, 2 do
      local id, at = old[i], tonumber(old[i + 1])
      local reason = 'claimed for ' .. math.floor((now - at) / 1000) .. ' s (max ' .. math.floor(maxClaimAgeMs / 1000) .. ' s)'
      found(id, reason, 'DEAD_LETTERED')
      if not dryRun then
        local claim = claimRecord(rcall('HGET', k.claims, id))
        rcall('ZREM', k.claimed, id)
        rcall('HDEL', k.claims, id)
        deadLetter(id, reason, claim and claim.claimer or '')
      end
    end
  end
  for _, id in ipairs(trimDeadLetters(k.dlq, k.dlqinfo, now, dlqTtlMs, dlqMax, nil, dryRun)) do
    found(id, 'dead letter past its TTL or beyond the size bound', 'REMOVED')
  end
end

-- The pages: offered attributes (cursor "<n>"), then line entries ("l<n>"), then idle-since
-- times ("i<n>"), each an HSCAN of `limit`; "0" again when all three are done.
local phase, at = string.match(cursor, '^([li]?)(%d+)$')
if not phase then return redis.error_reply('ERR purgePool: bad cursor ' .. cursor) end
local nextCursor
if phase == '' then
  local scan = rcall('HSCAN', k.resources, at, 'COUNT', limit)
  local entries = scan[2]
  for i = 1, #entries, 2 do
    local id = entries[i]
    if rcall('ZSCORE', k.idle, id) then
      local since = tonumber(rcall('HGET', k.idleat, id) or tostring(now))
      if maxIdleAgeMs > 0 and now - since > maxIdleAgeMs then
        local reason = 'idle for ' .. math.floor((now - since) / 1000) .. ' s (max ' .. math.floor(maxIdleAgeMs / 1000) .. ' s)'
        found(id, reason, 'DEAD_LETTERED')
        if not dryRun then
          rcall('ZREM', k.idle, id)
          rcall('HDEL', k.idleat, id)
          deadLetter(id, reason, '')
        end
      end
    elseif not rcall('ZSCORE', k.claimed, id) then
      found(id, 'offered attributes of a resource neither idle nor claimed', 'REMOVED')
      if not dryRun then rcall('HDEL', k.resources, id) end
    end
  end
  nextCursor = scan[1] == '0' and 'l0' or scan[1]
elseif phase == 'l' then
  local scan = rcall('HSCAN', k.lineinfo, at, 'COUNT', limit)
  local entries = scan[2]
  for i = 1, #entries, 2 do
    local claimId = entries[i]
    if not rcall('ZSCORE', k.line, claimId) then
      found(claimId, 'line entry with no place in line', 'REMOVED')
      if not dryRun then rcall('HDEL', k.lineinfo, claimId) end
    end
  end
  nextCursor = scan[1] == '0' and 'i0' or ('l' .. scan[1])
else
  local scan = rcall('HSCAN', k.idleat, at, 'COUNT', limit)
  local entries = scan[2]
  for i = 1, #entries, 2 do
    local id = entries[i]
    if not rcall('ZSCORE', k.idle, id) then
      found(id, 'idle-since time of a resource that is not idle', 'REMOVED')
      if not dryRun then rcall('HDEL', k.idleat, id) end
    end
  end
  nextCursor = scan[1] == '0' and '0' or ('i' .. scan[1])
end
if changed then publish(channel, 'C|' .. pool) end
local result = { nextCursor }
for _, v in ipairs(out) do result[#result + 1] = v end
return result
