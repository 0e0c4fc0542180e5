--[[
  advanceOutbox: records that outbox entries' children were released in their own slots (the
  parents' slot). Released children leave their entry's set; a child kept (WAIT on a failure)
  goes back to the parent's live set of children, for its next finish. An entry whose set is
  empty is done and dropped. Replaying it changes nothing more.

  Input:
    KEYS of QueueKeys
    KEYS[1] outbox     ZSET "<parent>|<seq>" -> written at (ms)
    KEYS[2] outboxres  HASH "<parent>|<seq>" -> result record
    KEYS[3] fanout     SET names with children
    KEYS[4] children   base of the children sets

    ARGV[1] before (str)         count the entries written at or before this (ms); "+inf" for
                                 any
    ARGV[2..] settled (items)    per entry, one item per child released or kept (an entry
                                 without children: one item, child "")
      member (str)               the entry ("<parent>|<seq>")
      child (str)                "<child queue>|<child>", or ""
      released (bool)            released, or kept (WAIT on a failure)

  Output -> Int: how many entries written at or before `before` remain
]]
local rcall = redis.call
--@include memberKey
local outboxKey, outboxresKey, fanoutKey, childrenKey = K.outbox, K.outboxres, K.fanout, K.children
-- The entries in order, each once; their children (the items) are done first.
local entries, seen = {}, {}
for _, item in ipairs(A.settled) do
  local member = item.member
  if not seen[member] then
    seen[member] = true
    entries[#entries + 1] = member
  end
  if item.child ~= '' and rcall('ZREM', memberKey(childrenKey, member), item.child) == 1 and not item.released then
    local parent = string.match(member, '^(.*)|%d+$')
    rcall('ZADD', memberKey(childrenKey, parent), 0, item.child)
    rcall('SADD', fanoutKey, parent)
  end
end
for _, member in ipairs(entries) do
  if rcall('EXISTS', memberKey(childrenKey, member)) == 0 then
    rcall('ZREM', outboxKey, member)
    rcall('HDEL', outboxresKey, member)
  end
end
return rcall('ZCOUNT', outboxKey, '-inf', A.before)
