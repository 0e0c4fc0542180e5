--[[
  setLimits: replaces a queue's concurrency and rate limits, over the whole queue and per key,
  and its priority aging; the paused flag stays as it is. An absent limit is removed. A rate limit set anew starts with
  a full bucket; a changed one keeps what its bucket holds, up to the new burst (per-key
  buckets are clamped to the new burst by acquireAgents as it reads them). Announces the queue:
  waiting Acquires may now be granted, or must learn their new wait.

  Input:
    KEYS[1] limits   HASH paused, concurrency, rate, burst, tokens, at, blocked, key_concurrency,
                     key_rate, key_burst, priority_aging, group (and acquireAgents' per-key
                     state)

    ARGV[1] concurrency (str)     most leases held at once, "" for none
    ARGV[2] rate (str)            grants per second (the bucket's refill), "" for none
    ARGV[3] burst (str)           most the bucket holds (with a rate)
    ARGV[4] channel (str)         where to announce: "P|S <wake-up channel>" or ""
    ARGV[5] queue (str)           queue name, published on channel
    ARGV[6] keyConcurrency (str)  most leases held at once per key, "" for none
    ARGV[7] keyRate (str)         grants per second per key, "" for none
    ARGV[8] keyBurst (str)        most each key's bucket holds (with a key rate)
    ARGV[9] agingMs (str)         priority aging: how long an agent may be due before it goes
                                  ahead of every priority (ms), "" for none
    ARGV[10] group (str)          the shared concurrency group the queue joins ("group"), ""
                                  for none: its next grants count there (leases held keep the
                                  group they were granted under: groupLimits)

  Output -> Int: 1 when a recount of the keys' lease counts (or a drop of them) is under way,
    which the caller steps to its end (recountKeys), else 0. A key_concurrency set where no
    limit counted keys' leases starts a recount; removed where nothing else counts them, a drop
    of the counts (countsKeys, countingChanged).
]]
local rcall = redis.call
--@include publish
--@include countsKeys
--@include countingChanged

local limitsKey = K.limits
local before = rcall('HMGET', limitsKey, 'key_concurrency', 'key_limits')
local concurrency, rate, burst, channel, queue = A.concurrency, A.rate, A.burst, A.channel, A.queue
if concurrency == '' then
  rcall('HDEL', limitsKey, 'concurrency')
else
  rcall('HSET', limitsKey, 'concurrency', concurrency)
end
if rate == '' then
  rcall('HDEL', limitsKey, 'rate', 'burst', 'tokens', 'at')
else
  local tokens = tonumber(rcall('HGET', limitsKey, 'tokens') or burst)
  if tokens > tonumber(burst) then rcall('HSET', limitsKey, 'tokens', burst) end
  rcall('HSET', limitsKey, 'rate', rate, 'burst', burst)
end
if A.keyConcurrency == '' then
  rcall('HDEL', limitsKey, 'key_concurrency')
else
  rcall('HSET', limitsKey, 'key_concurrency', A.keyConcurrency)
end
if A.keyRate == '' then
  rcall('HDEL', limitsKey, 'key_rate', 'key_burst')
else
  rcall('HSET', limitsKey, 'key_rate', A.keyRate, 'key_burst', A.keyBurst)
end
if A.agingMs == '' then
  rcall('HDEL', limitsKey, 'priority_aging')
else
  rcall('HSET', limitsKey, 'priority_aging', A.agingMs)
end
if A.group == '' then
  rcall('HDEL', limitsKey, 'group')
else
  rcall('HSET', limitsKey, 'group', A.group)
end
rcall('HDEL', limitsKey, 'blocked')
publish(channel, queue)
return countingChanged(limitsKey, countsKeys(before[1], before[2]), countsKeys(A.keyConcurrency, before[2]))
