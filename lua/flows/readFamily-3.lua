--[[
  readFamily: agents' parents (with how each finished, once it released the agent) and a page of
  their children. Read only. A parent count is bounded by Register (limits.max_parents).

  Input:
    KEYS of QueueKeys
    KEYS[1] deps       base of "<deps>:<name>" HASH "<parent queue>|<parent>" -> "p<policy>" or record
    KEYS[2] pending    HASH name -> parents still pending
    KEYS[3] children   base of "<children>:<name>" ZSET "<child queue>|<child>"

    ARGV[1] childLimit (uint)   most children listed per agent (0: none)
    ARGV[2..] names (items)     the agents asked about
      name (str)                an agent's name

  Output -> Families: per name: pending, #parents, parent, state, ..., #children, child, ...
]]
local rcall = redis.call
--@include memberKey
local limit = A.childLimit
local out = {}
for _, item in ipairs(A.names) do
  local name = item.name
  out[#out + 1] = tonumber(rcall('HGET', K.pending, name) or '0')
  local parents = rcall('HGETALL', memberKey(K.deps, name))
  out[#out + 1] = #parents / 2
  for _, v in ipairs(parents) do out[#out + 1] = v end
  if limit > 0 then
    local children = rcall('ZRANGE', memberKey(K.children, name), 0, limit - 1)
    out[#out + 1] = #children
    for _, v in ipairs(children) do out[#out + 1] = v end
  else
    out[#out + 1] = 0
  end
end
return out
