--[[
  pageOutbox: the oldest outbox entry of this queue written at or before `before`, its result
  record, and a page of the children its finish releases ("<children>:<parent>|<seq>", in
  order). Read only.

  Input:
    KEYS[1] outbox     ZSET "<parent>|<seq>" -> written at (ms)
    KEYS[2] outboxres  HASH "<parent>|<seq>" -> result record
    KEYS[3] children   base of the children sets

    ARGV[1] before     only entries written at or before this (ms); "+inf" for any
    ARGV[2] limit      most children in the page

  Output: {} when there is no such entry, else { member, record, child... } (each child
          "<child queue>|<child>")
]]
local rcall = redis.call
--@include memberKey
local entry = rcall('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, 1)
if #entry == 0 then return {} end
local member = entry[1]
local out = { member, rcall('HGET', KEYS[2], member) or '' }
for _, child in ipairs(rcall('ZRANGE', memberKey(KEYS[3], member), 0, tonumber(ARGV[2]) - 1)) do
  out[#out + 1] = child
end
return out
