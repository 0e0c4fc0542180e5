-- publish: announces message on target, as Baton passes it in ARGV: "P <channel>" (PUBLISH,
-- one Redis node), "S <channel>" (SPUBLISH, Redis Cluster: the channel carries the hash tag
-- of the script's keys, so it stays in their slot) or "" (announce nothing). The scripts that
-- record finishes take "<target>\n<outbox channel>": the second line is for announceOutbox.
local function publish(target, message)
  if target == '' then return end
  local nl = string.find(target, '\n', 3, true)
  local channel = string.sub(target, 3, nl and nl - 1 or -1)
  rcall(string.sub(target, 1, 1) == 'S' and 'SPUBLISH' or 'PUBLISH', channel, message)
end

-- announceOutbox: tells every replica that queue has new outbox entries (children to release),
-- on the outbox channel of target's second line, if any. Always PUBLISH: the channel belongs
-- to no slot, and on Redis Cluster a PUBLISH reaches the subscribers of every node, so a live
-- replica releases what a replica that died right after this script left behind.
local function announceOutbox(target, queue)
  local nl = string.find(target, '\n', 3, true)
  if nl then rcall('PUBLISH', string.sub(target, nl + 1), queue) end
end
