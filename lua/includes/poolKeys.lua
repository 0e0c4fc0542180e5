-- poolKeys: names the keys of a pool script, in the order every pool script takes them.
-- limits: the pool's flow control ("paused": AdminService.Pause).
local function poolKeys()
  return {
    idle = KEYS[1], resources = KEYS[2], claimed = KEYS[3], claims = KEYS[4], line = KEYS[5],
    lineinfo = KEYS[6], assigned = KEYS[7], seq = KEYS[8], scaleup = KEYS[9], dlq = KEYS[10],
    dlqinfo = KEYS[11], idleat = KEYS[12], stats = KEYS[13], limits = KEYS[14],
  }
end
