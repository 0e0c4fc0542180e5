--[[
  unmarkParents: takes back the marks knownAgents made for a Register that was refused after
  it (PARENTS_FIXED): each name leaves fanout, unless a child was attached to it meanwhile (its
  set of children exists). Replaying it changes nothing more.

  Input:
    KEYS of QueueKeys
    KEYS[1] fanout     SET names with children (or about to have)
    KEYS[2] children   base of "<children>:<parent>"

    ARGV[1..] names (items)   the names knownAgents marked
      name (str)              a parent's name

  Output -> Int: how many marks were taken back
]]
local rcall = redis.call
--@include memberKey
local n = 0
for _, item in ipairs(A.names) do
  if rcall('EXISTS', memberKey(K.children, item.name)) == 0 then n = n + rcall('SREM', K.fanout, item.name) end
end
return n
