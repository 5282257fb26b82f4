-- The peer we compare against: the classic Redis token bucket, one atomic script per decision.
-- KEYS[1] bucket key; ARGV[1] rate (tokens per second); ARGV[2] burst (capacity); ARGV[3] cost.
-- Returns 1 when allowed, 0 when denied. Time is the server's (TIME), as in most such scripts.
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local now = redis.call('TIME')
local nowMs = now[1] * 1000 + math.floor(now[2] / 1000)
local state = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(state[1]) or burst
local ts = tonumber(state[2]) or nowMs
tokens = math.min(burst, tokens + (nowMs - ts) * rate / 1000)
local allowed = 0
if tokens >= cost then
  tokens = tokens - cost
  allowed = 1
end
redis.call('HSET', KEYS[1], 'tokens', tokens, 'ts', nowMs)
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 1000)
return allowed
