-- keepsFinish: whether an agent of this stored definition keeps its finish for its own sake
-- (finished adds children and awaiters): it asks to ("keep", which Baton also sets for an
-- idempotency key, a batch member, a parent named in its child's Register call and a queue of
-- results.keep_queues), it is recurring (interval or cron: Await answers its latest run), or
-- it is a batch's sentinel. A label cannot pass for "keep", "interval_ms" or "batch": label
-- values are strings, so a label of that name is followed by a quote, not by true or a digit.
-- A label named "cron" makes an agent keep its finish (it costs, never loses, a record).
-- false for no definition.
local function keepsFinish(def)
  if not def then return false end
  if string.find(def, '"keep":true', 1, true) or string.find(def, '"cron":"', 1, true)
    or string.find(def, '"batch":1', 1, true) then
    return true
  end
  -- A plain search first: most definitions (one-shots) have no interval at all.
  local at = string.find(def, '"interval_ms":', 1, true)
  return at ~= nil and string.find(def, '"interval_ms":%d', at) ~= nil
end
