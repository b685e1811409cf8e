--[[
  Claim jobs' leases, each for one schedule tick, at most once per tick for
  the whole installation, and mint fencing tokens. Decides on Redis server
  time (TIME) only, never on a node's clock. One call claims any number of
  jobs (the claims of jobs due at the same instant travel together); each
  job is decided on its own, in order, exactly as if claimed alone.

  Input, four keys and one argument per job (job i from 1):
    KEYS[4i-3] lease  string  the job's lease; value says holder, since, tick, token
    KEYS[4i-2] state  hash    tick = last claimed tick (epoch ms),
                              fence = fencing counter,
                              due = next fixedDelay start (epoch ms),
                              manual, manualAt = the last manual claim's
                              request id and server time (epoch ms),
                              run = the running marker of the last claim won,
                              `<token> <tick> <startedAt ms> <manual 0|1> <holder>`
                              (startedAt: the claim's time, or its tick when later),
                              '' (or absent) once its run is released or recorded,
                              lost = the last runs recorded lost here, each
                              `<token>:<tick>`, space-separated, newest last (at
                              most LOST_KEPT),
                              `gaveUp.<holder>` = a tick whose claim that holder
                              gave up on (no answer came) and recorded failed
                              (record.lua): a claim of it that Redis reaches
                              only now is answered 'done'; the holder's next
                              claim won removes the field,
                              failed = the ticks after the last claimed one
                              whose failed claims a record counted (record.lua),
                              space-separated: the claim of a later tick does
                              not count them missed
    KEYS[4i-1] stats  hash    the job's counters: `skipped` and `skippedClaimed`
                              grow by one for a counted 'done'; `runs`, `lost`
                              and `streak` by one for a lost run; `version` by
                              one with each of these writes (record.lua)
    KEYS[4i]   runs   list    recent runs, newest first: a lost run is pushed

    ARGV[i]  string  the job's arguments, a JSON object with these members:
      tick        integer  epoch ms; the schedule tick every node agrees on
      leaseMs     integer  ms; lease time to live, > 0
      mode        string   'grid' (cron, fixedRate), 'delay' (fixedDelay),
                           'manual' (an operator's run now: a claim of its
                           own that takes the lease and mints a token but
                           leaves the schedule's tick alone; `tick` is the
                           moment asked) or 'pause' (the job is paused: the
                           tick is marked as handled, with no lease and no
                           run, and counted once as a paused skip)
      nowGuardMs  integer  ms; how far before the tick a claim is accepted, >= 0
      countSkip   boolean  true: a 'done' answer is the claimant's skip with
                           reason claimed, and is counted in the stats hash
                           here. The claimant learns that it lost the tick
                           from this very reply, so counting it here costs
                           no second round trip to Redis and no stats write
                           by the node; false: not counted
      holder      string   instance id of the claimant
      runsCap     integer  length of the recent runs list, > 0
      request     string   manual only, optional: the id of the operator's
                           request; a second claim with the same id answers
                           'done', so every node that heard the request may
                           try and exactly one runs it. Without one, manual
                           claims within a second of the last are one request
      answerBy    integer  optional: epoch ms on Redis time; the claimant
                           stops waiting for the answer about then. A claim
                           that Redis reaches later (it was stalled, or the
                           connection was) is answered 'stale' and grants
                           nothing: a lease granted then would hold the job
                           with no run until it expired, and its marker would
                           be found and recorded as a lost run that never ran

  Output: one reply per job, in input order; each is the first decision that
  applies:
    {'error', message}        the job's argument is malformed or invalid;
                              nothing changed
    {'early', serverNowMs}    server time is before tick - nowGuardMs
    {'corrupt', key, found, want}
                              a key of the job holds a `found` (a Redis type)
                              where a `want` is kept: something else wrote it.
                              Every key is checked before the job's first
                              write, so nothing of the job changed; the other
                              jobs are decided as ever
    {'stale', serverNowMs, answerBy}
                              server time is past answerBy: nothing granted, no
                              token minted, nothing written: its claimant records
                              it failed (record.lua)
    {'done', lastTick, counted}
                              this tick, or a later one, was already claimed;
                              counted 1 when counted as a claimed skip (asked
                              by countSkip, and the stats hash could take it),
                              else 0; for 'manual', the request was claimed
                              already (lastTick -1 when no tick was ever claimed);
                              also when the claimant gave up on this very claim
                              (gaveUp): nothing granted (its record counted it)
    {'paused', previousTick}  'pause': the tick is marked as handled and one
                              paused skip counted (previousTick -1: none)
    {'notDue', dueMs}         mode 'delay' and tick is before state.due
    {'held', value, pttlMs}   someone holds the lease (pttlMs -1: no TTL)
    {'claimed', token, value, previousTick, serverNowMs, lost, failedTicks}
                              claimed: state.tick = tick (not for 'manual'),
                              state.fence incremented to token, state.run set
                              to this claim's marker, lease set with leaseMs;
                              previousTick is the last claimed tick or -1.
                              lost is '' or the marker of a run found lost
                              and recorded here (see below); failedTicks
                              the ticks after previousTick and before this one
                              that records of failed claims counted, space-
                              separated (state `failed`, from which this claim
                              removes every tick up to its own): not missed

  A lost run: a claim that takes the lease finds the running marker of an
  earlier claim still set. That run's lease expired and its run was neither
  released nor recorded (its node was killed, or froze past its lease): it
  is recorded here, once, with outcome 'lost' (stats runs, lost and streak
  +1; the last outcome when it is the newest start; a recent run), and the
  marker is replaced; its token and tick join the state's `lost` list. A
  holder that wakes, or reaches Redis again, and records the same run (or
  the claim whose answer it never got) finds it there and its record is
  refused (record.lua): one record per fencing token, and per tick. The marker costs no command of its own: it is read by
  the claim's HMGET and written by its HSET; the release clears it.
  A call whose keys are not four per argument is refused as a whole.
]]
if #KEYS ~= 4 * #ARGV then
  return redis.error_reply('ERR leasehold claim: expected 4 keys and 1 argument per job')
end

-- ISO-8601 UTC text of an epoch ms value (days to civil date, proleptic
-- Gregorian calendar), as Date.prototype.toISOString writes it.
local function iso(ms)
  local secs = math.floor(ms / 1000)
  local milli = ms - secs * 1000
  local days = math.floor(secs / 86400)
  local sod = secs - days * 86400
  local z = days + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524)
    - math.floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local day = doy - math.floor((153 * mp + 2) / 5) + 1
  local month = mp < 10 and mp + 3 or mp - 9
  local year = yoe + era * 400
  if month <= 2 then year = year + 1 end
  return string.format('%04d-%02d-%02dT%02d:%02d:%02d.%03dZ', year, month, day,
    math.floor(sod / 3600), math.floor((sod % 3600) / 60), sod % 60, milli)
end

-- How many tokens recorded lost the state keeps: a node's record of one of them arrives at its
-- next flush, long before this many more runs of the job are found lost.
local LOST_KEPT = 16

local time = redis.call('TIME')
local nowMs = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

local nowIso = iso(nowMs)

-- Why a job's arguments cannot be used, or nil.
local function invalid(job)
  local tick, leaseMs, nowGuardMs = job.tick, job.leaseMs, job.nowGuardMs
  if type(tick) ~= 'number' or tick ~= math.floor(tick) then
    return 'leasehold claim: tick must be an integer (ms)'
  end
  if type(leaseMs) ~= 'number' or leaseMs <= 0 or leaseMs ~= math.floor(leaseMs) then
    return 'leasehold claim: leaseMs must be a positive integer'
  end
  local mode = job.mode
  if mode ~= 'grid' and mode ~= 'delay' and mode ~= 'manual' and mode ~= 'pause' then
    return 'leasehold claim: mode must be grid, delay, manual or pause'
  end
  if job.request ~= nil and type(job.request) ~= 'string' then
    return 'leasehold claim: request must be a string'
  end
  if type(nowGuardMs) ~= 'number' or nowGuardMs < 0 then
    return 'leasehold claim: nowGuardMs must be >= 0'
  end
  if type(job.countSkip) ~= 'boolean' then
    return 'leasehold claim: countSkip must be true or false'
  end
  if type(job.holder) ~= 'string' then
    return 'leasehold claim: holder must be a string'
  end
  local cap = job.runsCap
  if type(cap) ~= 'number' or cap < 1 or cap ~= math.floor(cap) then
    return 'leasehold claim: runsCap must be a positive integer'
  end
  local by = job.answerBy
  if by ~= nil and (type(by) ~= 'number' or by ~= math.floor(by)) then
    return 'leasehold claim: answerBy must be an integer (ms)'
  end
  return nil
end

-- A command whose failure is this job's own: a key of the wrong type, a field that holds no
-- integer. Answers the reply, or nil and the error's text; any other error (Redis out of
-- memory, a read-only replica) fails the call as a whole, as Redis failing does.
local function try(...)
  local reply = redis.pcall(...)
  if type(reply) == 'table' and reply.err then
    if string.find(reply.err, 'WRONGTYPE', 1, true) or string.find(reply.err, 'not an integer', 1, true) then
      return nil, reply.err
    end
    error(reply)
  end
  return reply
end

-- Raises the stats hash's `version` after a write of it, as record.lua does: 1 again when it
-- holds no integer.
local function bumpVersion(statsKey)
  if not try('HINCRBY', statsKey, 'version', 1) then redis.call('HSET', statsKey, 'version', '1') end
end

-- The answer for a key of the wrong type, naming the type found there.
local function corrupt(key, want)
  return {'corrupt', key, redis.call('TYPE', key)['ok'], want}
end

-- An integer stats field (absent: 0), or nil when it holds something else.
local function counter(v)
  if not v then return 0 end
  local n = tonumber(v)
  if n and n == math.floor(n) then return n end
  return nil
end

-- Records the run of `marker` as lost (see the header). Counters that hold no integer, or keys
-- of the wrong type, are left alone: the recent run is still pushed where it can be.
local function recordLost(statsKey, runsKey, job, marker)
  local token, tick, startedAt, manual, holder = string.match(marker, '^(%d+) (%-?%d+) (%d+) ([01]) (.*)$')
  if not token then return '' end
  token, tick, startedAt = tonumber(token), tonumber(tick), tonumber(startedAt)
  local startedIso = iso(startedAt)
  local err = 'no outcome was recorded: node ' .. holder .. ' stopped or froze while it held the lease of this tick (during its run, or before it began) and the lease expired (found by ' .. job.holder .. ')'
  local s = redis.pcall('HMGET', statsKey, 'runs', 'lost', 'streak', 'lastStartedAt', 'version')
  if type(s) == 'table' and not s.err then
    local runs, lost, streak = counter(s[1]), counter(s[2]), counter(s[3])
    if runs and lost and streak then
      local int = function(n) return string.format('%d', n) end
      local fields = {'runs', int(runs + 1), 'lost', int(lost + 1), 'streak', int(streak + 1), 'version', int((counter(s[5]) or 0) + 1)}
      if startedIso >= (s[4] or '') then
        for _, v in ipairs({'lastOutcome', 'lost', 'lastError', err, 'lastStartedAt', startedIso,
          'lastDurationMs', int(math.max(0, nowMs - startedAt)), 'lastInstance', holder}) do fields[#fields + 1] = v end
      end
      redis.call('HSET', statsKey, unpack(fields))
    end
  end
  local entry = cjson.encode({
    outcome = 'lost', instance = holder, scheduledAt = iso(tick), startedAt = startedIso,
    durationMs = math.max(0, nowMs - startedAt), error = err, fencingToken = token,
    manual = manual == '1', attempt = 1,
  })
  if type(redis.pcall('LPUSH', runsKey, entry)) == 'number' then redis.pcall('LTRIM', runsKey, 0, job.runsCap - 1) end
  return marker
end

local function claim(leaseKey, stateKey, statsKey, runsKey, job)
  local bad = invalid(job)
  if bad then
    return {'error', bad}
  end
  local tick = job.tick
  local mode = job.mode
  if mode ~= 'manual' and nowMs < tick - job.nowGuardMs then
    return {'early', nowMs}
  end

  -- Each key is checked before the job's first write to it or after it: the state hash by
  -- this read, the stats hash by its first increment, the lease by its read when SET NX finds
  -- it taken. A key of the wrong type answers 'corrupt' with nothing of the job changed.
  local gaveUpField = 'gaveUp.' .. job.holder
  local state = try('HMGET', stateKey, 'tick', 'due', 'manual', 'manualAt', 'fence', 'run', 'lost', gaveUpField, 'failed')
  if not state then
    return corrupt(stateKey, 'hash')
  end
  local lastTick = tonumber(state[1])
  -- A claim its claimant no longer waits for (too late for its answer time, or given up and
  -- recorded failed: see the header) is never granted, and leaves the tick as it is: its
  -- claimant's record counts it failed if no claim of it or of a later tick comes first
  -- (record.lua), and the claim of a later tick counts it missed otherwise. (The record of a
  -- claim given up came first: the tick was counted then.)
  local stale = job.answerBy and nowMs > job.answerBy
  if stale or (mode ~= 'pause' and tonumber(state[8]) == tick) then
    if stale then return {'stale', nowMs, job.answerBy} end
    return {'done', lastTick or -1, 0}
  end

  if mode == 'manual' then
    -- A request with an id runs once; requests without one (a PUBLISH by redis-cli, heard by
    -- every node) within the same second are one request.
    if (job.request and state[3] == job.request) or (not job.request and tonumber(state[4]) and nowMs - tonumber(state[4]) < 1000) then
      return {'done', lastTick or -1, 0}
    end
  elseif mode == 'pause' then
    if lastTick and lastTick >= tick then
      return {'done', lastTick, 0}
    end
    local _, bad = try('HINCRBY', statsKey, 'skipped', 1)
    if bad then
      if string.find(bad, 'WRONGTYPE', 1, true) then return corrupt(statsKey, 'hash') end
      return {'error', 'leasehold claim: ' .. statsKey .. ': ' .. bad}
    end
    -- Raised before the next write, which can still fail on a damaged field (a script's writes
    -- before an error stay): the readers then read what the first one changed.
    bumpVersion(statsKey)
    redis.call('HINCRBY', statsKey, 'skippedPaused', 1)
    redis.call('HSET', stateKey, 'tick', string.format('%d', tick))
    return {'paused', lastTick or -1}
  elseif lastTick and lastTick >= tick then
    -- A skip the stats hash cannot take is answered uncounted: the claimant counts it itself.
    local counted = 0
    if job.countSkip and try('HINCRBY', statsKey, 'skipped', 1) then
      bumpVersion(statsKey) -- before the write that can still fail, as for a paused skip
      redis.call('HINCRBY', statsKey, 'skippedClaimed', 1)
      counted = 1
    end
    return {'done', lastTick, counted}
  end

  local due = tonumber(state[2])
  if mode == 'delay' and due and tick < due then
    return {'notDue', due}
  end

  -- The lease is set only where none is held (NX); the fencing counter, the claimed tick and
  -- the running marker are then written in one HSET: three commands for a claim won.
  local fenced = tonumber(state[5] or '0')
  if not fenced or fenced ~= math.floor(fenced) then
    return {'error', 'leasehold claim: the fencing counter (field fence of ' .. stateKey .. ') holds no integer'}
  end
  local token = fenced + 1
  local fence = string.format('%d', token)
  local value = job.holder .. ' since ' .. nowIso .. ' tick ' .. iso(tick) .. ' token ' .. fence
  if not redis.call('SET', leaseKey, value, 'NX', 'PX', job.leaseMs) then
    local held = try('GET', leaseKey)
    if not held then
      return corrupt(leaseKey, 'string')
    end
    return {'held', held, redis.call('PTTL', leaseKey)}
  end
  -- A marker still set: its run's lease has expired (ours is set) and nobody recorded the run.
  local lost = ''
  if state[6] and state[6] ~= '' then lost = recordLost(statsKey, runsKey, job, state[6]) end
  -- The run starts at its tick at the earliest: a claim sent ahead of its tick dates it there.
  local run = string.format('%d %d %d %d ', token, tick, math.max(nowMs, tick), mode == 'manual' and 1 or 0) .. job.holder
  local fields = {'fence', fence, 'run', run}
  -- The ticks since the last claimed one that the records of failed claims counted (record.lua):
  -- the claimant does not count them missed. Those up to this tick are done with.
  local failedTicks = {}
  if mode == 'manual' then
    for _, v in ipairs({'manual', job.request or '', 'manualAt', string.format('%d', nowMs)}) do fields[#fields + 1] = v end
  else
    fields[#fields + 1] = 'tick'
    fields[#fields + 1] = string.format('%d', tick)
    if state[9] and state[9] ~= '' then
      local later = {}
      for t in string.gmatch(state[9], '%S+') do
        local n = tonumber(t)
        if n and n > tick then later[#later + 1] = t
        elseif n and n < tick and (not lastTick or n > lastTick) then failedTicks[#failedTicks + 1] = t end
      end
      fields[#fields + 1] = 'failed'
      fields[#fields + 1] = table.concat(later, ' ')
    end
  end
  if lost ~= '' then
    local kept = {}
    for t in string.gmatch(state[7] or '', '%S+') do kept[#kept + 1] = t end
    kept[#kept + 1] = table.concat({string.match(lost, '^(%d+) (%-?%d+) ')}, ':')
    while #kept > LOST_KEPT do table.remove(kept, 1) end
    fields[#fields + 1] = 'lost'
    fields[#fields + 1] = table.concat(kept, ' ')
  end
  redis.call('HSET', stateKey, unpack(fields))
  if state[8] then redis.call('HDEL', stateKey, gaveUpField) end
  return {'claimed', token, value, lastTick or -1, nowMs, lost, table.concat(failedTicks, ' ')}
end

local replies = {}
for i = 1, #ARGV do
  local k = 4 * (i - 1)
  local ok, job = pcall(cjson.decode, ARGV[i])
  if not ok or type(job) ~= 'table' then
    replies[i] = {'error', 'leasehold claim: a job\'s argument must be a JSON object with tick, leaseMs, mode, nowGuardMs, countSkip, holder, runsCap and optionally request'}
  else
    replies[i] = claim(KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4], job)
  end
end
return replies
