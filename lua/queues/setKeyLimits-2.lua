--[[
  setKeyLimits: replaces one key's weight and overrides in a queue (AdminService.SetKeyLimits):
  its record "key|<key>" in the limits hash, "weight|concurrency|rate|burst" (a part "" for the
  queue's default), read by acquireAgents and keyedOrder; an empty record removes it, and the key
  takes the queue's defaults again. The index (a ZSET of the keys with a record) lists them in
  key order, and "key_limits" in the limits hash counts them (acquireAgents reads the records
  only while there are any). A key's bucket left without any rate is dropped (a bucket set anew
  starts full). Announces the queue: waiting Acquires may now be granted.

  Input:
    KEYS of QueueKeys
    KEYS[1] limits     HASH flow control: "key|<key>", "key_limits", "bucket|<key>", key_rate
    KEYS[2] keylimits  ZSET key -> 0: the keys with a record, for listing in key order

    ARGV[1] key (str)       the key (Agent.key)
    ARGV[2] record (str)    "weight|concurrency|rate|burst", or "" to remove the key's record
    ARGV[3] channel (str)   where to announce: "P|S <wake-up channel>" or ""
    ARGV[4] queue (str)     queue name, published on channel

  Output -> Pair:
    { 1 if the key had a record before, else 0; 1 when a recount of the keys' lease counts (or
      a drop of them) is under way, which the caller steps to its end (recountKeys), else 0 }
    The first record where no limit counted keys' leases starts a recount; the last one
    removed where key_concurrency does not count them, a drop (countsKeys, countingChanged).
]]
local rcall = redis.call
--@include publish
--@include countsKeys
--@include countingChanged

local limitsKey, indexKey = K.limits, K.keylimits
local key, record, channel, queue = A.key, A.record, A.channel, A.queue
local had = rcall('HEXISTS', limitsKey, 'key|' .. key)
local before = rcall('HMGET', limitsKey, 'key_concurrency', 'key_limits')
if record == '' then
  rcall('HDEL', limitsKey, 'key|' .. key)
  rcall('ZREM', indexKey, key)
else
  rcall('HSET', limitsKey, 'key|' .. key, record)
  rcall('ZADD', indexKey, 0, key)
end
if not string.match(record, '^%d*|%d*|[^|]+|') and rcall('HEXISTS', limitsKey, 'key_rate') == 0 then
  rcall('HDEL', limitsKey, 'bucket|' .. key)
end
local n = rcall('ZCARD', indexKey)
if n > 0 then
  rcall('HSET', limitsKey, 'key_limits', n)
else
  rcall('HDEL', limitsKey, 'key_limits')
end
rcall('HDEL', limitsKey, 'blocked')
publish(channel, queue)
return { had, countingChanged(limitsKey, countsKeys(before[1], before[2]), countsKeys(before[1], n)) }
