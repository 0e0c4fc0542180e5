-- receiverKeys: names the keys of a receiver script, in the order every receiver script takes
-- them.
local function receiverKeys()
  return {
    scheduled = KEYS[1], inflight = KEYS[2], messages = KEYS[3], meta = KEYS[4], keys = KEYS[5],
    tokens = KEYS[6], consumers = KEYS[7], seq = KEYS[8], dlq = KEYS[9], dlqinfo = KEYS[10],
    stats = KEYS[11],
  }
end
