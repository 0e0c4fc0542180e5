-- placeResource: puts resource id where it belongs: handed to the first live claim in the
-- pool's line (claim recorded, assignment left for the waiting replica, which is told on
-- channel), else into the ready queue, at the back or (front = true) at the front. Claims in
-- line whose wait ended are dropped on the way. Lowers the scale-up signal when the line drains.
-- A paused pool hands nothing to its line: the resource goes to the ready queue.
-- Returns "handed" or "idle".
local function placeResource(k, id, now, channel, pool, front)
  local placed = nil
  local paused = rcall('HGET', k.limits, 'paused') == '1'
  while not placed and not paused do
    local head = rcall('ZRANGE', k.line, 0, 0)[1]
    if not head then break end
    local claimer, deadline, attrs = string.match(rcall('HGET', k.lineinfo, head) or '', '^([^|]*)|(%d+)|(.*)$')
    rcall('ZREM', k.line, head)
    rcall('HDEL', k.lineinfo, head)
    if claimer and tonumber(deadline) >= now then
      local token = string.format('%d', rcall('INCR', k.seq))
      rcall('ZADD', k.claimed, now, id)
      rcall('HSET', k.claims, id, encodeClaim(token, claimer, now, attrs))
      rcall('HSET', k.assigned, head, id .. '|' .. token .. '|' .. deadline)
      publish(channel, 'A|' .. pool .. '|' .. head)
      rcall('HINCRBY', k.stats, 'claimed', 1)
      placed = 'handed'
    end
  end
  if not placed then
    if front then
      local first = rcall('ZRANGE', k.idle, 0, 0, 'WITHSCORES')
      local score = 0
      if first[2] then score = tonumber(first[2]) - 1 end
      rcall('ZADD', k.idle, score, id)
    else
      rcall('ZADD', k.idle, rcall('INCR', k.seq), id)
    end
    rcall('HSET', k.idleat, id, now)
    placed = 'idle'
  end
  if rcall('ZCARD', k.line) == 0 then rcall('DEL', k.scaleup) end
  return placed
end
