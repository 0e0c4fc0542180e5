--[[
  findZombies: lists leases whose deadline passed more than graceMs ago (by the Redis clock),
  earliest first, at most limit, skipping the first offset of them (those a sweeper already saw
  and left alone: agents with a longer threshold). Read-only: reapLeases re-checks each one
  before acting.

  Input:
    KEYS of QueueKeys
    KEYS[1] working    ZSET name -> lease deadline (ms)
    KEYS[2] leases     HASH name -> "token|worker|acquired_at|timeout_ms"

    ARGV[1] graceMs (uint)  how far past its deadline a lease must be
    ARGV[2] limit (uint)    most entries to return
    ARGV[3] offset (uint)   how many of the earliest such entries to skip

  Output -> Zombies:
    { now, (name, token, deadline, worker)* }   token "" when the lease record is missing
]]
local rcall = redis.call
--@include nowMs
--@include leaseRecord

local workingKey, leasesKey = K.working, K.leases
local graceMs, limit, offset = A.graceMs, A.limit, A.offset
local now = nowMs()
local out = { now }
local late = rcall('ZRANGEBYSCORE', workingKey, '-inf', '(' .. (now - graceMs), 'WITHSCORES', 'LIMIT', offset, limit)
for i = 1, #late, 2 do
  local lease = parseLease(rcall('HGET', leasesKey, late[i]))
  out[#out + 1] = late[i]
  out[#out + 1] = lease and lease.token or ''
  out[#out + 1] = tonumber(late[i + 1])
  out[#out + 1] = lease and lease.worker or ''
end
return out
