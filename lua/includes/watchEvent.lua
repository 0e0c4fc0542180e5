-- watchEvent: tells the WatchAgent streams of an agent an update of its watched lease, on the
-- queue's channel (the target as publish takes it), so every replica's streams hear it:
--
--   "w|<queue>|<name>|<token>|<n>|<kind>|<data>"
--
-- n numbers the lease's updates (0 at its grant, kept in the lease's flags: leaseRecord), so a
-- stream orders them by (token, n) and drops what its snapshot already showed. kind g: granted
-- (data: the attempt); p: progress (data: the progress); s: a step (data:
-- "<recorded at ms>|<step>|<result>", the result bytes last). Only a lease whose flags say
-- "w" (watched) announces: a heartbeat or step of an agent nobody watches pays nothing.
local function watchEvent(target, queue, name, token, n, kind, data)
  publish(target, 'w|' .. queue .. '|' .. name .. '|' .. token .. '|' .. string.format('%d', n) .. '|' .. kind .. '|' .. data)
end

-- def with its watch mark set to until (ms): '"watch_ms":<until>,' right before "timeout_ms",
-- which every definition has (a label cannot hold it: its value is a string). The acquire
-- scripts read it (defWatched) to mark the lease they grant watched.
local function defWithWatch(def, untilMs)
  def = string.gsub(def, '"watch_ms":%d+,', '', 1)
  local at = string.find(def, '"timeout_ms":%d')
  if not at then return def end
  return string.sub(def, 1, at - 1) .. string.format('"watch_ms":%d,', untilMs) .. string.sub(def, at)
end

-- Whether def is watched at now: one plain find for a definition never watched.
local function defWatched(def, now)
  if not string.find(def, '"watch_ms":', 1, true) then return false end
  return tonumber(string.match(def, '"watch_ms":(%d+)')) >= now
end
