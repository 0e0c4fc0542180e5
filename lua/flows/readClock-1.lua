--[[
  readClock: the Redis clock of the node that owns a source's slot, for what the host computes
  from Redis time before it writes (a cron agent's first fire: the first fire after this TIME,
  computed by Baton's cron parser, then written by registerAgents). Read-only.

  Input:
    KEYS[1] routing    any key of the source: it only names the slot (so on Redis Cluster the
                       call runs on the node that owns the source); not read

  Output -> Int:
    now (ms, Redis TIME)
]]
local rcall = redis.call
--@include nowMs

local _ = K.routing -- the slot this call is routed by; nothing is read
return nowMs()
