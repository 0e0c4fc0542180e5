--[[
  recountKeys: one step of a recount of the leases each key of a keyed queue holds ("held|<key>"
  in the limits hash, kept by acquireAgents and keyLeaseEnded; a crash of an older version or a
  hand edit can leave it wrong). Each call does a bounded step (one HSCAN of about `count`
  entries); the caller calls again until it answers done. Any number of callers may step the
  same recount: its state lives in the limits hash ("recount" = phase and HSCAN cursor).

  Invariant, for every key k: while the scan runs (phase "s"), "rc|<k>" counts exactly the
  current leases of key k whose agent is marked "rn|<name>" (the marked agents are those whose
  lease the recount has settled). The scan marks each keyed lease it meets that is not marked
  yet and counts it. The scripts that change a keyed lease keep it true: acquireAgents counts and
  marks each keyed grant (the agent had no lease before, so it is settled from then on), and
  keyLeaseEnded takes back an ending lease of a marked agent, or marks an unmarked one without
  counting it (it ended before the scan met it). HSCAN returns every lease present for the whole
  scan at least once (a second return meets the mark), and every lease granted during the scan
  is marked at its grant: when the cursor comes back to 0 every current keyed lease is marked,
  so rc|<k> is the true count. From then on (phase "a") every grant and end moves rc|<k> too, so
  it stays the true count, and a pass over the limits hash sets held|<k> := rc|<k> for every key
  with either field (idempotent: a field met twice is set to the same truth; a key without rc|
  holds no lease and its held| is deleted). A held|<k> created during that pass belongs to a key
  whose rc| existed throughout (a key with a lease has one), so it is met. Phase "c" stops the
  bookkeeping and deletes the rc| and rn| fields in a last pass; then "recount" is deleted.

  Only a queue that counts (countsKeys: a limit on keys' concurrency) keeps held| counts. On a
  queue that does not, a recount is a drop instead (phase "d"): one pass deletes every held|,
  rc| and rn| field, then "recount" is deleted. setLimits and setKeyLimits start one when the
  count stops (and when it starts while a drop or a last pass runs: at the end of its pass,
  a drop of a queue that counts again starts a recount, "s0").

  Input:
    KEYS of QueueKeys
    KEYS[1] limits   HASH flow control: "recount", "held|<key>", "rc|<key>", "rn|<name>"
    KEYS[2] leases   HASH name -> "token|worker|acquired_at|timeout_ms[@key][|flags|progress]"

    ARGV[1] count (uint)   HSCAN COUNT of this step

  Output -> RecountStep:
    { done (1 when the recount finished with this step, else 0), leases counted, keys
      corrected (held|<key> changed or, by a drop, deleted), phase after this step ("s", "a",
      "c", "d" or "") }
]]
local rcall = redis.call
--@include leaseRecord
--@include countsKeys

local limitsKey, leasesKey = K.limits, K.leases
local count = A.count
local st = rcall('HMGET', limitsKey, 'recount', 'key_concurrency', 'key_limits')
local counting = countsKeys(st[2], st[3])
local state = st[1] or (counting and 's0' or 'd0')
-- A recount's scan on a queue that no longer counts: what it counted is dropped instead.
if not counting and (string.sub(state, 1, 1) == 's' or string.sub(state, 1, 1) == 'a') then state = 'd0' end
local phase, cursor = string.sub(state, 1, 1), string.sub(state, 2)
local counted, corrected = 0, 0

if phase == 'd' then
  local r = rcall('HSCAN', limitsKey, cursor, 'COUNT', count)
  local entries, del = r[2], {}
  for i = 1, #entries, 2 do
    local f = entries[i]
    local head = string.sub(f, 1, 3)
    if head == 'rc|' or head == 'rn|' then
      del[#del + 1] = f
    elseif string.sub(f, 1, 5) == 'held|' then
      del[#del + 1] = f
      corrected = corrected + 1
    end
  end
  if #del > 0 then rcall('HDEL', limitsKey, unpack(del)) end
  if r[1] ~= '0' then
    rcall('HSET', limitsKey, 'recount', 'd' .. r[1])
    return { 0, 0, corrected, 'd' }
  end
  if counting then
    rcall('HSET', limitsKey, 'recount', 's0')
    return { 0, 0, corrected, 's' }
  end
  rcall('HDEL', limitsKey, 'recount')
  return { 1, 0, corrected, '' }
end

if phase == 's' then
  local r = rcall('HSCAN', leasesKey, cursor, 'COUNT', count)
  local entries = r[2]
  local names, keys = {}, {}
  for i = 1, #entries, 2 do
    local key = leaseKey(entries[i + 1])
    if key then
      names[#names + 1] = 'rn|' .. entries[i]
      keys[#keys + 1] = key
    end
  end
  if #names > 0 then
    local marks = rcall('HMGET', limitsKey, unpack(names))
    local per, set, m = {}, {}, 0
    for j = 1, #names do
      if not marks[j] then
        per[keys[j]] = (per[keys[j]] or 0) + 1
        set[m + 1], set[m + 2] = names[j], '1'
        m = m + 2
        counted = counted + 1
      end
    end
    for key, n in pairs(per) do rcall('HINCRBY', limitsKey, 'rc|' .. key, n) end
    if m > 0 then rcall('HSET', limitsKey, unpack(set)) end
  end
  rcall('HSET', limitsKey, 'recount', r[1] == '0' and 'a0' or ('s' .. r[1]))
  return { 0, counted, 0, r[1] == '0' and 'a' or 's' }
end

local r = rcall('HSCAN', limitsKey, cursor, 'COUNT', count)
local entries = r[2]
if phase == 'a' then
  local keys, seen = {}, {}
  for i = 1, #entries, 2 do
    local f = entries[i]
    local key = string.match(f, '^held|(.*)$') or string.match(f, '^rc|(.*)$')
    if key and not seen[key] then
      seen[key] = true
      keys[#keys + 1] = key
    end
  end
  if #keys > 0 then
    local fields = {}
    for j, key in ipairs(keys) do fields[j] = 'rc|' .. key end
    local truth = rcall('HMGET', limitsKey, unpack(fields))
    for j, key in ipairs(keys) do fields[j] = 'held|' .. key end
    local held = rcall('HMGET', limitsKey, unpack(fields))
    local set, del = {}, {}
    for j, key in ipairs(keys) do
      local t, h = tonumber(truth[j] or '0'), tonumber(held[j] or '0')
      if t ~= h then corrected = corrected + 1 end
      if t > 0 then
        if t ~= h then set[#set + 1], set[#set + 2] = fields[j], string.format('%d', t) end
      elseif held[j] then
        del[#del + 1] = fields[j]
      end
    end
    if #set > 0 then rcall('HSET', limitsKey, unpack(set)) end
    if #del > 0 then rcall('HDEL', limitsKey, unpack(del)) end
  end
  rcall('HSET', limitsKey, 'recount', r[1] == '0' and 'c0' or ('a' .. r[1]))
  return { 0, 0, corrected, r[1] == '0' and 'c' or 'a' }
end

-- phase "c": the bookkeeping has stopped; drop it.
local del = {}
for i = 1, #entries, 2 do
  local f = entries[i]
  if string.sub(f, 1, 3) == 'rc|' or string.sub(f, 1, 3) == 'rn|' then del[#del + 1] = f end
end
if #del > 0 then rcall('HDEL', limitsKey, unpack(del)) end
if r[1] == '0' then
  rcall('HDEL', limitsKey, 'recount')
  return { 1, 0, 0, '' }
end
rcall('HSET', limitsKey, 'recount', 'c' .. r[1])
return { 0, 0, 0, 'c' }
