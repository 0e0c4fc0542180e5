--[[
  heartbeatLeases: extends each listed lease still held with its token to now + the lease's
  timeout, and records the worker as alive in the queue (added only when it holds a lease
  there: a heartbeat naming unknown queues creates no key). A lease whose token does not
  match (or that no longer exists) is lost; it is not touched.

  Input:
    KEYS[1] working    ZSET name -> lease deadline (ms)
    KEYS[2] leases     HASH name -> "token|worker|acquired_at|timeout_ms"
    KEYS[3] workers    ZSET worker id -> last seen (ms)

    ARGV[1] worker     worker id of the caller
    ARGV[2..] pairs    name, token

  Output:
    { deadline or -1 per pair, in order }
]]
local rcall = redis.call
--@include nowMs
--@include parseLease

local workingKey, leasesKey, workersKey = KEYS[1], KEYS[2], KEYS[3]
local now = nowMs()
local out = {}
local held = false
for i = 2, #ARGV, 2 do
  local name, token = ARGV[i], ARGV[i + 1]
  local lease = parseLease(rcall('HGET', leasesKey, name))
  if lease and lease.token == token then
    local deadline = now + lease.timeout
    rcall('ZADD', workingKey, 'XX', deadline, name)
    out[#out + 1] = deadline
    held = true
  else
    out[#out + 1] = -1
  end
end
if held then
  rcall('ZADD', workersKey, now, ARGV[1])
else
  rcall('ZADD', workersKey, 'XX', now, ARGV[1])
end
return out
