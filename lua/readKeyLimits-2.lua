--[[
  readKeyLimits: reads keys' records (setKeyLimits) with the leases each key holds now and its
  bucket: the given keys, or one page of the keys with a record, in key order. Changes nothing.

  Input:
    KEYS[1] limits     HASH flow control: "key|<key>", "held|<key>", "bucket|<key>"
    KEYS[2] keylimits  ZSET key -> 0: the keys with a record

    ARGV[1] after      "" to read the keys in ARGV[3..]; else where the page starts, as
                       ZRANGEBYLEX takes it ("-" for the first page, "(<key>" after a key)
    ARGV[2] count      most keys on the page
    ARGV[3..] keys     the keys to read (with ARGV[1] = "")

  Output:
    { (key, record or "", held, bucket "tokens|at" or "")* }
]]
local rcall = redis.call

local limitsKey, indexKey = KEYS[1], KEYS[2]
local keys = {}
if ARGV[1] == '' then
  for i = 3, #ARGV do keys[#keys + 1] = ARGV[i] end
else
  keys = rcall('ZRANGEBYLEX', indexKey, ARGV[1], '+', 'LIMIT', 0, tonumber(ARGV[2]))
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
