--[[
  knownAgents: which names are agents of the queue, or have a finish kept; and the trace context
  of the first names asked for (what a new child links to). Read only.

  Input:
    KEYS of QueueKeys
    KEYS[1] defs       HASH name -> definition JSON
    KEYS[2] results    HASH name -> result record

    ARGV[1] traced (uint)     how many of the names, from the first, to return the trace
                              context of
    ARGV[2..] names (items)   the names asked about
      name (str)              an agent's name

  Output -> KnownAgents:
    { how many names, per name 1 (known) or 0; then, for each of the first `traced` names, its
      definition's traceparent ("" when it has none, or is not an agent: a finish kept carries
      none) }
]]
local rcall = redis.call
local traced = A.traced
local out, contexts = { #A.names }, {}
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
  known = known or rcall('HEXISTS', K.results, name) == 1
  out[#out + 1] = known and 1 or 0
end
for _, tp in ipairs(contexts) do out[#out + 1] = tp end
return out
