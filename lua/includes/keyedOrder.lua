-- keyedOrder: how a keyed queue orders its due agents (acquireAgents, registerAgents). An agent
-- in dispatch order (the `order` ZSET) is scored rank * ORDER_UNIT + tag: rank = 1000 -
-- priority, and the tag is start-time fair queuing with a tag step of 1/weight, kept in
-- integers: a key of weight w (AdminService.SetKeyLimits, "key|<key>" in the limits hash,
-- default 1) gives w consecutive agents the same tag before it steps on, i.e. an agent's tag is
-- the fractional SFQ tag rounded up. A key that is behind the queue's virtual time (or idle)
-- joins at vtime + 1; so keys with due work take turns, a key of weight w getting w agents per
-- round. `tags` holds a key's last tag, "tag" or "tag|n" (n agents took it, when w > 1). In
-- waiting a promoted agent's score is minus its due time.
local ORDER_UNIT = 4398046511104 -- 2^42 (rank <= 2000)
local function keyOfDef(def) return string.match(def, '^{"key":"([^"]*)"') or '' end
local function rankOfDef(def) return 1000 - tonumber(string.match(def, '"priority":(-?%d+)') or '0') end
-- A key's record "weight|concurrency|rate|burst" (each part "" for the queue's default):
-- weight (1 when absent), and the overrides (nil when the queue's default applies).
local function parseKeyLimits(rec)
  if not rec then return 1 end
  local w, c, r, b = string.match(rec, '^(%d*)|(%d*)|([^|]*)|(%d*)$')
  if not w then return 1 end
  return tonumber(w) or 1, tonumber(c), tonumber(r), tonumber(b)
end

-- Promotes agents into dispatch order: names[j] with definition defs[j] (all present), due at
-- dues[j] (ms), in that order, at virtual time vtime. One HMGET each of the keys' last tags and
-- weights (the weights only when limitsKey is given: the caller passes it while some key has a
-- record, "key_limits"; without, every weight is 1), one ZADD each of waiting and order, one
-- HSET of tags, in slices (unpack takes ~8000 values).
local function promoteKeyed(waitingKey, orderKey, tagsKey, vtime, names, defs, dues, limitsKey)
  if #names == 0 then return end
  local keys, seen = {}, {}
  for j = 1, #names do
    local key = keyOfDef(defs[j])
    if not seen[key] then
      seen[key] = true
      keys[#keys + 1] = key
    end
  end
  local last, count, weight, fields = {}, {}, {}, {}
  local tags = rcall('HMGET', tagsKey, unpack(keys))
  for j, key in ipairs(keys) do fields[j] = 'key|' .. key end
  local recs = limitsKey and rcall('HMGET', limitsKey, unpack(fields)) or {}
  for j, key in ipairs(keys) do
    local t, n = string.match(tags[j] or '0', '^(%d+)|?(%d*)$')
    weight[key] = parseKeyLimits(recs[j])
    last[key] = tonumber(t or '0')
    count[key] = tonumber(n) or weight[key] -- "tag" alone: the tag is taken (step on)
  end
  local moved, entries, m = {}, {}, 0
  for j, name in ipairs(names) do
    local key = keyOfDef(defs[j])
    local tag, n = last[key], count[key]
    if tag < vtime then
      tag, n = vtime + 1, 1
    elseif n < weight[key] then
      n = n + 1
    else
      tag, n = tag + 1, 1
    end
    last[key], count[key] = tag, n
    moved[m + 1], moved[m + 2] = -dues[j], name
    entries[m + 1], entries[m + 2] = rankOfDef(defs[j]) * ORDER_UNIT + tag, name
    m = m + 2
  end
  for i = 1, m, 4000 do
    local upto = math.min(i + 3999, m)
    rcall('ZADD', waitingKey, unpack(moved, i, upto))
    rcall('ZADD', orderKey, unpack(entries, i, upto))
  end
  local t, i = {}, 0
  for key, tag in pairs(last) do
    t[i + 1] = key
    t[i + 2] = weight[key] > 1 and string.format('%d|%d', tag, count[key]) or string.format('%d', tag)
    i = i + 2
  end
  rcall('HSET', tagsKey, unpack(t))
end
