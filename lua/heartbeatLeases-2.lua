--[[
  heartbeatLeases: extends each listed lease still held with its token to now + the lease's
  timeout. A lease whose token does not match (or that no longer exists) is lost; it is not
  touched.

  Input:
    KEYS[1] working    ZSET name -> lease deadline (ms)
    KEYS[2] leases     HASH name -> "token|worker|acquired_at|timeout_ms"

    ARGV[1..] pairs    name, token

  Output:
    { deadline or -1 per pair, in order }
]]
local rcall = redis.call
--@include nowMs
--@include parseLease

local workingKey, leasesKey = KEYS[1], KEYS[2]
local now = nowMs()
local out = {}
for i = 1, #ARGV, 2 do
  local name, token = ARGV[i], ARGV[i + 1]
  local lease = parseLease(rcall('HGET', leasesKey, name))
  if lease and lease.token == token then
    local deadline = now + lease.timeout
    rcall('ZADD', workingKey, 'XX', deadline, name)
    out[#out + 1] = deadline
  else
    out[#out + 1] = -1
  end
end
return out
