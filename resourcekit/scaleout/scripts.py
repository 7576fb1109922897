"""The Lua scripts the broker runs in Redis, each one atomic step over the shared keys
(``scaleout.broker`` says what each key holds)."""

from __future__ import annotations

__all__ = ["FANOUT", "LEASES", "LIST_FANOUT", "PRUNE", "RELEASE"]

FANOUT = """
local p, uri, version, maxlen, msg = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local members = p .. 'subs:' .. uri
local told = 0
for _, sid in ipairs(redis.call('SMEMBERS', members)) do
  local subs = p .. 'sub:' .. sid
  local heard = redis.call('HGET', subs, uri)
  if not heard then
    redis.call('SREM', members, sid)
  elseif heard ~= version then
    redis.call('HSET', subs, uri, version)
    redis.call('XADD', p .. 'ev:' .. sid, 'MAXLEN', '~', maxlen, '*', 'm', msg)
    if ARGV[7] ~= '' and redis.call('HGET', p .. 's:' .. sid, 'cc') == '1' then
      redis.call('XADD', p .. 'ev:' .. sid, 'MAXLEN', '~', maxlen, '*', 'm', ARGV[7])
    end
    told = told + 1
  end
end
local old = redis.call('GET', p .. 'ver:' .. uri)
redis.call('SET', p .. 'ver:' .. uri, version, 'EX', ARGV[6])
if old == version then return {told, 0} end
return {told, 1}
"""

# the watched URIs none of whose subscribers' sessions is still there (expired from idleness,
# never DELETEd): out of ``watched`` and returned, each to one worker, which tells the others
PRUNE = """
local p = ARGV[1]
local unwatched = {}
for _, uri in ipairs(redis.call('SMEMBERS', p .. 'watched')) do
  local members = p .. 'subs:' .. uri
  for _, sid in ipairs(redis.call('SMEMBERS', members)) do
    if redis.call('EXISTS', p .. 'sub:' .. sid) == 0 then
      redis.call('SREM', members, sid)
    end
  end
  if redis.call('SCARD', members) == 0 then
    redis.call('SREM', p .. 'watched', uri)
    table.insert(unwatched, uri)
  end
end
return unwatched
"""

LIST_FANOUT = """
local p, version = ARGV[1], ARGV[2]
if version ~= '' then
  if redis.call('GET', p .. 'listver') == version then return -1 end
  redis.call('SET', p .. 'listver', version)
end
redis.call('ZREMRANGEBYSCORE', p .. 'sessions', '-inf', ARGV[3])
local n = 0
for _, sid in ipairs(redis.call('ZRANGE', p .. 'sessions', 0, -1)) do
  redis.call('XADD', p .. 'ev:' .. sid, 'MAXLEN', '~', ARGV[4], '*', 'm', ARGV[5])
  n = n + 1
end
return n
"""

LEASES = """
local held = {}
for i = 4, #ARGV do
  local key = ARGV[1] .. ARGV[i]
  if redis.call('SET', key, ARGV[2], 'NX', 'PX', ARGV[3]) then
    table.insert(held, ARGV[i])
  elseif redis.call('GET', key) == ARGV[2] then
    redis.call('PEXPIRE', key, ARGV[3])
    table.insert(held, ARGV[i])
  end
end
return held
"""

RELEASE = """
for i = 3, #ARGV do
  local key = ARGV[1] .. ARGV[i]
  if redis.call('GET', key) == ARGV[2] then redis.call('DEL', key) end
end
return 0
"""
