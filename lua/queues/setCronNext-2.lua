--[[
  setCronNext: records the next fire of a cron agent's run just acquired (Baton computes it from
  the agent's cron expression: the first fire after the run started), for completeAgents and
  heartbeatLeases to schedule the agent there when the run ends. Only while the lease is held.

  Input:
    KEYS of QueueKeys
    KEYS[1] cron     HASH name -> "token|next fire (ms)" of the agent's latest run
    KEYS[2] leases   HASH name -> "token|worker|acquired_at|timeout_ms[|flags|progress]"

    ARGV[1] name (str)     the agent
    ARGV[2] token (uint)   the run's lease token
    ARGV[3] nextMs (int)   its next fire

  Output -> Int:
    the fire recorded before (the one this run was scheduled for), -1 when none, or -2 when the
    lease is no longer held (nothing written)
]]
local rcall = redis.call
--@include leaseRecord

local cronKey, leasesKey, name, token, nextMs = K.cron, K.leases, A.name, A.token, A.nextMs
local lease = rcall('HGET', leasesKey, name)
local held = leaseToken(lease)
if not held or tonumber(held) ~= token then return -2 end
local before = rcall('HGET', cronKey, name)
rcall('HSET', cronKey, name, string.format('%d|%d', token, nextMs))
return tonumber(before and string.match(before, '|(%d+)$') or '-1')
