-- stepRecord: the steps a run recorded (HASH steps, name -> record while the run is not over;
-- HASH results, "<name>|steps" -> "<token>|" .. record once kept with the run's finish), written
-- and read here only (its Rust side is `crate::queues::records::StepRecord`):
--
--   ( "<step>|<recorded at ms>|<result length>|<result>" )*
--
-- one entry per step in the order recorded, concatenated; a step name is [A-Za-z0-9._-], so it
-- holds no '|', and the result bytes come last in each entry, binary-safe.

-- One step's entry, to append to a run's record.
local function encodeStep(step, at, result)
  return step .. '|' .. string.format('%d', at) .. '|' .. #result .. '|' .. result
end

-- A record's steps, in order: { { name, at, result }... }, or nil when it is not a steps record.
local function parseSteps(rec)
  local steps, from = {}, 1
  while from <= #rec do
    local name, at, len, start = string.match(rec, '^([^|]*)|(%d+)|(%d+)|()', from)
    if not name then return nil end
    len = tonumber(len)
    if #rec - start + 1 < len then return nil end
    steps[#steps + 1] = { name = name, at = tonumber(at), result = string.sub(rec, start, start + len - 1) }
    from = start + len
  end
  return steps
end

-- A run's events ride in the same record, as entries whose name starts with a mark a step name
-- never has: '?<event>' a signal kept until a wait names it (result: its payload), '!<event>' an
-- event the run consumed (its payload), '~<event>' a wait whose time passed first (no result;
-- only the latest is kept). The run's delivery, carried by its leases, is its last '!' or '~'
-- entry. They go with the run, as its steps do (runSteps).
local function isStep(name)
  return string.find(name, '^[%w._-]') ~= nil
end

-- The record of entries (parseSteps' tables) without its '~' entries, then extra appended.
local function encodeSteps(entries, extra)
  local parts = {}
  for _, s in ipairs(entries) do
    if string.sub(s.name, 1, 1) ~= '~' then parts[#parts + 1] = encodeStep(s.name, s.at, s.result) end
  end
  parts[#parts + 1] = extra
  return table.concat(parts)
end
