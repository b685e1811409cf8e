--[[
  Apply stats batches, one per job, each written by one node, atomically and
  at most once: counters are added, last-run fields replaced when the batch's
  last run is the newest, recent runs pushed to a capped list. A batch whose
  sequence number its writer already applied changes nothing, so a batch
  that is retried after a lost reply counts once. One call carries the
  batches of several jobs on a single Redis (one command for a whole flush);
  on a Redis Cluster one call carries one job (its keys share its hash tag).

  Input, for job j = 1..N (N = #KEYS / 6; a job's keys share its hash tag):
    KEYS[6j-5] stats      hash  the job's cluster-wide counters and last outcome
    KEYS[6j-4] instances  hash  per-instance fields `<instanceId>.<field>`
    KEYS[6j-3] runs       list  recent runs, newest first, JSON strings
    KEYS[6j-2] state      hash  the claim state: its running marker `run` and the tokens
                                recorded lost `lost` (see claim.lua)
    KEYS[6j-1] writers    hash  per writer, two fields:
                                `<writer>.seq`       its highest applied sequence number
                                `<writer>.renewedAt` server time (ms) it last renewed the
                                                     hash's expiry
    KEYS[6j]   lease      str.  the job's lease (see claim.lua): deleted when Redis granted
                                it to a claim whose node gave up on it (see leaseLost)

    ARGV[1] runsCap    integer  length of the recent runs list, > 0
    ARGV[2] keepMs     integer  ms; a writer not heard of for this long is forgotten (its
                                fields are removed when another writer's first batch comes),
                                and the writers hash expires this long after the last batch
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
                         leaseLost array    runs a claim may have recorded lost: their lease
                                            was lost as they ran or not released, each
                                            { token, incr, last, fails, runs }, or their
                                            claim got no answer, { tick, holder, manual,
                                            incr, ... }. One counts unless a claim recorded
                                            its token (or tick) lost (the state's `lost`), and
                                            clears the running marker when it is that run:
                                            one record per token, and per tick. A schedule's
                                            tick (manual not true) whose claim got no answer
                                            counts only if Redis granted that claim, or if
                                            the state's `tick` is before it and no record
                                            counted it (then it joins the state's `failed`,
                                            which the next claim does not count missed), so
                                            once however many nodes tried it, and never also
                                            as missed. When the marker is of a
                                            claim whose node gave up on it, Redis granted
                                            that claim and no run holds its lease: the lease
                                            is deleted too, if it is still that claim's, so
                                            the job's next tick is claimed at once rather
                                            than when the lease expires

  Every applied batch that changes the stats hash or the instance's row raises its `version` (an integer; one that
  holds anything else starts again at 1): a node that read the job's stats before reads them
  again only when it moved (see src/status/read.ts). A batch that changes no field but
  `seenAt` (a node's minute refresh, which writes the job's description again as it was)
  leaves it: the readers read `seenAt` with the version.

  Output: one reply per job, in input order (each job is applied on its own):
    {'applied', streak} its batch was applied; streak is the job's failing streak before
                        it (the stats hash's `streak`), or -1 when the batch holds no run
                        that counts for the streak (it was not read)
    0                   its writer had applied this batch before: nothing changed
    {'error', message}  its seq or batch is invalid, or a counter it adds to holds
                        no integer: nothing of it is counted. Redis refusing a write
                        for reasons of its own (READONLY, NOREPLICAS, OOM) fails the
                        whole call instead: no batch is to blame
    {'corrupt', key, found, want}
                        a key it writes holds a `found` (a Redis type) where a
                        `want` is kept (something else wrote it). Every key a batch
                        writes is checked before its first write: nothing of the
                        job changed, and the other jobs' batches apply as ever
  A call whose keys and arguments do not match, or whose runsCap or keepMs is
  invalid, is refused as a whole.
]]
local runsCap = tonumber(ARGV[1])
local keepMs = tonumber(ARGV[2])
if #KEYS == 0 or #KEYS % 6 ~= 0 or #ARGV ~= 2 + (#KEYS / 6) * 3 then
  return redis.error_reply('ERR leasehold record: expects 6 keys and 3 arguments per job')
end
if not runsCap or runsCap < 1 then
  return redis.error_reply('ERR leasehold record: runsCap must be a positive integer')
end
if not keepMs or keepMs < 1 then
  return redis.error_reply('ERR leasehold record: keepMs must be a positive integer')
end

local COUNTERS = {
  'runs', 'succeeded', 'failed', 'timedOut', 'lockLost', 'lost', 'interrupted', 'cancelled',
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

-- `command` on `key` (`redis.pcall` of `command` and `...`): its reply, or nil when the key holds
-- another type (the command fails with WRONGTYPE). A hash's read, or a list's first write made
-- before any other write, is the key's type check: it needs no TYPE of its own. Any other
-- error is raised as ever.
local function checked(command, key, ...)
  local reply = redis.pcall(command, key, ...)
  if type(reply) == 'table' and reply.err then
    if string.sub(reply.err, 1, 9) == 'WRONGTYPE' then return nil end
    error(reply)
  end
  return reply
end

-- The answer for `key` of the wrong type: TYPE is asked only here, to name what it holds.
local function corrupt(key, want)
  return {'corrupt', key, redis.call('TYPE', key)['ok'], want}
end

-- Applies a job's changes to one hash in two commands: one HMGET of the fields it reads (the
-- counters to add to and the fields that decide), one HSET of every field it writes. The
-- script runs atomically, so reading and writing back is as safe as HINCRBY field by field,
-- and a counter that holds no integer is refused before anything is written. The HMGET is
-- the hash's type check too: hash() answers nil for a key of another type (a hash with no
-- field to read asks its TYPE instead).
local Hash = {}
Hash.__index = Hash

local function hash(key, prefix, reads)
  local self = setmetatable({ key = key, prefix = prefix, stored = {}, out = {}, order = {} }, Hash)
  local names = {}
  for i, field in ipairs(reads) do names[i] = prefix .. field end
  if #names > 0 then
    local values = checked('HMGET', key, unpack(names))
    if not values then return nil end
    for i, field in ipairs(reads) do self.stored[field] = values[i] end
  else
    local found = redis.call('TYPE', key)['ok']
    if found ~= 'none' and found ~= 'hash' then return nil end
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

-- Raises `field` by one, starting again at 1 when it holds no integer: a version is never a
-- reason to refuse a batch.
function Hash:bump(field)
  local n = tonumber(self:get(field))
  if not n or n ~= math.floor(n) then n = 0 end
  self:set(field, int(n + 1))
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

-- The fields of `fields` (a table of field -> string), added to `into`: fields whose stored
-- value is read, so that a write of the same value is known to change nothing.
local function named(fields, into)
  if type(fields) ~= 'table' then return end
  for field in pairs(fields) do into[#into + 1] = field end
end

-- Whether the hash's writes change a field but `except`: a field written with the value it
-- holds changes nothing; one whose stored value was not read counts as changed, and so does
-- `except` where it was absent (it makes a row, or a hash, of its own).
function Hash:changes(except)
  for _, field in ipairs(self.order) do
    local stored = self.stored[field]
    if self.out[field] ~= stored and (field ~= except or not stored) then return true end
  end
  return false
end

-- The fields of `fields` (a table of field -> number) that are added to.
local function counted(fields, into)
  if type(fields) ~= 'table' then return end
  for field, n in pairs(fields) do
    if type(n) == 'number' and n ~= 0 then into[#into + 1] = field end
  end
end

-- Creates the absent ones of `counters` (as '0') and `texts` (as '') with the hash's write. The
-- fields hash() did not read are read here, in one HMGET (none when it read them all).
function Hash:createMissing(counters, texts)
  local fields = {}
  for _, field in ipairs(counters) do fields[#fields + 1] = field end
  for _, field in ipairs(texts) do fields[#fields + 1] = field end
  local unread, names = {}, {}
  for _, field in ipairs(fields) do
    if self.stored[field] == nil then
      unread[#unread + 1] = field
      names[#names + 1] = self.prefix .. field
    end
  end
  if #names > 0 then
    local values = redis.call('HMGET', self.key, unpack(names))
    for i, field in ipairs(unread) do self.stored[field] = values[i] end
  end
  for i, field in ipairs(fields) do
    if not self.stored[field] and self.out[field] == nil then self:set(field, i <= #counters and '0' or '') end
  end
end

local time = redis.call('TIME')
local nowMs = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

-- How many ticks counted from failed claims the claim state keeps until a claim of a later tick
-- (claim.lua): a Redis away for longer drops the oldest, which that claim then counts missed too.
local FAILED_KEPT = 100

-- Removes the fields of the writers that last renewed before `before` (ms), and any field
-- that is not a writer's `.seq` or `.renewedAt` with its `.renewedAt` beside it.
local function forgetWriters(writersKey, before)
  local all = redis.call('HGETALL', writersKey)
  local renewedAt = {}
  for i = 1, #all, 2 do
    local writer = string.match(all[i], '^(.*)%.renewedAt$')
    if writer then renewedAt[writer] = tonumber(all[i + 1]) end
  end
  for i = 1, #all, 2 do
    local writer = string.match(all[i], '^(.*)%.seq$') or string.match(all[i], '^(.*)%.renewedAt$')
    local at = writer and renewedAt[writer]
    if not at or at < before then
      redis.call('HDEL', writersKey, all[i])
    end
  end
end

-- Adds to `batch` the runs of `leaseLost` that no claim recorded lost: neither their token nor,
-- for a claim that got no answer, their tick is in the state's `lost` list (see claim.lua).
-- A claim of a schedule's tick that got no answer counts once per tick, not once per node
-- that tried (the first claimer and its backup both fail while Redis is away): as a failed run
-- when Redis granted it (the running marker is its own), or when no claim of that tick or a
-- later one was made and no other record counted it (the tick then joins the state's `failed`,
-- so that neither another node's record of it nor the next claim's missed ticks count it
-- again); not at all when the tick was claimed (another node ran it) or counted missed by a
-- later claim already.
-- Returns the fields to set in the state hash (nothing is written here): `run` cleared when
-- the running marker is one of them (the run is recorded here, so no later claim finds it
-- lost), `gaveUp.<holder>` for a claim that got no answer and counts, so Redis never grants it
-- if it reaches Redis only now, and `failed` with the ticks counted here. Returns second the
-- value's ending and start of a lease that no run holds, to delete: the marker was of a claim
-- that got no answer, so Redis granted it after all. A state key of another type (damaged) holds no marker and no
-- lost run, and no claim can record one while it is damaged: the runs count, and it is left
-- alone.
local function admitLeaseLost(stateKey, batch)
  if type(batch.leaseLost) ~= 'table' or #batch.leaseLost == 0 then return {} end
  local state = checked('HMGET', stateKey, 'run', 'lost', 'tick', 'failed')
  local damaged = not state
  state = state or {}
  local runToken, runTick, runHolder = string.match(state[1] or '', '^(%d+) (%-?%d+) %d+ [01] (.*)$')
  local lastTick = tonumber(state[3])
  -- The ticks after the last claimed one that records of failed claims counted already.
  local failed, failedList, added = {}, {}, false
  for t in string.gmatch(state[4] or '', '%S+') do
    failed[tonumber(t)] = true
    failedList[#failedList + 1] = t
  end
  local lostTokens, lostTicks = {}, {}
  for token, tick in string.gmatch(state[2] or '', '(%d+):(%-?%d+)') do
    lostTokens[tonumber(token)] = true
    lostTicks[tonumber(tick)] = true
  end
  local function list(t) return type(t) == 'table' and t or {} end
  local clear = false
  local orphan = nil
  local writes = {}
  for _, e in ipairs(batch.leaseLost) do
    local token = type(e) == 'table' and tonumber(e.token)
    local tick = type(e) == 'table' and not token and tonumber(e.tick)
    local granted = tick and tick == tonumber(runTick) and e.holder == runHolder
    if tick and not lostTicks[tick] and not granted and e.manual ~= true then
      if (lastTick and lastTick >= tick) or failed[tick] then
        tick = nil -- claimed, counted missed, or counted by another node's record: not a run here
      else
        failed[tick] = true
        failedList[#failedList + 1] = string.format('%d', tick)
        added = true
      end
    end
    if (token and not lostTokens[token]) or (tick and not lostTicks[tick]) then
      batch.incr = list(batch.incr)
      for f, n in pairs(list(e.incr)) do batch.incr[f] = (tonumber(batch.incr[f]) or 0) + n end
      local last = list(e.last)
      if type(last.lastStartedAt) == 'string' and last.lastStartedAt >= (list(batch.last).lastStartedAt or '') then batch.last = last end
      batch.fails = (tonumber(batch.fails) or 0) + (tonumber(e.fails) or 0)
      batch.runs = list(batch.runs)
      for _, r in ipairs(list(e.runs)) do batch.runs[#batch.runs + 1] = r end
      if token and token == tonumber(runToken) then clear = true end
      if granted then
        clear = true
        orphan = { ending = ' token ' .. runToken, start = runHolder .. ' since ' }
      end
      if tick and type(e.holder) == 'string' then
        writes[#writes + 1] = 'gaveUp.' .. e.holder
        writes[#writes + 1] = string.format('%d', tick)
      end
    end
  end
  if clear then
    writes[#writes + 1] = 'run'
    writes[#writes + 1] = ''
  end
  if added then
    while #failedList > FAILED_KEPT do table.remove(failedList, 1) end
    writes[#writes + 1] = 'failed'
    writes[#writes + 1] = table.concat(failedList, ' ')
  end
  if damaged then return {} end
  return writes, orphan
end

local function apply(statsKey, instancesKey, runsKey, stateKey, writersKey, leaseKey, writer, seq, batch)
  local seqField = writer .. '.seq'
  local renewedField = writer .. '.renewedAt'
  -- Every key the batch writes is checked before the first write, by the read that comes
  -- before its write (a read of a key of another type fails): the writers hash, the state hash
  -- (when the batch has leaseLost runs: one of another type is not written), the stats hash,
  -- the instance row. The runs list, which is not read, by its LPUSH, the first write. A batch
  -- that finds one of the wrong type changes nothing.
  local entry = checked('HMGET', writersKey, seqField, renewedField)
  if not entry then return corrupt(writersKey, 'hash') end
  local applied = entry[1] and tonumber(entry[1])
  if applied and applied >= seq then
    return 0
  end

  local stateWrites, orphan = admitLeaseLost(stateKey, batch)
  local inst = batch.inst
  local instPrefix = nil
  if type(inst) == 'table' and type(inst.id) == 'string' then
    instPrefix = inst.id .. '.'
  end
  local init = batch.init == true

  local reads = {}
  counted(batch.incr, reads)
  -- A batch that adds to a counter changes the hash whatever else it sets: only one that adds
  -- nothing (a minute refresh, a next due time) has the values it sets compared with the
  -- stored ones, so a run's record reads no more than before.
  local counts = #reads > 0
  local last = batch.last
  local hasLast = type(last) == 'table' and type(last.lastStartedAt) == 'string'
  if hasLast then reads[#reads + 1] = 'lastStartedAt' end
  local fails = tonumber(batch.fails) or 0
  local successAt = batch.successAt
  local hasSuccess = type(successAt) == 'string' and successAt ~= ''
  local streakRead = hasSuccess or fails > 0
  if streakRead then
    reads[#reads + 1] = 'lastSuccessAt'
    reads[#reads + 1] = 'streak'
  end
  -- Every node sends its init again each minute, so a hash deleted meanwhile is created again.
  -- A stats hash that has its createdAt (set by an init alone, with the other fields) has had
  -- every field created: the field rides the stats read then, for each job and node (Redis work
  -- that grew with the number of nodes). An instance's own row is its writer's alone.
  if init then reads[#reads + 1] = 'createdAt' end
  reads[#reads + 1] = 'version'
  if not counts then
    named(batch.define, reads)
    named(batch.set, reads)
  end

  local stats = hash(statsKey, '', reads)
  if not stats then return corrupt(statsKey, 'hash') end
  if init and not stats:get('createdAt') then
    stats:createMissing(COUNTERS, TEXTS)
    if type(batch.createdAt) == 'string' then stats:set('createdAt', batch.createdAt) end
  end
  -- The streak before this batch, told to the writer: the node whose batch starts or ends the
  -- installation's streak logs it, so each is logged once however many nodes run the job.
  local streakBefore = -1
  if streakRead then streakBefore = tonumber(stats:get('streak')) or 0 end
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
    if #instReads == 0 then named(inst.set, instReads) end
    if init then
      -- The row's fields to create are read with the rest: one HMGET.
      for _, field in ipairs(INSTANCE_COUNTERS) do instReads[#instReads + 1] = field end
      for _, field in ipairs(INSTANCE_TEXTS) do instReads[#instReads + 1] = field end
    end
    row = hash(instancesKey, instPrefix, instReads)
    if not row then return corrupt(instancesKey, 'hash') end
    if init then row:createMissing(INSTANCE_COUNTERS, INSTANCE_TEXTS) end
    row:incrAll(inst.incr)
    row:setAll(inst.last)
    row:setAll(inst.set)
  end

  local hasRuns = type(batch.runs) == 'table' and #batch.runs > 0
  if hasRuns then
    local entries = {}
    for i, run in ipairs(batch.runs) do entries[i] = tostring(run) end
    if not checked('LPUSH', runsKey, unpack(entries)) then return corrupt(runsKey, 'list') end
    redis.call('LTRIM', runsKey, 0, runsCap - 1)
  end

  -- Every check is done: write the rest.
  if not entry[1] then
    -- A writer's first batch of this job (a node started): forget writers long gone.
    forgetWriters(writersKey, nowMs - keepMs)
  end
  -- A hash an older release wrote has no version: it gets one at its next write, the minute
  -- refresh at the latest, and is read whole until then.
  local unversioned = #stats.order > 0 and tonumber(stats:get('version')) == nil
  if unversioned or stats:changes('seenAt') or (row and row:changes('seenAt')) then stats:bump('version') end
  stats:write()
  if row then row:write() end
  if #stateWrites > 0 then redis.call('HSET', stateKey, unpack(stateWrites)) end
  if orphan then
    -- A lease of another type (damaged) is the next claim's to report: it is left alone.
    local held = redis.pcall('GET', leaseKey)
    if type(held) == 'string' and string.sub(held, 1, #orphan.start) == orphan.start and string.sub(held, -#orphan.ending) == orphan.ending then
      redis.call('DEL', leaseKey)
    end
  end

  -- The expiry is renewed by a writer's first batch and then once per hundredth of keepMs,
  -- not with every batch: the hash outlives its last batch by at least 0.99 keepMs. It is
  -- set after the write, which creates the hash when this is its first batch.
  local renewed = entry[2] and tonumber(entry[2])
  if not renewed or nowMs - renewed >= math.max(1, math.floor(keepMs / 100)) then
    redis.call('HSET', writersKey, seqField, int(seq), renewedField, int(nowMs))
    redis.call('PEXPIRE', writersKey, int(keepMs))
  else
    redis.call('HSET', writersKey, seqField, int(seq))
  end
  return { 'applied', streakBefore }
end

-- True for an error of Redis's own state (READONLY, NOREPLICAS, OOM, MASTERDOWN, BUSY ...): an
-- error reply's code word, other than the two a batch causes itself (a key of the wrong type,
-- a counter that holds no integer). A Lua error of the script's own has no such code.
local function refusedByRedis(message)
  local code = string.match(message, '^(%u+) ')
  return code ~= nil and code ~= 'WRONGTYPE' and not string.find(message, 'not an integer', 1, true)
end

local results = {}
for j = 1, #KEYS / 6 do
  local seq = tonumber(ARGV[3 * j + 1])
  local ok, batch = pcall(cjson.decode, ARGV[3 * j + 2])
  if not seq or seq ~= math.floor(seq) or seq < 1 then
    results[j] = {'error', 'leasehold record: seq must be a positive integer'}
  elseif not ok or type(batch) ~= 'table' then
    results[j] = {'error', 'leasehold record: batch must be a JSON object'}
  else
    local applied, result = pcall(apply, KEYS[6 * j - 5], KEYS[6 * j - 4], KEYS[6 * j - 3], KEYS[6 * j - 2], KEYS[6 * j - 1], KEYS[6 * j], ARGV[3 * j], seq, batch)
    if applied then
      results[j] = result
    else
      local message = tostring(type(result) == 'table' and result.err or result)
      if refusedByRedis(message) then
        -- Not the batch's fault: the call fails as a whole and the node tries it again, without end.
        return redis.error_reply(message)
      end
      results[j] = {'error', 'leasehold record: ' .. message}
    end
  end
end
return results
