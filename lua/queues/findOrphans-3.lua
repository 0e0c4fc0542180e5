--[[
  findOrphans: lists leases held by workers of this queue that have not been seen (Acquire or
  Heartbeat) for thresholdMs, scanning the lease records from cursor, about limit per call.
  Read-only: reapLeases re-checks each one before acting.

  Input:
    KEYS of QueueKeys
    KEYS[1] leases     HASH name -> "token|worker|acquired_at|timeout_ms"
    KEYS[2] workers    ZSET worker id -> last seen (ms)
    KEYS[3] working    ZSET name -> lease deadline (ms)

    ARGV[1] thresholdMs (uint)  silence after which a worker is dead
    ARGV[2] cursor (str)        HSCAN cursor ("0" to start)
    ARGV[3] limit (uint)        HSCAN COUNT

  Output -> OrphanPage:
    { now, nextCursor, deadWorkers, (name, token, worker)* }
    nextCursor "0" when the scan is complete; with no dead worker nothing is scanned.
]]
local rcall = redis.call
--@include nowMs
--@include leaseRecord

local leasesKey, workersKey, workingKey = K.leases, K.workers, K.working
local thresholdMs, cursor, limit = A.thresholdMs, A.cursor, A.limit
local now = nowMs()
local dead = {}
local deadCount = 0
for _, w in ipairs(rcall('ZRANGEBYSCORE', workersKey, '-inf', '(' .. (now - thresholdMs))) do
  dead[w] = true
  deadCount = deadCount + 1
end
if deadCount == 0 then
  return { now, '0', 0 }
end
local scan = rcall('HSCAN', leasesKey, cursor, 'COUNT', limit)
local out = { now, scan[1], deadCount }
local entries = scan[2]
for i = 1, #entries, 2 do
  local lease = parseLease(entries[i + 1])
  if lease and dead[lease.worker] and rcall('ZSCORE', workingKey, entries[i]) then
    out[#out + 1] = entries[i]
    out[#out + 1] = lease.token
    out[#out + 1] = lease.worker
  end
end
return out
