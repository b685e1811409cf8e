--[[
  Release a lease, only while it is still ours, and for fixedDelay jobs set
  the next start to now (server time) plus the delay, so the delay counts
  from the end of the previous run on whichever instance ran it.

  Input:
    KEYS[1] lease  string  the job's lease
    KEYS[2] state  hash    the job's claim state; field due = next start (epoch ms)

    ARGV[1] value    string   the lease value our claim wrote
    ARGV[2] delayMs  integer  ms; fixedDelay delay, or -1 for other schedules

  Output:
    1 if the lease was ours and is deleted (and due set when delayMs >= 0),
    0 if it is gone or someone else's: nothing is changed.
]]
local leaseKey = KEYS[1]
local stateKey = KEYS[2]
local value = ARGV[1]
local delayMs = tonumber(ARGV[2])

if not delayMs or delayMs ~= math.floor(delayMs) then
  return redis.error_reply('ERR leasehold release: delayMs must be an integer')
end

if redis.call('GET', leaseKey) ~= value then
  return 0
end
redis.call('DEL', leaseKey)
if delayMs >= 0 then
  local time = redis.call('TIME')
  local nowMs = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  redis.call('HSET', stateKey, 'due', string.format('%d', nowMs + delayMs))
end
return 1
