-- RetrySafe release: mark the record FAILED (retryable) if the token still holds the key.
-- KEYS[1] the record   ARGV[1] owner token
-- Returns 1 (committed) or 0 (lease lost). The record keeps its expiry: a released key is retried
-- within its retention or forgotten with it.
local current = redis.call('HMGET', KEYS[1], 'status', 'token')
if current[1] ~= 'IN_PROGRESS' or current[2] ~= ARGV[1] then
  return 0
end
redis.call('HSET', KEYS[1], 'status', 'FAILED')
return 1
