--[[
  cancelRun: marks an agent's current lease so that its run ends at the holder's next
  heartbeat (heartbeatLeases). Marking twice is harmless.

  Input:
    KEYS of QueueKeys
    KEYS[1] defs     HASH name -> definition JSON
    KEYS[2] leases   HASH name -> "token|worker|acquired_at|timeout_ms[|flags|progress]"

    ARGV[1] name (str)  agent name

  Output -> Int:
    -1 no such agent; 0 not running; otherwise the marked lease's token
]]
local rcall = redis.call
--@include leaseRecord

local defsKey, leasesKey, name = K.defs, K.leases, A.name
if rcall('HEXISTS', defsKey, name) == 0 then return -1 end
local lease = parseLease(rcall('HGET', leasesKey, name))
if not lease then return 0 end
if not lease.cancel then
  rcall('HSET', leasesKey, name, rewriteLease(lease, leaseFlags(true, lease.watch), lease.progress))
end
return tonumber(lease.token)
