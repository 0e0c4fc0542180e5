--[[
  setGroupLimits: replaces a shared concurrency group's limits (AdminService.SetGroupLimits),
  kept in the group's hash beside its counts (groupLimits): at most `concurrency` leases held at
  once over every member queue, a token bucket of `rate` per second holding `burst`, and at most
  `keyConcurrency` leases per Agent.key over every member queue. An absent limit is removed; a
  rate set anew starts with a full bucket, a changed one keeps what it holds up to the new burst.
  Every member queue held back by the group is announced (the new limits may let it go on).

  Input:
    KEYS[1] group    HASH concurrency, rate, burst, key_concurrency, tokens, at, "created";
                     held, "held|<key>" (counts, kept as they are)
    KEYS[2] blocked  SET "<queue>|<channel>": member queues held back by the group

    ARGV[1] concurrency (str)     most leases held at once, "" for none
    ARGV[2] rate (str)            grants per second (the bucket's refill), "" for none
    ARGV[3] burst (str)           most the bucket holds (with a rate)
    ARGV[4] keyConcurrency (str)  most leases held at once per key, "" for none

  Output -> Int: 1 if the group existed before, else 0
]]
local rcall = redis.call
--@include publish

local groupKey = K.group
local existed = rcall('HSETNX', groupKey, 'created', '1') == 0 and 1 or 0
if A.concurrency == '' then
  rcall('HDEL', groupKey, 'concurrency')
else
  rcall('HSET', groupKey, 'concurrency', A.concurrency)
end
if A.rate == '' then
  rcall('HDEL', groupKey, 'rate', 'burst', 'tokens', 'at')
else
  local tokens = tonumber(rcall('HGET', groupKey, 'tokens') or A.burst)
  if tokens > tonumber(A.burst) then rcall('HSET', groupKey, 'tokens', A.burst) end
  rcall('HSET', groupKey, 'rate', A.rate, 'burst', A.burst)
end
if A.keyConcurrency == '' then
  rcall('HDEL', groupKey, 'key_concurrency')
else
  rcall('HSET', groupKey, 'key_concurrency', A.keyConcurrency)
end
local blocked = rcall('SMEMBERS', K.blocked)
if #blocked > 0 then
  rcall('DEL', K.blocked)
  for _, entry in ipairs(blocked) do
    local q, ch = string.match(entry, '^([^|]*)|(.*)$')
    if q then publish(ch, q) end
  end
end
return existed
