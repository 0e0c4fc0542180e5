-- defField: a whole-number field of a stored definition (JSON written by Baton, top-level
-- numeric fields first), read without decoding the JSON: the hot scripts read one field per
-- agent, and cjson.decode of the whole definition cost more than the rest of their work. A
-- label cannot be mistaken for the field: label keys and values are JSON strings, so a
-- quote inside them is escaped and `"field":` followed by a digit never occurs there. Baton
-- omits a field that is 0 (interval_ms, max_attempts), so an absent field reads 0.
local defFieldPatterns = {}
local function defField(def, field)
  local pattern = defFieldPatterns[field]
  if not pattern then
    pattern = '"' .. field .. '":(%d+)'
    defFieldPatterns[field] = pattern
  end
  return tonumber(string.match(def, pattern) or '0')
end
