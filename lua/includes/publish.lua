-- publish: announces message on target, as Baton passes it in ARGV: "P <channel>" (PUBLISH,
-- one Redis node), "S <channel>" (SPUBLISH, Redis Cluster: the channel carries the hash tag
-- of the script's keys, so it stays in their slot) or "" (announce nothing).
local function publish(target, message)
  if target == '' then return end
  rcall(string.sub(target, 1, 1) == 'S' and 'SPUBLISH' or 'PUBLISH', string.sub(target, 3), message)
end
