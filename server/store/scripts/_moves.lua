-- Prepended to every script that changes a status. The allowed changes come from the lifecycle table
-- (server/protocol/lifecycle.py), never from literals here: an argument lists an event's moves as
-- "from>to" pairs separated by spaces ("queued>cancelling in_progress>cancelling").
-- Returns the status `current` moves to, or nil when the event is not allowed from it.
local function move_of(moves, current)
  if not current then return nil end
  for source, target in string.gmatch(moves, '([%w_]+)>([%w_]+)') do
    if source == current then return target end
  end
  return nil
end

-- Whether `status` is one of the space-separated `statuses`.
local function one_of(statuses, status)
  if not status then return false end
  for s in string.gmatch(statuses, '[%w_]+') do
    if s == status then return true end
  end
  return false
end
