-- RetrySafe claim: one atomic decision for one key.
-- KEYS[1] the record (a hash)
-- ARGV[1] fingerprint (hex)   ARGV[2] owner token   ARGV[3] lease (ms)   ARGV[4] retention (ms)
-- Scope and key are not passed: Redis holds only their hash (the record's name).
-- Returns {'claimed', attempt} | {'replay', status, headers, body} | {'in_progress', lease ms left} | {'mismatch'}
--
-- Time is the server's (TIME), never the caller's. A record past its retention does not exist: Redis
-- deleted it (PEXPIREAT below), so "expired" needs no branch here.
local function int(n)
  return string.format('%d', n)
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local record = KEYS[1]
local lease = now + tonumber(ARGV[3])
local expires = now + tonumber(ARGV[4])

local current = redis.call('HMGET', record, 'fingerprint', 'status', 'attempt', 'lease')
local status = current[2]
if not status then
  redis.call('HSET', record, 'fingerprint', ARGV[1], 'status', 'IN_PROGRESS',
    'token', ARGV[2], 'attempt', 1, 'created', int(now), 'lease', int(lease), 'expires', int(expires))
  redis.call('PEXPIREAT', record, int(expires))
  return {'claimed', 1}
end
if current[1] ~= ARGV[1] then
  return {'mismatch'}
end
if status == 'COMPLETED' then
  local response = redis.call('HMGET', record, 'rstatus', 'rheaders', 'rbody')
  return {'replay', response[1], response[2], response[3]}
end
local held_until = tonumber(current[4])
if status == 'IN_PROGRESS' and now < held_until then
  return {'in_progress', held_until - now}
end
-- FAILED (released), or IN_PROGRESS whose holder's lease ran out: take over with a new token.
local attempt = tonumber(current[3]) + 1
redis.call('HSET', record, 'status', 'IN_PROGRESS', 'token', ARGV[2], 'attempt', int(attempt), 'lease', int(lease),
  'expires', int(expires))
redis.call('PEXPIREAT', record, int(expires))
return {'claimed', attempt}
