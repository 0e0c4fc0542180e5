-- memberKey: the key of one member's own set, named from a base key the script was given in
-- KEYS ("<base>:<member>"): a child's parents, a parent's children. It keeps the base's hash
-- tag, so it is in the script's slot (Redis Cluster) and under the prefix (ACL key patterns).
-- The one way a script names a key it was not given; members are validated names (no `{`,
-- `}` or `:`), so a member cannot change the slot or alias another key.
local function memberKey(base, member)
  return base .. ':' .. member
end
