--[[
  knownAgents: which names are agents of the queue, or have a finish kept. Read only.

  Input:
    KEYS[1] defs       HASH name -> definition JSON
    KEYS[2] results    HASH name -> result record
    ARGV[1..] names

  Output: per name 1 (known) or 0
]]
local rcall = redis.call
local out = {}
for i = 1, #ARGV do
  local known = rcall('HEXISTS', KEYS[1], ARGV[i]) == 1 or rcall('HEXISTS', KEYS[2], ARGV[i]) == 1
  out[i] = known and 1 or 0
end
return out
