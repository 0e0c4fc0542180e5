--[[
  setLimits: replaces a queue's concurrency and rate limits, over the whole queue and per key,
  and its priority aging; the paused flag stays as it is. An absent limit is removed. A rate limit set anew starts with
  a full bucket; a changed one keeps what its bucket holds, up to the new burst (per-key
  buckets are clamped to the new burst by acquireAgents as it reads them). Announces the queue:
  waiting Acquires may now be granted, or must learn their new wait.

  Input:
    KEYS[1] limits   HASH paused, concurrency, rate, burst, tokens, at, blocked, key_concurrency,
                     key_rate, key_burst, priority_aging (and acquireAgents' per-key state)

    ARGV[1] concurrency  most leases held at once, "" for none
    ARGV[2] rate         grants per second (the bucket's refill), "" for none
    ARGV[3] burst        most the bucket holds (with a rate)
    ARGV[4] channel      where to announce: "P|S <wake-up channel>" or ""
    ARGV[5] queue        queue name, published on channel
    ARGV[6] keyConcurrency  most leases held at once per key, "" for none
    ARGV[7] keyRate      grants per second per key, "" for none
    ARGV[8] keyBurst     most each key's bucket holds (with a key rate)
    ARGV[9] agingMs      priority aging: how long an agent may be due before it goes ahead of
                         every priority (ms), "" for none

  Output: 1
]]
local rcall = redis.call
--@include publish

local limitsKey = KEYS[1]
local concurrency, rate, burst, channel, queue = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
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
if ARGV[6] == '' then
  rcall('HDEL', limitsKey, 'key_concurrency')
else
  rcall('HSET', limitsKey, 'key_concurrency', ARGV[6])
end
if ARGV[7] == '' then
  rcall('HDEL', limitsKey, 'key_rate', 'key_burst')
else
  rcall('HSET', limitsKey, 'key_rate', ARGV[7], 'key_burst', ARGV[8])
end
if ARGV[9] == '' then
  rcall('HDEL', limitsKey, 'priority_aging')
else
  rcall('HSET', limitsKey, 'priority_aging', ARGV[9])
end
rcall('HDEL', limitsKey, 'blocked')
publish(channel, queue)
return 1
