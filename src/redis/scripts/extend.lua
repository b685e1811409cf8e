--[[
  Extend a lease, only while it is still ours. A lease that expired or that
  another instance now holds is left untouched.

  Input:
    KEYS[1] lease  string  the job's lease

    ARGV[1] value    string   the lease value our claim wrote
    ARGV[2] leaseMs  integer  ms; new time to live from now, > 0

  Output:
    1 if the lease was ours and now lives leaseMs more,
    0 if it is gone or someone else's.
]]
local leaseKey = KEYS[1]
local value = ARGV[1]
local leaseMs = tonumber(ARGV[2])

if not leaseMs or leaseMs <= 0 or leaseMs ~= math.floor(leaseMs) then
  return redis.error_reply('ERR leasehold extend: leaseMs must be a positive integer')
end

if redis.call('GET', leaseKey) == value then
  redis.call('PEXPIRE', leaseKey, leaseMs)
  return 1
end
return 0
