-- mergeAttrs: a resource's offered attributes with a claim's attributes over them, as JSON.
local function mergeAttrs(offered, claim)
  local merged = cjson.decode(offered or '{}')
  for key, value in pairs(cjson.decode(claim or '{}')) do merged[key] = value end
  if next(merged) == nil then return '{}' end
  return cjson.encode(merged)
end
