-- RetrySafe complete: store the response if the token still holds the key.
-- KEYS[1] the record   ARGV[1] owner token   ARGV[2] retention (ms)
-- ARGV[3] response status   ARGV[4] response headers (HeaderCodec text)   ARGV[5] response body (bytes)
-- Returns 1 (committed) or 0 (lease lost: taken over, already completed or released, or expired and gone).
--
-- A holder whose lease ran out but whom nobody took over still holds the token, so its completion is
-- stored: the lease only decides whether another attempt may take over.
local current = redis.call('HMGET', KEYS[1], 'status', 'token')
if current[1] ~= 'IN_PROGRESS' or current[2] ~= ARGV[1] then
  return 0
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expires = now + tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'status', 'COMPLETED', 'completed', string.format('%d', now),
  'expires', string.format('%d', expires), 'rstatus', ARGV[3], 'rheaders', ARGV[4], 'rbody', ARGV[5])
redis.call('PEXPIREAT', KEYS[1], string.format('%d', expires))
return 1
