-- groupLimits: shared concurrency groups (AdminService.SetGroupLimits; a queue joins with
-- SetLimits' `group`, "group" in its limits hash). A group's hash (K.group) holds its limits,
-- "concurrency", "rate", "burst", "key_concurrency", its bucket's "tokens" and "at", and its
-- counts: "held" (leases granted under the group and not ended yet, over every member queue) and
-- "held|<key>" (the same per Agent.key, deleted at 0). K.groupblocked is a SET of
-- "<queue>|<channel>": member queues whose Acquire found the group's limit holding due work back.
--
-- A call gets the keys of one group (ARGV groupName; "" for none, and then keys of the queue's own
-- slot that are never touched). A grant counts under the queue's group and records it in the
-- lease record ("!group"); a lease end gives the place back to the group its record names,
-- whatever the queue's group is by then. A script that meets a group other than the one it was
-- given raises "BATON_GROUP <group>" before it writes anything, and Baton calls again with that
-- group's keys; leases of two groups in one call raise "BATON_GROUPS", and Baton calls once per
-- lease.

-- Raises unless every group named in `groups` (a table of names; "" and nil for none) is
-- `given`. Call it before the script's first write.
local function checkGroups(given, groups)
  local first, several = nil, false
  for _, g in pairs(groups) do
    if g and g ~= '' then
      if not first then first = g elseif g ~= first then several = true end
    end
  end
  if several then error({ err = 'BATON_GROUPS leases of several groups' }) end
  if first and first ~= given then error({ err = 'BATON_GROUP ' .. first }) end
end

-- n leases granted under `group` ended (keys: Agent.key -> how many of them had it; nil for
-- none): the group holds n places fewer, and every member queue that found the group full is
-- announced once (its entry leaves the blocked set), so waiters of every member wake on a freed
-- place, not on a timer.
local function groupLeaseEnded(K, group, n, keys)
  if not group or group == '' or n == 0 then return end
  if rcall('HINCRBY', K.group, 'held', -n) <= 0 then rcall('HDEL', K.group, 'held') end
  -- The keys' counts together: one HMGET, at most one HSET and one HDEL, whatever their number.
  local fields, ends = {}, {}
  for key, c in pairs(keys or {}) do
    fields[#fields + 1], ends[#ends + 1] = 'held|' .. key, c
  end
  if #fields > 0 then
    local counts = rcall('HMGET', K.group, unpack(fields))
    local set, del = {}, {}
    for j, field in ipairs(fields) do
      local left = (tonumber(counts[j] or '0') or 0) - ends[j]
      if left > 0 then
        set[#set + 1], set[#set + 2] = field, string.format('%d', left)
      elseif counts[j] then
        del[#del + 1] = field
      end
    end
    if #set > 0 then rcall('HSET', K.group, unpack(set)) end
    if #del > 0 then rcall('HDEL', K.group, unpack(del)) end
  end
  local blocked = rcall('SMEMBERS', K.groupblocked)
  if #blocked > 0 then
    rcall('DEL', K.groupblocked)
    for _, entry in ipairs(blocked) do
      local q, ch = string.match(entry, '^([^|]*)|(.*)$')
      if q then publish(ch, q) end
    end
  end
end

-- Marks the queue held back by its group: the next lease end under the group announces it.
local function groupBlocked(K, queue, channel)
  rcall('SADD', K.groupblocked, queue .. '|' .. channel)
end
