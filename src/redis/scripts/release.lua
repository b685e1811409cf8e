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

  Output: one reply per job, in input order:
    1                   the lease was ours and is deleted (and due set when
                        delayMs >= 0, the tick handed back when asked)
    0                   it is gone or someone else's: nothing is changed
    {'error', message}  the job's arguments are invalid: nothing is changed
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
  elseif redis.call('GET', leaseKey) ~= value then
    replies[i] = 0
  else
    redis.call('DEL', leaseKey)
    if delayMs >= 0 then
      if not nowMs then
        local time = redis.call('TIME')
        nowMs = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
      end
      redis.call('HSET', stateKey, 'due', string.format('%d', nowMs + delayMs))
    end
    if backTo and backTo >= 0 then
      redis.call('HSET', stateKey, 'tick', string.format('%d', backTo))
    elseif backTo then
      redis.call('HDEL', stateKey, 'tick')
    end
    replies[i] = 1
  end
end
return replies
