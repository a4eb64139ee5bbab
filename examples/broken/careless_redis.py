#!/usr/bin/python3
"""Careless Redis lock clients, for lockpick's own tests, each broken the way argv[1] says:
  no-expiry      - takes the key with `SET key <id> NX` and no expiry, so a holder that dies
                   never gives it back (a lock that a crash jams); it still reports the TTL as
                   its lease (`valid_ms`, `expires_ms`), the claim a careless wrapper makes;
  unsafe-release - takes the key properly (`SET NX PX`) but releases with a plain `DEL`, so a
                   holder that outlived its lease deletes the next holder's key: a client-side
                   break of mutual exclusion, not the server's;
  long-bounds    - takes the key properly (`SET NX PX ttl`) but reports a lease ten times as
                   long (`valid_ms`, `expires_ms`: 10 x ttl): a claim the server contradicts,
                   which lockpick's cross-check (PTTL of the key) must catch;
  long-extends   - honest acquires, but answers `extend` (PEXPIRE ttl of its own key) with a
                   lease ten times as long: a renewal's claim the server contradicts;
  retake-extend  - honest acquires, but `extend` re-SETs the key (`SET key <id> PX ttl`) without
                   checking whose it is: a holder that outlived its lease takes the lock back
                   from the next holder, a grant made by a renewal;
  blind-extend   - honest acquires, but `extend` is a blind `PEXPIRE key ttl`: it lengthens
                   whoever's key is there and says the lease is ours;
  half-expire    - sherlock's acquire with `expire=1.0`, as its docs show: `SETNX`, then
                   `EXPIRE key 1.0`, which Redis refuses (not an integer): the key stays with no
                   expiry, the program answers `unknown` with the error, and nobody ever gets the
                   lock again; `half-expire-on <file>` acquires honestly until <file> exists (a
                   test creates it near the end of a run, so the jam begins there).

    lockpick run --lock 'exec:redis:examples/broken/careless_redis.py no-expiry' --nemesis kill-client

Needs Debian's python3-redis (for /usr/bin/python3)."""
import json
import os
import sys
import uuid

try:
    import redis
    from redis.exceptions import RedisError
except ImportError as e:
    # One clear line in the client's log, rather than a traceback: the interpreter lacks it.
    sys.exit(f"{sys.argv[0]}: {e} in {sys.executable}: install Debian's python3-redis, or name an "
             "interpreter that has it: --lock 'exec:<service>:/path/to/python3 <this program>'")

TTL_MS = int(os.environ["LOCKPICK_TTL_MS"])
TIMEOUT_S = int(os.environ.get("LOCKPICK_OP_TIMEOUT_MS", "500")) / 1000 * 0.8
KEY = os.environ["LOCKPICK_KEY"]
host, port = os.environ["LOCKPICK_SERVERS"].split(",")[0].rsplit(":", 1)
server = redis.Redis(host=host, port=int(port), socket_timeout=TIMEOUT_S,
                     socket_connect_timeout=TIMEOUT_S)
RELEASE = server.register_script(
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0")
EXTEND = server.register_script(
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) "
    "end return 0")
MODE = sys.argv[1]
mine = None


def half_expire():
    """Whether this acquire takes the key the way sherlock does with a float expiry."""
    return MODE == "half-expire" or (MODE == "half-expire-on" and os.path.exists(sys.argv[2]))


def handle(request):
    global mine
    try:
        if request["op"] == "acquire" and half_expire():
            me = uuid.uuid4().hex
            if not server.setnx(KEY, me):
                return {"result": "fail", "error": "held by another client"}
            mine = me
            server.expire(KEY, TTL_MS / 1000)  # a float: Redis refuses it, the key stays
            return {"result": "ok", "valid_ms": TTL_MS, "expires_ms": TTL_MS}
        if request["op"] == "acquire":
            me = uuid.uuid4().hex
            expiry = None if MODE == "no-expiry" else TTL_MS
            if server.set(KEY, me, nx=True, px=expiry):
                mine = me
                claimed = TTL_MS * 10 if MODE == "long-bounds" else TTL_MS
                return {"result": "ok", "valid_ms": claimed, "expires_ms": claimed}
            return {"result": "fail", "error": "held by another client"}
        if request["op"] == "extend" and MODE == "retake-extend":
            server.set(KEY, mine, px=TTL_MS)
            return {"result": "ok", "valid_ms": TTL_MS, "expires_ms": TTL_MS}
        if request["op"] == "extend" and MODE == "blind-extend":
            if server.pexpire(KEY, TTL_MS):
                return {"result": "ok", "valid_ms": TTL_MS, "expires_ms": TTL_MS}
            return {"result": "fail", "error": "no key"}
        if request["op"] == "extend":
            if mine is not None and EXTEND(keys=[KEY], args=[mine, TTL_MS]) == 1:
                return {"result": "ok", "valid_ms": TTL_MS * 10, "expires_ms": TTL_MS * 10}
            return {"result": "fail", "error": "no longer ours"}
        if request["op"] == "release":
            if MODE == "unsafe-release" and mine is not None:
                server.delete(KEY)
                mine = None
                return {"result": "ok"}
            if mine is not None and RELEASE(keys=[KEY], args=[mine]) == 1:
                mine = None
                return {"result": "ok"}
            return {"result": "fail", "error": "no longer ours"}
        return {"result": "fail", "error": "unknown op"}
    except RedisError as e:
        return {"result": "unknown", "error": f"{type(e).__name__}: {e}"}


print(json.dumps({"protocol": 1, "library": f"careless ({MODE}), redis-py {redis.__version__}",
                  "extend": MODE in ("long-extends", "retake-extend", "blind-extend")}),
      flush=True)
for line in sys.stdin:
    request = json.loads(line)
    print(json.dumps({"id": request["id"], **handle(request)}), flush=True)
