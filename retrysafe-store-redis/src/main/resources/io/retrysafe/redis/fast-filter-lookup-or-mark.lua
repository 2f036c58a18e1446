-- RetrySafe fast filter: the lookup and the in-flight marker in one round trip. Returns what KEYS[1]
-- holds (a marker or a cached response); when it holds nothing, sets the marker ARGV[1] for ARGV[2]
-- milliseconds and returns nil: the caller owns the marker and goes on to the store.
local held = redis.call('GET', KEYS[1])
if held then
  return held
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return false
