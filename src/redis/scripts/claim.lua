--[[
  Claim jobs' leases, each for one schedule tick, at most once per tick for
  the whole installation, and mint fencing tokens. Decides on Redis server
  time (TIME) only, never on a node's clock. One call claims any number of
  jobs (the claims of jobs due at the same instant travel together); each
  job is decided on its own, in order, exactly as if claimed alone.

  Input, three keys and one argument per job (job i from 1):
    KEYS[3i-2] lease  string  the job's lease; value says holder, since, tick, token
    KEYS[3i-1] state  hash    tick = last claimed tick (epoch ms),
                              fence = fencing counter,
                              due = next fixedDelay start (epoch ms),
                              manual, manualAt = the last manual claim's
                              request id and server time (epoch ms)
    KEYS[3i]   stats  hash    the job's counters: `skipped` and `skippedClaimed`
                              grow by one for a counted 'done'

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
      request     string   manual only, optional: the id of the operator's
                           request; a second claim with the same id answers
                           'done', so every node that heard the request may
                           try and exactly one runs it. Without one, manual
                           claims within a second of the last are one request

  Output: one reply per job, in input order; each is the first decision that
  applies:
    {'error', message}        the job's argument is malformed or invalid;
                              nothing changed
    {'early', serverNowMs}    server time is before tick - nowGuardMs
    {'done', lastTick}        this tick, or a later one, was already claimed
                              (counted as a claimed skip when countSkip); for
                              'manual', the request was claimed already
                              (lastTick -1 when no tick was ever claimed)
    {'paused', previousTick}  'pause': the tick is marked as handled and one
                              paused skip counted (previousTick -1: none)
    {'notDue', dueMs}         mode 'delay' and tick is before state.due
    {'held', value, pttlMs}   someone holds the lease (pttlMs -1: no TTL)
    {'claimed', token, value, previousTick, serverNowMs}
                              claimed: state.tick = tick (not for 'manual'),
                              state.fence incremented to token, lease set with
                              leaseMs; previousTick is the last claimed tick
                              or -1
  A call whose keys are not three per argument is refused as a whole.
]]
if #KEYS ~= 3 * #ARGV then
  return redis.error_reply('ERR leasehold claim: expected 3 keys and 1 argument per job')
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
  return nil
end

local function claim(leaseKey, stateKey, statsKey, job)
  local bad = invalid(job)
  if bad then
    return {'error', bad}
  end
  local tick = job.tick
  local mode = job.mode
  if mode ~= 'manual' and nowMs < tick - job.nowGuardMs then
    return {'early', nowMs}
  end

  local state = redis.call('HMGET', stateKey, 'tick', 'due', 'manual', 'manualAt', 'fence')
  local lastTick = tonumber(state[1])

  if mode == 'manual' then
    -- A request with an id runs once; requests without one (a PUBLISH by redis-cli, heard by
    -- every node) within the same second are one request.
    if (job.request and state[3] == job.request) or (not job.request and tonumber(state[4]) and nowMs - tonumber(state[4]) < 1000) then
      return {'done', lastTick or -1}
    end
  elseif mode == 'pause' then
    if lastTick and lastTick >= tick then
      return {'done', lastTick}
    end
    redis.call('HSET', stateKey, 'tick', string.format('%d', tick))
    redis.call('HINCRBY', statsKey, 'skipped', 1)
    redis.call('HINCRBY', statsKey, 'skippedPaused', 1)
    return {'paused', lastTick or -1}
  elseif lastTick and lastTick >= tick then
    if job.countSkip then
      redis.call('HINCRBY', statsKey, 'skipped', 1)
      redis.call('HINCRBY', statsKey, 'skippedClaimed', 1)
    end
    return {'done', lastTick}
  end

  local due = tonumber(state[2])
  if mode == 'delay' and due and tick < due then
    return {'notDue', due}
  end

  -- The lease is set only where none is held (NX); the fencing counter and the claimed tick
  -- are then written in one HSET: three commands for a claim won.
  local fenced = tonumber(state[5] or '0')
  if not fenced or fenced ~= math.floor(fenced) then
    return {'error', 'leasehold claim: the fencing counter (field fence of ' .. stateKey .. ') holds no integer'}
  end
  local token = fenced + 1
  local fence = string.format('%d', token)
  local value = job.holder .. ' since ' .. nowIso .. ' tick ' .. iso(tick) .. ' token ' .. fence
  if not redis.call('SET', leaseKey, value, 'NX', 'PX', job.leaseMs) then
    return {'held', redis.call('GET', leaseKey), redis.call('PTTL', leaseKey)}
  end
  if mode == 'manual' then
    redis.call('HSET', stateKey, 'fence', fence, 'manual', job.request or '', 'manualAt', string.format('%d', nowMs))
  else
    redis.call('HSET', stateKey, 'fence', fence, 'tick', string.format('%d', tick))
  end
  return {'claimed', token, value, lastTick or -1, nowMs}
end

local replies = {}
for i = 1, #ARGV do
  local k = 3 * (i - 1)
  local ok, job = pcall(cjson.decode, ARGV[i])
  if not ok or type(job) ~= 'table' then
    replies[i] = {'error', 'leasehold claim: a job\'s argument must be a JSON object with tick, leaseMs, mode, nowGuardMs, countSkip, holder and optionally request'}
  else
    replies[i] = claim(KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], job)
  end
end
return replies
