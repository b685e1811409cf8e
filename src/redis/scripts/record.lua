--[[
  Apply stats batches, one per job, each written by one node, atomically and
  at most once: counters are added, last-run fields replaced when the batch's
  last run is the newest, recent runs pushed to a capped list. A batch whose
  sequence number its writer already applied changes nothing, so a batch
  that is retried after a lost reply counts once. One call carries the
  batches of several jobs on a single Redis (one command for a whole flush);
  on a Redis Cluster one call carries one job (its keys share its hash tag).

  Input, for job j = 1..N (N = #KEYS / 4; a job's keys share its hash tag):
    KEYS[4j-3] stats      hash  the job's cluster-wide counters and last outcome
    KEYS[4j-2] instances  hash  per-instance fields `<instanceId>.<field>`
    KEYS[4j-1] runs       list  recent runs, newest first, JSON strings
    KEYS[4j]   batches    hash  writer id -> `<highest applied sequence number>:<server time ms>`

    ARGV[1] runsCap    integer  length of the recent runs list, > 0
    ARGV[2] keepMs     integer  ms; a writer not heard of for this long is forgotten (its
                                field is removed when another writer's first batch comes),
                                and the batches hash expires this long after the last batch
    ARGV[3j]   writer  string   id of the writing node's stats writer (instance id and a nonce)
    ARGV[3j+1] seq     integer  the batch's sequence number, increasing per writer
    ARGV[3j+2] batch   string   JSON object; every member is optional:
                         init      boolean  create every field with zero or '' if absent (the
                                            stats hash's only while it has no createdAt)
                         createdAt string   ISO; set once, when the stats hash is created
                         define    object   field -> string, set as given (scope, schedule ...)
                         incr      object   field -> integer, added to the stats hash
                         last      object   lastOutcome, lastError, lastStartedAt (ISO),
                                            lastDurationMs, lastInstance: set when
                                            lastStartedAt is not older than the stored one
                         successAt string   ISO end of the batch's newest successful run, or ''
                         fails     integer  unsuccessful runs after successAt (all when '')
                         set       object   field -> string, set as given (nextDueAt, seenAt ...)
                         inst      object   { id, incr, last, set } for the writer's instance
                         runs      array    JSON strings, oldest first

  Output: one reply per job, in input order (each job is applied on its own):
    1                   its batch was applied
    0                   its writer had applied this batch before: nothing changed
    {'error', message}  its seq or batch is invalid (nothing changed), or applying
                        it failed (a key of the wrong type)
  A call whose keys and arguments do not match, or whose runsCap or keepMs is
  invalid, is refused as a whole.
]]
local runsCap = tonumber(ARGV[1])
local keepMs = tonumber(ARGV[2])
if #KEYS == 0 or #KEYS % 4 ~= 0 or #ARGV ~= 2 + (#KEYS / 4) * 3 then
  return redis.error_reply('ERR leasehold record: expects 4 keys and 3 arguments per job')
end
if not runsCap or runsCap < 1 then
  return redis.error_reply('ERR leasehold record: runsCap must be a positive integer')
end
if not keepMs or keepMs < 1 then
  return redis.error_reply('ERR leasehold record: keepMs must be a positive integer')
end

local COUNTERS = {
  'runs', 'succeeded', 'failed', 'timedOut', 'lockLost', 'interrupted', 'cancelled',
  'overruns', 'skipped', 'skippedClaimed', 'skippedPaused', 'missed', 'streak',
}
local TEXTS = {
  'lastOutcome', 'lastError', 'lastStartedAt', 'lastDurationMs', 'lastInstance',
  'lastSuccessAt', 'nextDueAt', 'invalidCause',
}
local INSTANCE_COUNTERS = {
  'runs', 'succeeded', 'failed', 'timedOut', 'lockLost', 'interrupted', 'cancelled', 'overruns', 'skipped',
}
local INSTANCE_TEXTS = { 'lastOutcome', 'lastError', 'lastStartedAt', 'lastDurationMs', 'nextDueAt' }

local function int(n)
  return string.format('%d', n)
end

-- Sets every field of a table, its name after `prefix`, in one HSET.
local function setAll(key, prefix, fields)
  if type(fields) ~= 'table' then return end
  local args = {}
  for field, value in pairs(fields) do
    args[#args + 1] = prefix .. field
    args[#args + 1] = tostring(value)
  end
  if #args > 0 then redis.call('HSET', key, unpack(args)) end
end

local function incrAll(key, prefix, fields)
  if type(fields) ~= 'table' then return end
  for field, n in pairs(fields) do
    if type(n) == 'number' and n ~= 0 then
      redis.call('HINCRBY', key, prefix .. field, int(n))
    end
  end
end

local function apply(statsKey, instancesKey, runsKey, batchesKey, writer, seq, batch)
  local entry = redis.call('HGET', batchesKey, writer)
  local applied = entry and tonumber(string.match(entry, '^(%d+)'))
  if applied and applied >= seq then
    return 0
  end

  local time = redis.call('TIME')
  local nowMs = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  if not entry then
    -- A writer's first batch of this job (a node started): forget writers long gone.
    local all = redis.call('HGETALL', batchesKey)
    for i = 1, #all, 2 do
      local at = tonumber(string.match(all[i + 1], ':(%d+)$'))
      if not at or at < nowMs - keepMs then
        redis.call('HDEL', batchesKey, all[i])
      end
    end
  end

  local inst = batch.inst
  local instPrefix = nil
  if type(inst) == 'table' and type(inst.id) == 'string' then
    instPrefix = inst.id .. '.'
  end

  -- Every node sends its init again each minute, so a hash deleted meanwhile is created again.
  -- A stats hash that has its createdAt (set by an init alone, after the other fields) has had
  -- every field created: one HEXISTS then, not a HSETNX per field, for each job and node (Redis
  -- work that grew with the number of nodes). An instance's own row is its writer's alone.
  if batch.init == true then
    if redis.call('HEXISTS', statsKey, 'createdAt') == 0 then
      for _, field in ipairs(COUNTERS) do redis.call('HSETNX', statsKey, field, '0') end
      for _, field in ipairs(TEXTS) do redis.call('HSETNX', statsKey, field, '') end
      if type(batch.createdAt) == 'string' then
        redis.call('HSETNX', statsKey, 'createdAt', batch.createdAt)
      end
    end
    if instPrefix then
      for _, field in ipairs(INSTANCE_COUNTERS) do redis.call('HSETNX', instancesKey, instPrefix .. field, '0') end
      for _, field in ipairs(INSTANCE_TEXTS) do redis.call('HSETNX', instancesKey, instPrefix .. field, '') end
    end
  end

  setAll(statsKey, '', batch.define)
  incrAll(statsKey, '', batch.incr)

  local last = batch.last
  if type(last) == 'table' and type(last.lastStartedAt) == 'string' then
    local stored = redis.call('HGET', statsKey, 'lastStartedAt') or ''
    if last.lastStartedAt >= stored then
      setAll(statsKey, '', last)
    end
  end

  local fails = tonumber(batch.fails) or 0
  local successAt = batch.successAt
  if type(successAt) == 'string' and successAt ~= '' then
    local stored = redis.call('HGET', statsKey, 'lastSuccessAt') or ''
    if successAt > stored then
      redis.call('HSET', statsKey, 'lastSuccessAt', successAt, 'streak', int(fails))
    elseif fails > 0 then
      redis.call('HINCRBY', statsKey, 'streak', int(fails))
    end
  elseif fails > 0 then
    redis.call('HINCRBY', statsKey, 'streak', int(fails))
  end

  setAll(statsKey, '', batch.set)

  if instPrefix then
    incrAll(instancesKey, instPrefix, inst.incr)
    setAll(instancesKey, instPrefix, inst.last)
    setAll(instancesKey, instPrefix, inst.set)
  end

  if type(batch.runs) == 'table' and #batch.runs > 0 then
    local entries = {}
    for i, entry in ipairs(batch.runs) do entries[i] = tostring(entry) end
    redis.call('LPUSH', runsKey, unpack(entries))
    redis.call('LTRIM', runsKey, 0, runsCap - 1)
  end

  redis.call('HSET', batchesKey, writer, int(seq) .. ':' .. int(nowMs))
  redis.call('PEXPIRE', batchesKey, int(keepMs))
  return 1
end

local results = {}
for j = 1, #KEYS / 4 do
  local seq = tonumber(ARGV[3 * j + 1])
  local ok, batch = pcall(cjson.decode, ARGV[3 * j + 2])
  if not seq or seq ~= math.floor(seq) or seq < 1 then
    results[j] = {'error', 'leasehold record: seq must be a positive integer'}
  elseif not ok or type(batch) ~= 'table' then
    results[j] = {'error', 'leasehold record: batch must be a JSON object'}
  else
    local applied, result = pcall(apply, KEYS[4 * j - 3], KEYS[4 * j - 2], KEYS[4 * j - 1], KEYS[4 * j], ARGV[3 * j], seq, batch)
    if applied then
      results[j] = result
    else
      results[j] = {'error', 'leasehold record: ' .. tostring(type(result) == 'table' and result.err or result)}
    end
  end
end
return results
