-- defField: the stored definition of an agent (HASH defs, name -> JSON), as the scripts read
-- and rewrite it; its Rust side, which writes it, is `crate::queues::records::AgentDef`.
--
-- The scripts read it without decoding it: the hot scripts read one field per agent, and
-- cjson.decode of the whole definition cost more than the rest of their work. This rests on
-- how Baton encodes it:
--   * a whole-number field the scripts read (timeout_ms, error_interval_ms, interval_ms,
--     max_attempts, priority, first_fire_ms, parents) is top-level and written as plain digits;
--     a label cannot be mistaken for it: label keys and values are JSON strings, so a quote
--     inside them is escaped and `"field":` followed by a digit never occurs there;
--   * absent means 0: Baton leaves out every field that is 0 or empty (interval_ms,
--     max_attempts, priority, parents, …), so a million one-shots carry no zeros; defField
--     reads an absent field as 0, as serde's defaults read it on the Rust side;
--   * "key" comes first (`{"key":"…"`), where no label can be, and "ptp" (the parents' trace
--     contexts) last, followed only by the "parents" count that registerAgents appends;
--   * "watch_ms" (watched until, ms) is written by the scripts only, right before "timeout_ms"
--     (watchEvent's defWithWatch); the Rust side ignores it, and a Register drops it.
-- A field is found by a plain search for its `"field":` and read as the digits right after it
-- (a pattern search from every position cost about 4 times as much, and this runs per agent).
local defFieldNeedles = {} -- kept across calls: each field's needle, made once
-- The field's digits as they are stored ('0' when absent): for a script that writes them back
-- into a record, with no conversion to a number and back.
local function defDigits(def, field)
  local needle = defFieldNeedles[field]
  if not needle then
    needle = '"' .. field .. '":'
    defFieldNeedles[field] = needle
  end
  local at = string.find(def, needle, 1, true)
  if not at then return '0' end
  local digits = string.match(def, '^%d+', at + #needle)
  -- Not digits: a label named as the field came first (a label's value is a string).
  if not digits then digits = string.match(def, needle .. '(%d+)', at + #needle) end
  return digits or '0'
end

local function defField(def, field)
  return tonumber(defDigits(def, field))
end

-- Is def a cron agent's? Its top-level "cron" field says so; a label named "cron" reads
-- '"cron":"' too, so a hit is confirmed by decoding the definition (paid by cron agents and
-- such labels only, never by a plain agent).
local function defIsCron(def)
  if not string.find(def, '"cron":"', 1, true) then return false end
  local cron = cjson.decode(def).cron
  return type(cron) == 'string' and cron ~= ''
end

-- def with its parents' count n appended (registerAgents, for an agent created with parents).
local function defWithParents(def, n)
  return string.format('%s,"parents":%d}', string.sub(def, 1, -2), n)
end

-- def without its parents' trace contexts ("ptp", serialized last). A label cannot hold
-- ',"ptp":{': a quote inside a JSON string is escaped, and label values are strings.
local function defWithoutLinks(def)
  local at = string.find(def, ',"ptp":{', 1, true)
  if at then return string.sub(def, 1, at - 1) .. '}' end
  return def
end

-- A new definition of an existing agent, keeping old's parents: their count n, and the trace
-- contexts old's creation stored ("ptp", which stays before the appended "parents").
local function defKeepParents(def, old, n)
  def = defWithoutLinks(def)
  local kept = ''
  local from = string.find(old, ',"ptp":{', 1, true)
  if from then
    local to = string.find(old, ',"parents":%d+}$')
    kept = string.sub(old, from, (to or #old) - 1)
  end
  return string.format('%s%s,"parents":%d}', string.sub(def, 1, -2), kept, n)
end

-- The expiry of def ("expire_at_ms": Agent.expire_at or ttl, kept until its first run starts),
-- or nil for none. Baton writes it after "timeout_ms", so it reads ',"expire_at_ms":<digits>',
-- which no label can (a label's value is a string: a quote follows its colon). A plain
-- definition costs one plain find.
local function defExpireAt(def)
  if not string.find(def, ',"expire_at_ms":', 1, true) then return nil end
  local at = defField(def, 'expire_at_ms')
  if at > 0 then return at end
  return nil
end

-- def without its expiry (the grant of its first run: a run that started never expires).
local function defWithoutExpiry(def)
  return (string.gsub(def, ',"expire_at_ms":%d+', '', 1))
end
