--[[
  advanceOutbox: records that a page of an outbox entry's children was released (the parent's
  slot). Released children leave the entry's set; a child kept (WAIT on a failure) goes back to
  the parent's live set of children, for its next finish. An entry whose set is empty is done
  and dropped. Replaying a page changes nothing more.

  Input:
    KEYS[1] outbox     ZSET "<parent>|<seq>" -> written at (ms)
    KEYS[2] outboxres  HASH "<parent>|<seq>" -> result record
    KEYS[3] fanout     SET names with children
    KEYS[4] children   base of the children sets

    ARGV[1] member     the outbox entry, "<parent>|<seq>"
    ARGV[2..] pairs    child ("<child queue>|<child>"), "1" released or "0" kept

  Output: how many outbox entries remain (this one included while it is not done)
]]
local rcall = redis.call
--@include memberKey
local outboxKey, outboxresKey, fanoutKey, childrenKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local member = ARGV[1]
local parent = string.match(member, '^(.*)|%d+$')
local frozen = memberKey(childrenKey, member)
for i = 2, #ARGV, 2 do
  if rcall('ZREM', frozen, ARGV[i]) == 1 and ARGV[i + 1] == '0' then
    rcall('ZADD', memberKey(childrenKey, parent), 0, ARGV[i])
    rcall('SADD', fanoutKey, parent)
  end
end
if rcall('EXISTS', frozen) == 1 then return rcall('ZCARD', outboxKey) end
rcall('ZREM', outboxKey, member)
rcall('HDEL', outboxresKey, member)
return rcall('ZCARD', outboxKey)
