--[[
  readKeyLimits: reads keys' records (setKeyLimits) with the leases each key holds now and its
  bucket: the given keys, or one page of the keys with a record, in key order. Changes nothing.

  Input:
    KEYS of QueueKeys
    KEYS[1] limits     HASH flow control: "key|<key>", "held|<key>", "bucket|<key>"
    KEYS[2] keylimits  ZSET key -> 0: the keys with a record

    ARGV[1] after (str)      "" to read the keys listed; else where the page starts, as
                             ZRANGEBYLEX takes it ("-" for the first page, "(<key>" after a key)
    ARGV[2] count (uint)     most keys on the page
    ARGV[3..] listed (items) the keys to read (with after "")
      key (str)              a flow-control key

  Output -> KeyLimitsEntries:
    { (key, record or "", held, bucket "tokens|at" or "")* }
]]
local rcall = redis.call

local limitsKey, indexKey = K.limits, K.keylimits
local keys = {}
if A.after == '' then
  for _, item in ipairs(A.listed) do keys[#keys + 1] = item.key end
else
  keys = rcall('ZRANGEBYLEX', indexKey, A.after, '+', 'LIMIT', 0, A.count)
end
if #keys == 0 then return {} end
local fields = {}
for j, key in ipairs(keys) do fields[j] = 'key|' .. key end
local recs = rcall('HMGET', limitsKey, unpack(fields))
for j, key in ipairs(keys) do fields[j] = 'held|' .. key end
local held = rcall('HMGET', limitsKey, unpack(fields))
for j, key in ipairs(keys) do fields[j] = 'bucket|' .. key end
local buckets = rcall('HMGET', limitsKey, unpack(fields))
local out = {}
for j, key in ipairs(keys) do
  out[#out + 1] = key
  out[#out + 1] = recs[j] or ''
  out[#out + 1] = tonumber(held[j] or '0')
  out[#out + 1] = buckets[j] or ''
end
return out
