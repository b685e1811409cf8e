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
    KEYS[4j]   batches    hash  writer id -> `<highest applied sequence number>:<server time ms>`,
                                the time this writer last renewed the hash's expiry

    ARGV[1] runsCap    integer  length of the recent runs list, > 0
    ARGV[2] keepMs     integer  ms; a writer not heard of for this long is forgotten (its
                                field is removed when another writer's first batch comes),
                                and the batches hash expires this long after the last batch
                                (a hundredth of it less at most: see the end of apply)
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

-- Applies a job's changes to one hash in two commands: one HMGET of the fields it reads (the
-- counters to add to and the fields that decide), one HSET of every field it writes. The
-- script runs atomically, so reading and writing back is as safe as HINCRBY field by field,
-- and a counter that holds no integer is refused before anything is written.
local Hash = {}
Hash.__index = Hash

local function hash(key, prefix, reads)
  local self = setmetatable({ key = key, prefix = prefix, stored = {}, out = {}, order = {} }, Hash)
  local names = {}
  for i, field in ipairs(reads) do names[i] = prefix .. field end
  if #names > 0 then
    local values = redis.call('HMGET', key, unpack(names))
    for i, field in ipairs(reads) do self.stored[field] = values[i] end
  end
  return self
end

function Hash:get(field)
  local v = self.out[field]
  if v == nil then v = self.stored[field] end
  if v == false then return nil end
  return v
end

function Hash:set(field, value)
  if self.out[field] == nil then self.order[#self.order + 1] = field end
  self.out[field] = tostring(value)
end

function Hash:setAll(fields)
  if type(fields) ~= 'table' then return end
  for field, value in pairs(fields) do self:set(field, value) end
end

function Hash:incr(field, n)
  local current = self:get(field)
  local base = 0
  if current ~= nil then
    base = tonumber(current)
    if not base or base ~= math.floor(base) then
      error({ err = 'hash value is not an integer: ' .. self.prefix .. field })
    end
  end
  self:set(field, int(base + n))
end

function Hash:incrAll(fields)
  if type(fields) ~= 'table' then return end
  for field, n in pairs(fields) do
    if type(n) == 'number' and n ~= 0 then self:incr(field, n) end
  end
end

function Hash:write()
  if #self.order == 0 then return end
  local args = {}
  for _, field in ipairs(self.order) do
    args[#args + 1] = self.prefix .. field
    args[#args + 1] = self.out[field]
  end
  redis.call('HSET', self.key, unpack(args))
end

-- The fields of `fields` (a table of field -> number) that are added to.
local function counted(fields, into)
  if type(fields) ~= 'table' then return end
  for field, n in pairs(fields) do
    if type(n) == 'number' and n ~= 0 then into[#into + 1] = field end
  end
end

-- Creates the absent ones of `counters` (as '0') and `texts` (as '') in one read and one write.
local function createMissing(key, prefix, counters, texts)
  local fields = {}
  for _, field in ipairs(counters) do fields[#fields + 1] = field end
  for _, field in ipairs(texts) do fields[#fields + 1] = field end
  local h = hash(key, prefix, fields)
  for i, field in ipairs(fields) do
    if not h.stored[field] then h:set(field, i <= #counters and '0' or '') end
  end
  return h
end

local time = redis.call('TIME')
local nowMs = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

local function apply(statsKey, instancesKey, runsKey, batchesKey, writer, seq, batch)
  local entry = redis.call('HGET', batchesKey, writer)
  local applied = entry and tonumber(string.match(entry, '^(%d+)'))
  if applied and applied >= seq then
    return 0
  end

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
  -- every field created: one HEXISTS then, for each job and node (Redis work that grew with
  -- the number of nodes). An instance's own row is its writer's alone.
  if batch.init == true then
    if redis.call('HEXISTS', statsKey, 'createdAt') == 0 then
      createMissing(statsKey, '', COUNTERS, TEXTS):write()
      if type(batch.createdAt) == 'string' then
        redis.call('HSETNX', statsKey, 'createdAt', batch.createdAt)
      end
    end
    if instPrefix then createMissing(instancesKey, instPrefix, INSTANCE_COUNTERS, INSTANCE_TEXTS):write() end
  end

  local reads = {}
  counted(batch.incr, reads)
  local last = batch.last
  local hasLast = type(last) == 'table' and type(last.lastStartedAt) == 'string'
  if hasLast then reads[#reads + 1] = 'lastStartedAt' end
  local fails = tonumber(batch.fails) or 0
  local successAt = batch.successAt
  local hasSuccess = type(successAt) == 'string' and successAt ~= ''
  if hasSuccess or fails > 0 then
    reads[#reads + 1] = 'lastSuccessAt'
    reads[#reads + 1] = 'streak'
  end

  local stats = hash(statsKey, '', reads)
  stats:setAll(batch.define)
  stats:incrAll(batch.incr)
  if hasLast and last.lastStartedAt >= (stats:get('lastStartedAt') or '') then
    stats:setAll(last)
  end
  if hasSuccess and successAt > (stats:get('lastSuccessAt') or '') then
    stats:set('lastSuccessAt', successAt)
    stats:set('streak', int(fails))
  elseif fails > 0 then
    stats:incr('streak', fails)
  end
  stats:setAll(batch.set)

  local row = nil
  if instPrefix then
    local instReads = {}
    counted(inst.incr, instReads)
    row = hash(instancesKey, instPrefix, instReads)
    row:incrAll(inst.incr)
    row:setAll(inst.last)
    row:setAll(inst.set)
  end

  -- Every check is done: write.
  stats:write()
  if row then row:write() end

  if type(batch.runs) == 'table' and #batch.runs > 0 then
    local entries = {}
    for i, entry in ipairs(batch.runs) do entries[i] = tostring(entry) end
    redis.call('LPUSH', runsKey, unpack(entries))
    redis.call('LTRIM', runsKey, 0, runsCap - 1)
  end

  -- The expiry is renewed by a writer's first batch and then once per hundredth of keepMs,
  -- not with every batch: the hash outlives its last batch by at least 0.99 keepMs.
  local renewed = entry and tonumber(string.match(entry, ':(%d+)$'))
  if not renewed or nowMs - renewed >= math.max(1, math.floor(keepMs / 100)) then
    renewed = nowMs
    redis.call('PEXPIRE', batchesKey, int(keepMs))
  end
  redis.call('HSET', batchesKey, writer, int(seq) .. ':' .. int(renewed))
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
