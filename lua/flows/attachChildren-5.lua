--[[
  attachChildren: attaches children to parents of this queue (the parent's slot), or answers how
  a parent already finished. A parent that exists takes the child into its set of children
  ("<children>:<parent>"): its next finish releases it (finished, flows). A parent with no
  definition answers its kept finish (the child is released from it at once), or that it is
  missing (no definition, no finish kept). A dead-lettered parent is attached and answers its
  finish too: the child's policy decides (a WAIT child stays attached for a retry).
  Attaching twice changes nothing.

  Input:
    KEYS of QueueKeys
    KEYS[1] defs       HASH name -> definition JSON
    KEYS[2] dlq        ZSET name -> dead-lettered at (ms)
    KEYS[3] results    HASH name -> result record
    KEYS[4] fanout     SET names with children
    KEYS[5] children   base of "<children>:<parent>" ZSET "<child queue>|<child>"

    ARGV[1..] links (items)      one per child to attach
      parent (str)               the parent (of this queue)
      childQueue (str)           the child's queue
      child (str)                the child

  Output -> Attached: per child, "" (attached, pending), "m" (missing), or the parent's result record
]]
local rcall = redis.call
--@include memberKey
local defsKey, dlqKey, resultsKey, fanoutKey, childrenKey = K.defs, K.dlq, K.results, K.fanout, K.children
local out = {}
for _, item in ipairs(A.links) do
  local parent, member = item.parent, item.childQueue .. '|' .. item.child
  local answer = ''
  if rcall('HEXISTS', defsKey, parent) == 1 then
    rcall('ZADD', memberKey(childrenKey, parent), 0, member)
    rcall('SADD', fanoutKey, parent)
    if rcall('ZSCORE', dlqKey, parent) then answer = rcall('HGET', resultsKey, parent) or '' end
  else
    answer = rcall('HGET', resultsKey, parent) or 'm'
  end
  out[#out + 1] = answer
end
return out
