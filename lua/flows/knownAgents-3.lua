--[[
  knownAgents: which names are agents of the queue, or have a finish kept; and the trace context
  of the first names asked for (what a new child links to). With mark, when every name is
  known, each name that is an agent is marked in fanout, as a parent with children attached is:
  a child is about to be registered after it, and its finish must be kept until the child is
  attached (finished), or the child would find it gone. The mark goes with the parent's next
  finish. Nothing else is written, and nothing at all when a name is unknown. Which names
  this call marked is answered, so a Register refused later takes them back (unmarkParents).

  Input:
    KEYS of QueueKeys
    KEYS[1] defs       HASH name -> definition JSON
    KEYS[2] results    HASH name -> result record
    KEYS[3] fanout     SET names with children (or about to have)

    ARGV[1] traced (uint)     how many of the names, from the first, to return the trace
                              context of
    ARGV[2] mark (bool)       mark the agents in fanout when every name is known
    ARGV[3..] names (items)   the names asked about
      name (str)              an agent's name

  Output -> KnownAgents:
    { how many names, per name 1 (known) or 0, per name 1 (marked by this call) or 0; then, for
      each of the first `traced` names, its
      definition's traceparent ("" when it has none, or is not an agent: a finish kept carries
      none) }
]]
local rcall = redis.call
local traced = A.traced
local out, contexts = { #A.names }, {}
local alive, all = {}, true
for i, item in ipairs(A.names) do
  local name = item.name
  local known
  if i <= traced then
    local def = rcall('HGET', K.defs, name)
    -- Decoded, not matched: a label named "tp" must not pass for the field.
    contexts[#contexts + 1] = def and cjson.decode(def).tp or ''
    known = def ~= false
  else
    known = rcall('HEXISTS', K.defs, name) == 1
  end
  if known then
    alive[#alive + 1] = name
  else
    known = rcall('HEXISTS', K.results, name) == 1
  end
  all = all and known
  out[#out + 1] = known and 1 or 0
end
local marked = {}
if A.mark and all then
  for _, name in ipairs(alive) do marked[name] = rcall('SADD', K.fanout, name) end
end
for _, item in ipairs(A.names) do out[#out + 1] = marked[item.name] or 0 end
for _, tp in ipairs(contexts) do out[#out + 1] = tp end
return out
