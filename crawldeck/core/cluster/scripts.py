"""The Lua scripts of the cluster store: each runs atomically on one hash slot.

Every script takes ``KEYS[1]`` = a key of the shard it works on (the shard's result
stream, ``Keyspace.stream``), so Redis Cluster routes it to the node owning the shard's
slot, and ``ARGV[1]`` = the shard's tag (``Keyspace.tag``) from which it names the
hosts' keys (``<tag>:h:<host>:q`` ...; all in the tag's slot). Batches for several hosts
of one shard travel as one JSON argument, so a flush costs one script call per shard it
touches. The layout is ``core.cluster.keys``'s.

The lease check is the fencing token (Kleppmann, "How to do distributed locking",
2016): ``:lease`` holds ``"<worker> <epoch>"`` and the epoch grows on every claim, so a
worker that slept past its lease (``SIGSTOP``) finds another epoch there and every write
it tries for the host is refused, whatever its clock says.
"""

from __future__ import annotations

from typing import Final

#: Shared Lua helpers: the host's keys under the shard's ``tag`` (``ARGV[1]``; a script
#: over several shards sets it per shard), its queued count (main and sub-queues), and
#: putting handed-out URLs (``:inf``) back at the head of their front queue (the
#: priority is the entry's third field from the end, ``keys.encode_entry``; their entries
#: hold the credits ``:cr`` kept for the owner, which go).
_HELPERS: Final = r"""
local tag = ARGV[1]
local SPAN = 10000000000000
local function base(host) return tag .. ':h:' .. host end
local function queued(b)
  local n = redis.call('ZCARD', b .. ':q')
  for _, p in ipairs(redis.call('SMEMBERS', b .. ':subs')) do
    n = n + redis.call('ZCARD', b .. ':q:' .. p)
  end
  return n
end
local function give_back(b)
  local inf = redis.call('HGETALL', b .. ':inf')
  for i = 1, #inf, 2 do
    local prio = tonumber(string.match(inf[i + 1], ',(%-?%d+),[^,]+,%d+%]$'))
    redis.call('ZADD', b .. ':q', prio * SPAN, inf[i])
    redis.call('HSET', b .. ':e', inf[i], inf[i + 1])
  end
  redis.call('DEL', b .. ':inf', b .. ':cr')
  return #inf / 2
end
local function owner_is(b, me)
  return redis.call('GET', b .. ':lease') == me
end
"""

#: OPIC credits (issue #15), for ``PUSH``: ``band`` is ``core.policy.prioritizer.cash_priority``
#: and, with ``inlinks`` true, ``importance_priority`` (``math.frexp`` as Python's);
#: ``credit(b, member, prefix, cash, n, now_ms, tell, inlinks)`` adds ``cash`` and one
#: in-link to the URL ``member`` of host base ``b`` where it waits: queued (its
#: entry in ``:e``; if that raises its priority, among ``n`` front queues, it moves
#: to the tail of that priority: score ``priority * SPAN + now_ms``, in ``:q`` or in
#: the sub-queue ``prefix``, else whichever sub-queue holds it) or handed out (its
#: entry in ``:inf``, which goes back to its queue with it if the owner lets the host
#: go; and, if ``tell``, to ``:cr`` member -> cash, which the owner's next ``RENEW``
#: takes to add it to its copy in memory). The entry's tail ``,priority,cash,inlinks]``
#: is rewritten, the cash with 17 significant digits (a double read back exactly).
#: Returns 1 queued, 2 handed out, 0 neither (fetched, or never queued here): that
#: cash is lost.
_CREDIT: Final = r"""
local function band(cash, n)
  local low = n - 2
  if cash <= 0 then return low end
  local _, e = math.frexp(cash)
  local p = 1 - e
  if p <= 0 then return 0 end
  if p < low then return p end
  return low
end
local function importance(cash, k, n)
  local low = n - 2
  local v = cash * k * k
  if v <= 0 then return low end
  local _, e = math.frexp(v)
  local p = math.floor((32 - e) / 2)
  if p <= 0 then return 0 end
  if p < low then return p end
  return low
end
local function credit(b, m, prefix, cash, n, now_ms, tell, inlinks)
  local where, found = b .. ':e', 1
  local e = redis.call('HGET', where, m)
  if not e then
    where, found = b .. ':inf', 2
    e = redis.call('HGET', where, m)
    if not e then return 0 end
  end
  local head, p, c, k = string.match(e, '^(.*),(%-?%d+),([^,]+),(%d+)%]$')
  p, c, k = tonumber(p), tonumber(c) + cash, tonumber(k) + 1
  local better
  if inlinks then better = importance(c, k, n) else better = band(c, n) end
  if better < p then
    p = better
    if found == 1 then
      local q = b .. ':q'
      if not redis.call('ZSCORE', q, m) then
        q = b .. ':q:' .. prefix
        if not redis.call('ZSCORE', q, m) then
          for _, s in ipairs(redis.call('SMEMBERS', b .. ':subs')) do
            if redis.call('ZSCORE', b .. ':q:' .. s, m) then q = b .. ':q:' .. s; break end
          end
        end
      end
      redis.call('ZADD', q, 'XX', p * SPAN + now_ms, m)
    end
  end
  redis.call('HSET', where, m,
    head .. ',' .. p .. ',' .. string.format('%.17g', c) .. ',' .. string.format('%d', k) .. ']')
  if found == 2 and tell then redis.call('HINCRBYFLOAT', b .. ':cr', m, cash) end
  return found
end
"""

#: ARGV[2]: JSON ``[[host, [[member, score, prefix, entry, cash], ...], [[member, prefix, cash],
#: ...]], ...]``; ARGV[3]: the hot-host threshold (queued URLs); ARGV[4]: now (epoch s); ARGV[5]:
#: now (epoch ms); ARGV[6]: the front queues under ``opic`` and ``opic-inlinks``, 0 for no credits
#: (another ordering, or a push sent again after an outage: a credit is not idempotent); ARGV[7]:
#: the worker; ARGV[8]: ``1`` under ``opic-inlinks`` (bands of cash and in-links), ``0`` else. Adds
#: each URL whose member is new to the host's seen set to its queue, or, past the threshold, to the
#: sub-queue of its path prefix (its entry to ``:e``); a URL already seen gets its ``cash`` as a
#: credit (a link another worker found first, or a URL found again while its row was on its way);
#: then the host's credits (URLs this worker knew) are made (``_CREDIT``). A handed-out URL's owner
#: is told of a credit (``:cr``) unless the credit is its own ``add_scores`` pair (its copy in
#: memory has it already). A host without an owner that got URLs becomes claimable from now (its
#: owner, if any, learns of them when it renews). Returns ``[[host, added, credited queued,
#: credited handed out, credits lost], ...]``.
PUSH: Final = (
    _HELPERS
    + _CREDIT
    + r"""
local hot, now_ms, n, me = tonumber(ARGV[3]), tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7]
local inlinks = ARGV[8] == '1'
local out = {}
for _, h in ipairs(cjson.decode(ARGV[2])) do
  local b = base(h[1])
  local q = b .. ':q'
  local added = 0
  local got = {0, 0, 0}
  local size = redis.call('ZCARD', q)
  for _, r in ipairs(h[2]) do
    if redis.call('SADD', b .. ':seen', r[1]) == 1 then
      if size >= hot then
        redis.call('SADD', b .. ':subs', r[3])
        redis.call('ZADD', q .. ':' .. r[3], r[2], r[1])
      else
        redis.call('ZADD', q, r[2], r[1])
        size = size + 1
      end
      redis.call('HSET', b .. ':e', r[1], r[4])
      added = added + 1
    elseif n > 0 and r[5] >= 0 and (r[5] > 0 or inlinks) then
      local k = credit(b, r[1], r[3], r[5], n, now_ms, true, inlinks)
      got[k + 1] = got[k + 1] + 1
    end
  end
  if n > 0 and #h[3] > 0 then
    local lease = redis.call('GET', b .. ':lease')
    local tell = not lease or string.sub(lease, 1, #me + 1) ~= me .. ' '
    for _, c in ipairs(h[3]) do
      local k = credit(b, c[1], c[2], c[3], n, now_ms, tell, inlinks)
      got[k + 1] = got[k + 1] + 1
    end
  end
  if added > 0 and redis.call('EXISTS', b .. ':lease') == 0 then
    redis.call('ZADD', tag .. ':ready', 'NX', ARGV[4], h[1])
  end
  out[#out + 1] = {h[1], added, got[2], got[3], got[1]}
end
return out
"""
)

#: ARGV[2]: worker; ARGV[3]: JSON ``[[host, epoch, [acked members], last_s|false,
#: rec|false, ops, robots|false, robots_ttl_ms, counts], ...]``. For each host whose
#: lease is ``worker epoch`` (or epoch 0: an unfenced op, a refused URL): drops the
#: acked URLs from ``:inf`` (and their credits from ``:cr``), saves ``last`` and
#: ``rec`` in ``:st`` and its robots.txt entry (with its TTL) in ``:robots``, adds
#: ``counts`` (an object: pages, bytes, status classes, ``blocked:REASON``) to the
#: shard's ``:counts`` and its pages to the host's ``pages`` in ``:st`` (the pages
#: committed under every lease, with the pages themselves: a count the next owner
#: goes on from even when the row ``rec`` carrying it never came) and appends the ops
#: to the shard's stream. ARGV[4]: ``"0"`` when the crawl keeps no OPIC credits (no
#: ``:cr`` to clean). One HSET a host and one HINCRBY a counter a call, summed over
#: its hosts (issue #23 item 3: Redis's CPU a page). Returns the hosts refused (fenced).
COMMIT: Final = (
    _HELPERS
    + r"""
local me = ARGV[2]
local cash = ARGV[4] ~= '0'
local fenced = {}
local counts = {}
for _, c in ipairs(cjson.decode(ARGV[3])) do
  local host, epoch = c[1], c[2]
  local b = base(host)
  if epoch ~= 0 and not owner_is(b, me .. ' ' .. epoch) then
    fenced[#fenced + 1] = host
  else
    if #c[3] > 0 then
      redis.call('HDEL', b .. ':inf', unpack(c[3]))
      if cash then redis.call('HDEL', b .. ':cr', unpack(c[3])) end
    end
    local st = {}
    if c[4] then st[#st + 1] = 'last'; st[#st + 1] = c[4] end
    if c[5] then st[#st + 1] = 'rec'; st[#st + 1] = c[5] end
    if #st > 0 then redis.call('HSET', b .. ':st', unpack(st)) end
    if c[7] then redis.call('SET', b .. ':robots', c[7], 'PX', c[8]) end
    for field, n in pairs(c[9]) do counts[field] = (counts[field] or 0) + n end
    if c[9]['pages'] then redis.call('HINCRBY', b .. ':st', 'pages', c[9]['pages']) end
    if #c[6] > 2 then
      redis.call('XADD', KEYS[1], '*', 'w', me, 'h', host, 'e', epoch, 'm', c[6])
    end
  end
end
for field, n in pairs(counts) do redis.call('HINCRBY', tag .. ':counts', field, n) end
return fenced
"""
)

#: ARGV[2]: worker; ARGV[3]: lease in ms; ARGV[4]: now (epoch s); ARGV[5]: now (epoch
#: ms); ARGV[6]: the most hosts to take. Takes hosts claimable at ``now`` from the
#: shard's ``ready`` set, skipping those with an owner or nothing queued (a dead
#: owner's handed-out URLs first go back to the queue): a new epoch, the lease for
#: ``worker``, its deadline in ``owned``. Returns, per host taken, ``[host, epoch,
#: queued, rec|false, last|false, clean|false, robots|false, pages|false]``
#: (``clean`` "0": the previous owner did not release it: it died or froze;
#: ``robots`` its robots.txt entry while its TTL lasts; ``pages`` the pages committed
#: for it so far, ``COMMIT``).
CLAIM: Final = (
    _HELPERS
    + r"""
local me, ms, now_ms = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[5])
local ready = tag .. ':ready'
local out = {}
local hosts = redis.call('ZRANGEBYSCORE', ready, '-inf', ARGV[4], 'LIMIT', 0, tonumber(ARGV[6]))
for _, host in ipairs(hosts) do
  redis.call('ZREM', ready, host)
  local b = base(host)
  if redis.call('EXISTS', b .. ':lease') == 0 then
    give_back(b)
    local n = queued(b)
    if n > 0 then
      local ep = redis.call('INCR', b .. ':ep')
      redis.call('SET', b .. ':lease', me .. ' ' .. ep, 'PX', ms)
      redis.call('ZADD', tag .. ':owned', now_ms + ms, host)
      local st = redis.call('HMGET', b .. ':st', 'rec', 'last', 'clean', 'pages')
      redis.call('HSET', b .. ':st', 'clean', '0')
      out[#out + 1] = {host, ep, n, st[1], st[2], st[3], redis.call('GET', b .. ':robots'), st[4]}
    end
  end
end
return out
"""
)

#: ARGV[2]: worker; ARGV[3]: JSON ``[host, epoch, count]``. Moves up to ``count`` URLs
#: from the host's queue (then its sub-queues), best score first, to ``:inf`` for their
#: owner (their entries from ``:e``), up to 500 at a time in one HMGET, HDEL and HSET
#: (not three calls a URL: issue #23 item 3). Returns ``false`` when the lease is not
#: ``worker epoch`` (fenced), else ``[entries, left]``.
PULL: Final = (
    _HELPERS
    + r"""
local a = cjson.decode(ARGV[3])
local b = base(a[1])
if not owner_is(b, ARGV[2] .. ' ' .. a[2]) then return false end
local want = a[3]
local got = {}
local function take(key)
  while #got < want do
    local ask = math.min(500, want - #got)
    local popped = redis.call('ZPOPMIN', key, ask)
    if #popped == 0 then return end
    local members, inf = {}, {}
    for i = 1, #popped, 2 do members[#members + 1] = popped[i] end
    local entries = redis.call('HMGET', b .. ':e', unpack(members))
    redis.call('HDEL', b .. ':e', unpack(members))
    for i, m in ipairs(members) do
      inf[#inf + 1] = m
      inf[#inf + 1] = entries[i]
      got[#got + 1] = entries[i]
    end
    redis.call('HSET', b .. ':inf', unpack(inf))
    if #members < ask then return end
  end
end
take(b .. ':q')
for _, p in ipairs(redis.call('SMEMBERS', b .. ':subs')) do
  take(b .. ':q:' .. p)
  if redis.call('EXISTS', b .. ':q:' .. p) == 0 then redis.call('SREM', b .. ':subs', p) end
end
return {got, queued(b)}
"""
)

#: ARGV[2]: worker; ARGV[3]: lease in ms; ARGV[4]: now (epoch ms); ARGV[5]: JSON
#: ``[[host, epoch], ...]``. Extends each lease still ``worker epoch`` (and its deadline
#: in ``owned``) and takes the OPIC credits other workers made to the URLs it holds
#: (``:cr``, ``_CREDIT``). Returns ``[[host, held 1|0, queued, [member, cash, ...]]]``.
RENEW: Final = (
    _HELPERS
    + r"""
local me, ms, now_ms = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local out = {}
for _, h in ipairs(cjson.decode(ARGV[5])) do
  local b = base(h[1])
  if owner_is(b, me .. ' ' .. h[2]) then
    redis.call('PEXPIRE', b .. ':lease', ms)
    redis.call('ZADD', tag .. ':owned', now_ms + ms, h[1])
    local cr = redis.call('HGETALL', b .. ':cr')
    if #cr > 0 then redis.call('DEL', b .. ':cr') end
    out[#out + 1] = {h[1], 1, queued(b), cr}
  else
    out[#out + 1] = {h[1], 0, 0, {}}
  end
end
return out
"""
)

#: ARGV[2]: worker; ARGV[3]: JSON ``[[host, epoch, force, ready_at_s], ...]``. Gives
#: each host up if its lease is still ``worker epoch``: unless ``force``, only when
#: nothing is queued or handed out. Handed-out URLs go back to the queue, ``:st`` gets
#: ``clean`` 1 (its last state came with its last commit), and a host with URLs left
#: is claimable from ``ready_at`` (its politeness deadline). Returns ``[[host, outcome,
#: queued]]``: outcome 1 released, 0 kept (URLs arrived: the owner reads them), -1 not
#: ours any more.
RELEASE: Final = (
    _HELPERS
    + r"""
local me = ARGV[2]
local out = {}
for _, h in ipairs(cjson.decode(ARGV[3])) do
  local b = base(h[1])
  if not owner_is(b, me .. ' ' .. h[2]) then
    out[#out + 1] = {h[1], -1, 0}
  else
    local n = queued(b) + give_back(b)
    if h[3] == 0 and n > 0 then
      out[#out + 1] = {h[1], 0, n}
    else
      redis.call('HSET', b .. ':st', 'clean', '1')
      redis.call('DEL', b .. ':lease')
      redis.call('ZREM', tag .. ':owned', h[1])
      if n > 0 then redis.call('ZADD', tag .. ':ready', h[4], h[1]) end
      out[#out + 1] = {h[1], 1, n}
    end
  end
end
return out
"""
)

#: ARGV[1]: JSON ``[tag, ...]``; ARGV[2]: now (epoch ms); ARGV[3]: now (epoch s).
#: For each shard: every host whose lease deadline in ``owned`` passed and which has
#: no lease any more (its owner died or froze) gets its handed-out URLs back in its
#: queue and, if it has URLs, is claimable now (a host whose lease is alive, renewed
#: meanwhile, is left); then the shard's counts. Returns ``[[claimable, owned,
#: recovered, [field, value, ...] of ``:counts``], ...]`` by shard. On Redis Cluster
#: one call per shard (its ``KEYS[1]`` routes it); on one Redis, one call for all 64.
SURVEY: Final = (
    _HELPERS
    + r"""
local out = {}
for _, t in ipairs(cjson.decode(ARGV[1])) do
  tag = t
  local owned = tag .. ':owned'
  local n = 0
  for _, host in ipairs(redis.call('ZRANGEBYSCORE', owned, '-inf', ARGV[2], 'LIMIT', 0, 500)) do
    local b = base(host)
    if redis.call('EXISTS', b .. ':lease') == 0 then
      give_back(b)
      redis.call('ZREM', owned, host)
      if queued(b) > 0 then redis.call('ZADD', tag .. ':ready', 'NX', ARGV[3], host) end
      n = n + 1
    end
  end
  out[#out + 1] = {redis.call('ZCARD', tag .. ':ready'), redis.call('ZCARD', owned), n,
                   redis.call('HGETALL', tag .. ':counts')}
end
return out
"""
)

#: KEYS[1]: ``Keyspace.ip_next(address)``; ARGV[1]: the earliest start wanted (epoch
#: s); ARGV[2]: the per-IP delay (s); ARGV[3]: now (epoch s); ARGV[4]: the worker;
#: ARGV[5]: how long (s) past its start a booked request may hold the address before
#: its end is known; ARGV[6]: how long (ms) a refused worker stays first in line.
#: ``:busy`` holds ``"<token> <worker>"`` of the last booking whose end is not known;
#: its life is Redis's own (``PX``), not the caller's clock, so a worker whose clock is
#: ahead cannot take an address over early. While another worker's booking is busy,
#: or another worker was refused and is first in line (``:want``, so that one worker
#: with two hosts on the address cannot keep it), returns ``["wait", ms]`` (``ms``: the
#: hold's or the line's life left). Else books ``max(wanted, next free)`` with a new
#: fencing token (``:tok``), moves the next free slot a delay past it, marks the
#: address busy with the token and returns ``["ok", start, token]``.
IP_BOOK: Final = r"""
local at, delay, now, me = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local busy_key, want_key = KEYS[1] .. ':busy', KEYS[1] .. ':want'
local busy = redis.call('GET', busy_key)
local want = redis.call('GET', want_key)
if busy and string.match(busy, '^%S+ (.+)$') ~= me then
  if not want then redis.call('SET', want_key, me, 'PX', ARGV[6]) end
  if want == me then redis.call('PEXPIRE', want_key, ARGV[6]) end
  return {'wait', tostring(redis.call('PTTL', busy_key))}
end
if want and want ~= me then
  if busy then return {'wait', tostring(redis.call('PTTL', busy_key))} end
  return {'wait', tostring(redis.call('PTTL', want_key))}
end
if want then redis.call('DEL', want_key) end
local free = tonumber(redis.call('GET', KEYS[1]) or '0')
if free > at then at = free end
local ttl = math.floor(delay * 1000) + 60000
redis.call('SET', KEYS[1], string.format('%.6f', at + delay), 'PX', ttl)
local token = redis.call('INCR', KEYS[1] .. ':tok')
redis.call('PEXPIRE', KEYS[1] .. ':tok', ttl)
local left = math.max(1, math.floor((at - now + tonumber(ARGV[5])) * 1000))
redis.call('SET', busy_key, token .. ' ' .. me, 'PX', left)
return {'ok', string.format('%.6f', at), token}
"""

#: KEYS[1]: ``Keyspace.ip_next(address)``; ARGV[1]: when a request to the address
#: ended (epoch s; an unused booking's start when it is given back); ARGV[2]: the
#: per-IP delay (s); ARGV[3]: the worker; ARGV[4]: the token of the booking this ends
#: (``0``: another request of the worker is still in flight or booked). The next slot
#: is at least a delay after that end; the address stops being busy only if its busy
#: booking is that token's: an earlier request's end never frees a later booking.
IP_END: Final = r"""
local delay = tonumber(ARGV[2])
local t = tonumber(ARGV[1]) + delay
local free = tonumber(redis.call('GET', KEYS[1]) or '0')
if t > free then
  redis.call('SET', KEYS[1], string.format('%.6f', t), 'PX', math.floor(delay * 1000) + 60000)
end
if ARGV[4] ~= '0' and redis.call('GET', KEYS[1] .. ':busy') == ARGV[4] .. ' ' .. ARGV[3] then
  redis.call('DEL', KEYS[1] .. ':busy')
end
return 0
"""

#: Every script by name (loaded on each node at start and after a restart).
SCRIPTS: Final = {
    "push": PUSH,
    "commit": COMMIT,
    "claim": CLAIM,
    "pull": PULL,
    "renew": RENEW,
    "release": RELEASE,
    "survey": SURVEY,
    "ip_book": IP_BOOK,
    "ip_end": IP_END,
}

__all__ = [
    "CLAIM",
    "COMMIT",
    "IP_BOOK",
    "IP_END",
    "PULL",
    "PUSH",
    "RELEASE",
    "RENEW",
    "SCRIPTS",
    "SURVEY",
]
