-- keyLeaseEnded: n leases (default 1) of a keyed agent ended (key: from the lease record, "@key";
-- nil for an agent without one; names: the agents whose leases ended, a name or a list): its key
-- holds n leases fewer ("held|<key>" in the limits hash, counted up by acquireAgents), so the key
-- may be granted again. A count that reaches 0 is deleted (an absent count is 0), so a drained
-- queue keeps no per-key counter and nothing has to sweep them; a count below 0 (left by a fleet
-- of mixed versions) is dropped too.
-- While a recount runs ("recount" in the limits hash, recountKeys) the recount's own count
-- "rc|<key>" follows: while it scans the leases ("s"), a lease it already counted ("rn|<name>")
-- takes its count back, and one it has not reached yet is marked as seen (so it is never
-- counted); once every lease was counted ("a"), every end is taken back.
local function keyLeaseEnded(limitsKey, key, n, names)
  if not key then return end
  n = n or 1
  if rcall('HINCRBY', limitsKey, 'held|' .. key, -n) <= 0 then rcall('HDEL', limitsKey, 'held|' .. key) end
  local recount = rcall('HGET', limitsKey, 'recount')
  if not recount then return end
  local phase = string.sub(recount, 1, 1)
  if phase == 's' and names then
    if type(names) ~= 'table' then names = { names } end
    local fields = {}
    for j, name in ipairs(names) do fields[j] = 'rn|' .. name end
    local marks = rcall('HMGET', limitsKey, unpack(fields))
    local counted, mark, m = 0, {}, 0
    for j = 1, #fields do
      if marks[j] then
        counted = counted + 1
      else
        mark[m + 1], mark[m + 2] = fields[j], '1'
        m = m + 2
      end
    end
    if counted > 0 then rcall('HINCRBY', limitsKey, 'rc|' .. key, -counted) end
    if m > 0 then rcall('HSET', limitsKey, unpack(mark)) end
  elseif phase == 'a' then
    rcall('HINCRBY', limitsKey, 'rc|' .. key, -n)
  end
end
