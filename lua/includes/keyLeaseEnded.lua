-- keyLeasesEnded: leases of keyed agents ended. ends maps each key (from the lease record,
-- "@key") to the names of the agents whose leases ended: the key holds that many leases fewer
-- ("held|<key>" in the limits hash, counted up by acquireKeyed), so it may be granted again. A
-- count that reaches 0 is deleted (an absent count is 0), so a drained queue keeps no per-key
-- counter and nothing has to sweep them; a count below 0 (left by a fleet of mixed versions) is
-- dropped too. Only a queue that counts (countsKeys: a limit on keys' concurrency) keeps these
-- counts: the whole call costs one HMGET of the queue's state, then, when it counts, one HMGET
-- of the counts, at most one HSET and one HDEL, whatever the number of keys.
-- While a recount runs ("recount" in the limits hash, recountKeys) the recount's own count
-- "rc|<key>" follows: while it scans the leases ("s"), a lease it already counted ("rn|<name>")
-- takes its count back, and one it has not reached yet is marked as seen (so it is never
-- counted); once every lease was counted ("a"), every end is taken back. Only a recount pays
-- these commands.
local function keyLeasesEnded(limitsKey, ends)
  local keys = {}
  for key in pairs(ends) do keys[#keys + 1] = key end
  if #keys == 0 then return end
  local state = rcall('HMGET', limitsKey, 'recount', 'key_concurrency', 'key_limits')
  if countsKeys(state[2], state[3]) then
    local fields = {}
    for j, key in ipairs(keys) do fields[j] = 'held|' .. key end
    local counts = rcall('HMGET', limitsKey, unpack(fields))
    local set, del, s = {}, {}, 0
    for j, key in ipairs(keys) do
      local left = (tonumber(counts[j] or '0') or 0) - #ends[key]
      if left > 0 then
        set[s + 1], set[s + 2] = fields[j], string.format('%d', left)
        s = s + 2
      elseif counts[j] then
        del[#del + 1] = fields[j]
      end
    end
    if s > 0 then rcall('HSET', limitsKey, unpack(set)) end
    if #del > 0 then rcall('HDEL', limitsKey, unpack(del)) end
  end
  local recount = state[1]
  if not recount then return end
  local phase = string.sub(recount, 1, 1)
  if phase == 's' then
    local names, of = {}, {}
    for _, key in ipairs(keys) do
      for _, name in ipairs(ends[key]) do
        names[#names + 1] = 'rn|' .. name
        of[#of + 1] = key
      end
    end
    local marks = rcall('HMGET', limitsKey, unpack(names))
    local counted, mark, m = {}, {}, 0
    for j = 1, #names do
      if marks[j] then
        counted[of[j]] = (counted[of[j]] or 0) + 1
      else
        mark[m + 1], mark[m + 2] = names[j], '1'
        m = m + 2
      end
    end
    for key, n in pairs(counted) do rcall('HINCRBY', limitsKey, 'rc|' .. key, -n) end
    if m > 0 then rcall('HSET', limitsKey, unpack(mark)) end
  elseif phase == 'a' then
    for _, key in ipairs(keys) do rcall('HINCRBY', limitsKey, 'rc|' .. key, -#ends[key]) end
  end
end

-- keyLeaseEnded: one lease of a keyed agent ended (key: from the lease record, nil for an agent
-- without one; name: the agent): keyLeasesEnded for that one.
local function keyLeaseEnded(limitsKey, key, name)
  if key then keyLeasesEnded(limitsKey, { [key] = { name } }) end
end
