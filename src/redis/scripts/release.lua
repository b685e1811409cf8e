--[[
  Release leases, each only while it is still ours, and for fixedDelay jobs
  set the next start to now (server time) plus the delay, so the delay counts
  from the end of the previous run on whichever instance ran it. One call
  releases any number of jobs (runs that end together release together). A
  node that stops before the run of a tick it claimed began hands the tick
  back: the claim state's tick goes back to the one claimed before, so
  another node may still run it within its misfire grace.

  Input, two keys and three arguments per job (job i from 1):
    KEYS[2i-1] lease  string  the job's lease
    KEYS[2i]   state  hash    the job's claim state; field due = next start (epoch
                              ms), field tick = last claimed tick (epoch ms)

    ARGV[3i-2] value     string   the lease value our claim wrote
    ARGV[3i-1] delayMs   integer  ms; fixedDelay delay, or -1 for other schedules
    ARGV[3i]   handBack  string   '' to keep the claimed tick; else the tick to
                                  restore (epoch ms), or -1 for none (the field
                                  is removed). While the lease is ours no later
                                  tick can have been claimed, so the tick in
                                  the state is still ours.

  The release also clears the job's running marker (state field run, set by
  the claim): a run released is recorded by its node, never found lost. A
  lease found gone still clears the marker when it is this claim's (no
  other claim has taken the lease since, so nobody recorded the run lost).
  Cost: the marker is cleared in the HSET the release makes anyway for
  fixedDelay jobs and handed-back ticks, else in one HSET of its own.

  Output: one reply per job, in input order:
    1                   the lease was ours and is deleted (and due set when
                        delayMs >= 0, the tick handed back when asked)
    0                   it is gone or someone else's: nothing is changed but
                        our own running marker
    {'error', message}  the job's arguments are invalid: nothing is changed
    {'corrupt', key, found, want}
                        a key of the job holds a `found` (a Redis type) where a
                        `want` is kept (something else wrote it): nothing of the
                        job is changed, the other jobs are released as ever
  A call whose keys and arguments are not two and three per job is refused
  as a whole.
]]
if #KEYS ~= 2 * math.floor(#KEYS / 2) or #ARGV ~= 3 * (#KEYS / 2) then
  return redis.error_reply('ERR leasehold release: expected 2 keys and 3 arguments per job')
end

local nowMs
local replies = {}
for i = 1, #KEYS / 2 do
  local leaseKey, stateKey = KEYS[2 * i - 1], KEYS[2 * i]
  local value, delayMs, handBack = ARGV[3 * i - 2], tonumber(ARGV[3 * i - 1]), ARGV[3 * i]
  local backTo = tonumber(handBack)
  if not delayMs or delayMs ~= math.floor(delayMs) then
    replies[i] = {'error', 'leasehold release: delayMs must be an integer'}
  elseif handBack ~= '' and (not backTo or backTo ~= math.floor(backTo)) then
    replies[i] = {'error', 'leasehold release: handBack must be empty or an integer (ms)'}
  else
    -- The keys this job writes are checked before its first write: the lease by its read, the
    -- state hash by the first write to it (an HSET of the wrong type writes nothing).
    local held = redis.pcall('GET', leaseKey)
    if type(held) == 'table' and held.err then
      replies[i] = {'corrupt', leaseKey, redis.call('TYPE', leaseKey)['ok'], 'string'}
    elseif held ~= value then
      -- Gone or someone else's: our own running marker is cleared, so no claim records the
      -- run as lost (it ends and is recorded by this node).
      local token = string.match(value, ' token (%d+)$')
      local marker = redis.pcall('HGET', stateKey, 'run')
      if token and type(marker) == 'string' and string.match(marker, '^(%d+) ') == token then
        redis.call('HSET', stateKey, 'run', '')
      end
      replies[i] = 0
    else
      local fields = {'run', ''}
      if delayMs >= 0 then
        if not nowMs then
          local time = redis.call('TIME')
          nowMs = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
        end
        fields[#fields + 1] = 'due'
        fields[#fields + 1] = string.format('%d', nowMs + delayMs)
      end
      if backTo and backTo >= 0 then
        fields[#fields + 1] = 'tick'
        fields[#fields + 1] = string.format('%d', backTo)
      end
      local written = redis.pcall('HSET', stateKey, unpack(fields))
      if type(written) == 'table' and written.err and not string.find(written.err, 'WRONGTYPE', 1, true) then
        -- Redis refusing writes (READONLY, NOREPLICAS, OOM): the call fails as a whole.
        return redis.error_reply(written.err)
      elseif type(written) == 'table' and written.err then
        replies[i] = {'corrupt', stateKey, redis.call('TYPE', stateKey)['ok'], 'hash'}
      else
        if backTo and backTo < 0 then redis.call('HDEL', stateKey, 'tick') end
        redis.call('DEL', leaseKey)
        replies[i] = 1
      end
    end
  end
end
return replies
