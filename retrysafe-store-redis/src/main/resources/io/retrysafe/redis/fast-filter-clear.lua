-- RetrySafe fast filter: remove the in-flight marker of KEYS[1], and only the marker.
-- ARGV[1] is the marker value. A cached response (published meanwhile) is left in place:
-- a plain DEL could throw away a replay another request just published.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
