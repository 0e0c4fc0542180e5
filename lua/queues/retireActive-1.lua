--[[
  retireActive: takes a queue out of the index of active queues, if its mark is still the one
  the sweeper read before it found the queue empty. A replica that marked it since (an Acquire
  about to grant) changed the mark, so the queue stays (compare-and-delete; see store::active).

  Input:
    KEYS[1] active  ZSET queue -> when it was last marked (ms)

    ARGV[1] queue (str)   the queue
    ARGV[2] seen (str)    its mark as the sweeper read it (the ZSCORE reply's text)

  Output -> Int: 1 if retired, 0 if its mark changed (or it was gone)
]]
local rcall = redis.call

if rcall('ZSCORE', K.active, A.queue) == A.seen then
  return rcall('ZREM', K.active, A.queue)
end
return 0
