--[[
  Remove the per-instance rows of instances that are gone, from one instance job's
  per-instance hash, so the hash does not grow with every node ever started. A row is
  removed only if its `seenAt` is older than the cutoff (checked here, atomically, so a row
  its instance wrote again in the meantime stays).

  Input:
    KEYS[1] instances  hash  per-instance fields `<instanceId>.<field>`
    KEYS[2] stats      hash  the job's stats: its `version` grows by one when rows are removed
                             (see record.lua)

    ARGV[1] cutoff     string  ISO-8601 time; rows last seen before it are removed
    ARGV[2..n] ids     string  instance ids whose heartbeat is gone (checked by the caller)

  Output:
    the number of fields removed.
]]
local instancesKey, statsKey = KEYS[1], KEYS[2]
local cutoff = ARGV[1]

local doomed = {}
for i = 2, #ARGV do
  local id = ARGV[i]
  local seen = redis.call('HGET', instancesKey, id .. '.seenAt')
  if not seen or seen < cutoff then
    doomed[id .. '.'] = true
  end
end
if next(doomed) == nil then
  return 0
end

local removed = 0
for _, field in ipairs(redis.call('HKEYS', instancesKey)) do
  local dot = string.find(field, '%.[^.]*$')
  if dot and doomed[string.sub(field, 1, dot)] then
    removed = removed + redis.call('HDEL', instancesKey, field)
  end
end
if removed > 0 and redis.call('EXISTS', statsKey) == 1 then
  local version = redis.pcall('HINCRBY', statsKey, 'version', 1)
  if type(version) == 'table' and version.err then redis.pcall('HSET', statsKey, 'version', '1') end
end
return removed
