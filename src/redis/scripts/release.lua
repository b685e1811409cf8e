--[[
  Release leases, each only while it is still ours, and for fixedDelay jobs
  set the next start to now (server time) plus the delay, so the delay counts
  from the end of the previous run on whichever instance ran it. One call
  releases any number of jobs (runs that end together release together).

  Input, two keys and two arguments per job (job i from 1):
    KEYS[2i-1] lease  string  the job's lease
    KEYS[2i]   state  hash    the job's claim state; field due = next start (epoch ms)

    ARGV[2i-1] value    string   the lease value our claim wrote
    ARGV[2i]   delayMs  integer  ms; fixedDelay delay, or -1 for other schedules

  Output: one reply per job, in input order:
    1                   the lease was ours and is deleted (and due set when
                        delayMs >= 0)
    0                   it is gone or someone else's: nothing is changed
    {'error', message}  the job's arguments are invalid: nothing is changed
  A call whose keys and arguments are not two per job is refused as a whole.
]]
if #KEYS ~= 2 * math.floor(#KEYS / 2) or #ARGV ~= #KEYS then
  return redis.error_reply('ERR leasehold release: expected 2 keys and 2 arguments per job')
end

local nowMs
local replies = {}
for i = 1, #KEYS / 2 do
  local leaseKey, stateKey = KEYS[2 * i - 1], KEYS[2 * i]
  local value, delayMs = ARGV[2 * i - 1], tonumber(ARGV[2 * i])
  if not delayMs or delayMs ~= math.floor(delayMs) then
    replies[i] = {'error', 'leasehold release: delayMs must be an integer'}
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
    replies[i] = 1
  end
end
return replies
