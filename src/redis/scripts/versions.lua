--[[
  What a node's status read needs of the jobs it read before (src/status/read.ts): each job's
  stats version, createdAt and seenAt and, for an installation job, its lease. A job that is as
  the node knew it and holds no lease is answered 0, so that a read of 100,000 jobs of which a
  few moved carries back those few, in one call per chunk of jobs rather than three commands per
  job. It reads only.

  Input, for job j = 1..N (N = #KEYS / 2; a job's keys share its hash tag):
    KEYS[2j-1] stats   hash    the job's stats: its fields version, createdAt, seenAt
    KEYS[2j]   lease   string  the job's lease
    ARGV[3j-2] known   string  `<version> <createdAt>` as the node last read them
    ARGV[3j-1] seenAt  string  seenAt as the node last read it ('' when absent)
    ARGV[3j]   lease   '1' to read the lease (an installation job), '0' not to

  Output: one answer per job, in input order:
    0                                    as the node knew it, and no lease (or none read)
    {version, createdAt, seenAt, pttl, value}
                                         otherwise: the three fields (nil where absent), the
                                         lease's PTTL (-2: no lease; nil: not read) and its value
                                         (nil: none)
  A key of another type reads as absent (the status read says so where it reads it whole).
]]
if #KEYS % 2 ~= 0 or #ARGV ~= (#KEYS / 2) * 3 then
  return redis.error_reply('ERR leasehold versions: expects 2 keys and 3 arguments per job')
end

-- `command`'s reply, or nil when its key holds another type; any other error is raised as ever.
local function read(command, ...)
  local reply = redis.pcall(command, ...)
  if type(reply) == 'table' and reply.err then
    if string.sub(reply.err, 1, 9) == 'WRONGTYPE' then return nil end
    error(reply)
  end
  return reply
end

local out = {}
for j = 1, #KEYS / 2 do
  local fields = read('HMGET', KEYS[2 * j - 1], 'version', 'createdAt', 'seenAt') or {}
  local version, createdAt, seenAt = fields[1] or false, fields[2] or false, fields[3] or false
  local pttl, value = false, false
  if ARGV[3 * j] == '1' then
    pttl = redis.call('PTTL', KEYS[2 * j])
    if pttl ~= -2 then value = read('GET', KEYS[2 * j]) or false end
  end
  local same = version and (version .. ' ' .. (createdAt or '')) == ARGV[3 * j - 2] and (seenAt or '') == ARGV[3 * j - 1]
  if same and (pttl == false or pttl == -2) then
    out[j] = 0
  else
    out[j] = { version, createdAt, seenAt, pttl, value }
  end
end
return out
