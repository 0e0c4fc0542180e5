--[[
  forgetWorkers: drops workers silent for thresholdMs that hold no lease in this queue any
  more, so the liveness set does not grow without bound (a worker seen again is kept), and
  deletes lease records with no working entry (left by an ended lease; harmless but stale).

  Input:
    KEYS of QueueKeys
    KEYS[1] workers    ZSET worker id -> last seen (ms)
    KEYS[2] leases     HASH name -> "token|worker|acquired_at|timeout_ms"
    KEYS[3] working    ZSET name -> lease deadline (ms)

    ARGV[1] thresholdMs (uint)  silence after which a worker is dead
    ARGV[2] limit (uint)        most lease records to inspect; more and nothing is dropped

  Output -> Int:
    forgotten          how many workers were dropped (0 when there were too many leases)
]]
local rcall = redis.call
--@include nowMs
--@include leaseRecord

local workersKey, leasesKey, workingKey = K.workers, K.leases, K.working
local thresholdMs, limit = A.thresholdMs, A.limit
local now = nowMs()
local dead = rcall('ZRANGEBYSCORE', workersKey, '-inf', '(' .. (now - thresholdMs))
if #dead == 0 or rcall('HLEN', leasesKey) > limit then
  return 0
end
local holding = {}
for _, rec in ipairs(rcall('HVALS', leasesKey)) do
  local lease = parseLease(rec)
  if lease then holding[lease.worker] = true end
end
local forgotten = 0
for _, w in ipairs(dead) do
  if not holding[w] then
    forgotten = forgotten + rcall('ZREM', workersKey, w)
  end
end
-- A lease record with no working entry is garbage: its lease already ended.
for _, name in ipairs(rcall('HKEYS', leasesKey)) do
  if not rcall('ZSCORE', workingKey, name) then rcall('HDEL', leasesKey, name) end
end
return forgotten
