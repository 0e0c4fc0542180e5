--[[
  knownAgents: which names are agents of the queue, or have a finish kept; and the trace context
  of the first names asked for (what a new child links to). Read only.

  Input:
    KEYS[1] defs       HASH name -> definition JSON
    KEYS[2] results    HASH name -> result record

    ARGV[1] traced     how many of the names, from the first, to return the trace context of
    ARGV[2..] names

  Output: per name 1 (known) or 0; then, for each of the first `traced` names, its definition's
    traceparent ("" when it has none, or is not an agent: a finish kept carries none)
]]
local rcall = redis.call
local traced = tonumber(ARGV[1])
local out, contexts = {}, {}
for i = 2, #ARGV do
  local name = ARGV[i]
  local known
  if i - 1 <= traced then
    local def = rcall('HGET', KEYS[1], name)
    -- Decoded, not matched: a label named "tp" must not pass for the field.
    contexts[#contexts + 1] = def and cjson.decode(def).tp or ''
    known = def ~= false
  else
    known = rcall('HEXISTS', KEYS[1], name) == 1
  end
  known = known or rcall('HEXISTS', KEYS[2], name) == 1
  out[#out + 1] = known and 1 or 0
end
for _, tp in ipairs(contexts) do out[#out + 1] = tp end
return out
