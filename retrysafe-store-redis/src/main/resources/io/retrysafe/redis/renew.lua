-- RetrySafe renew: extend the lease of the attempt holding the key (the heartbeat of a long operation).
-- KEYS[1] the record   ARGV[1] owner token   ARGV[2] lease (ms)
-- Returns 1 (renewed) or 0 (lease lost: taken over, completed or released, or expired and gone).
local current = redis.call('HMGET', KEYS[1], 'status', 'token')
if current[1] ~= 'IN_PROGRESS' or current[2] ~= ARGV[1] then
  return 0
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[1], 'lease', string.format('%d', now + tonumber(ARGV[2])))
return 1
