-- recall: the first answer remembered under a request field (see remember), decoded, or nil
-- when field is "" (no request id) or nothing is remembered under it. A retry that finds one
-- returns it and changes nothing.
local function recall(answersKey, field)
  if field == '' then return nil end
  local answer = rcall('HGET', answersKey, field)
  if not answer then return nil end
  return cjson.decode(answer)
end
