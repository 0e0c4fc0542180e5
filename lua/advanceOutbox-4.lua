--[[
  advanceOutbox: records that outbox entries' children were released in their own slots (the
  parents' slot). Released children leave their entry's set; a child kept (WAIT on a failure)
  goes back to the parent's live set of children, for its next finish. An entry whose set is
  empty is done and dropped. Replaying it changes nothing more.

  Input:
    KEYS[1] outbox     ZSET "<parent>|<seq>" -> written at (ms)
    KEYS[2] outboxres  HASH "<parent>|<seq>" -> result record
    KEYS[3] fanout     SET names with children
    KEYS[4] children   base of the children sets

    ARGV[1] before     count the entries written at or before this (ms); "+inf" for any
    ARGV[2..] entries  per entry: member ("<parent>|<seq>"), n, then n pairs: child
                       ("<child queue>|<child>"), "1" released or "0" kept

  Output: how many entries written at or before `before` remain
]]
local rcall = redis.call
--@include memberKey
local outboxKey, outboxresKey, fanoutKey, childrenKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local i = 2
while i <= #ARGV do
  local member, n = ARGV[i], tonumber(ARGV[i + 1])
  local parent = string.match(member, '^(.*)|%d+$')
  local frozen = memberKey(childrenKey, member)
  for j = i + 2, i + 2 * n, 2 do
    if rcall('ZREM', frozen, ARGV[j]) == 1 and ARGV[j + 1] == '0' then
      rcall('ZADD', memberKey(childrenKey, parent), 0, ARGV[j])
      rcall('SADD', fanoutKey, parent)
    end
  end
  if rcall('EXISTS', frozen) == 0 then
    rcall('ZREM', outboxKey, member)
    rcall('HDEL', outboxresKey, member)
  end
  i = i + 2 + 2 * n
end
return rcall('ZCOUNT', outboxKey, '-inf', ARGV[1])
