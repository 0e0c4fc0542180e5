-- keyedOrder: how a keyed queue orders its due agents (acquireAgents, registerAgents). An agent
-- in dispatch order (the `order` ZSET) is scored rank * ORDER_UNIT + tag: rank = 1000 -
-- priority, and tag = max(its key's last tag, the queue's virtual time) + 1, so a key's agents
-- take one tag each and keys with due work take turns. In waiting a promoted agent's score is
-- minus its due time.
local ORDER_UNIT = 4398046511104 -- 2^42 (rank <= 2000)
local function keyOfDef(def) return string.match(def, '^{"key":"([^"]*)"') or '' end
local function rankOfDef(def) return 1000 - tonumber(string.match(def, '"priority":(-?%d+)') or '0') end

-- Promotes agents into dispatch order: names[j] with definition defs[j] (all present), due at
-- dues[j] (ms), in that order, at virtual time vtime. One HMGET of the keys' last tags, one
-- ZADD each of waiting and order, one HSET of tags, in slices (unpack takes ~8000 values).
local function promoteKeyed(waitingKey, orderKey, tagsKey, vtime, names, defs, dues)
  if #names == 0 then return end
  local keys, seen = {}, {}
  for j = 1, #names do
    local key = keyOfDef(defs[j])
    if not seen[key] then
      seen[key] = true
      keys[#keys + 1] = key
    end
  end
  local last = {}
  local tags = rcall('HMGET', tagsKey, unpack(keys))
  for j, key in ipairs(keys) do last[key] = tonumber(tags[j] or '0') end
  local moved, entries, m = {}, {}, 0
  for j, name in ipairs(names) do
    local key = keyOfDef(defs[j])
    local tag = last[key]
    if tag < vtime then tag = vtime end
    tag = tag + 1
    last[key] = tag
    moved[m + 1], moved[m + 2] = -dues[j], name
    entries[m + 1], entries[m + 2] = rankOfDef(defs[j]) * ORDER_UNIT + tag, name
    m = m + 2
  end
  for i = 1, m, 4000 do
    local upto = math.min(i + 3999, m)
    rcall('ZADD', waitingKey, unpack(moved, i, upto))
    rcall('ZADD', orderKey, unpack(entries, i, upto))
  end
  local t = {}
  for key, tag in pairs(last) do t[#t + 1], t[#t + 2] = key, string.format('%d', tag) end
  rcall('HSET', tagsKey, unpack(t))
end
