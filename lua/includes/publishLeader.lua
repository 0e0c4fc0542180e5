-- publishLeader: announces a leadership change to every replica's observers.
-- Message: "election|kind|token|candidate|at" (names never contain '|').
local function publishLeader(channel, election, kind, token, candidate, at)
  publish(channel, election .. '|' .. kind .. '|' .. token .. '|' .. candidate .. '|' .. string.format('%d', at))
end
