#!/usr/bin/python3
"""lockpick client program (workloads/PROTOCOL.md, version 1) over python-redis-lock
(PyPI `python-redis-lock` 4.0.1, vendored as its wheel in vendor/: pure Python, imported from
the wheel itself, so nothing is installed), against the first server of LOCKPICK_SERVERS.

    lockpick run --lock 'exec:redis:examples/python-redis-lock/lock_client.py'

Its Lock is `SET lock:<name> <random id> NX EX <expire>` (whole seconds), released and
extended by Lua scripts that check the id; it hands out no fencing token. The lease is the
key's EX: held for at least the expire after the request was sent, gone at most the expire
after the answer, unless extended (this client answers `extend` with Lock.extend, the
library's own call; its `auto_renewal` thread is not used, so that lockpick sees every
renewal). Needs redis-py (Debian: python3-redis) and a TTL of whole seconds."""
import glob
import importlib.metadata
import json
import logging
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = sorted(glob.glob(os.path.join(HERE, "vendor", "python_redis_lock-*.whl")))
try:
    import redis
    from redis.exceptions import RedisError
    import redis_lock
except ImportError as e:
    sys.exit(f"{sys.argv[0]}: {e} in {sys.executable}: install Debian's python3-redis, or name an "
             "interpreter that has it: --lock 'exec:<service>:/path/to/python3 <this program>'")

# A refused non-blocking acquire is a warning in the library's log: hundreds per run.
logging.getLogger("redis_lock").setLevel(logging.ERROR)

TTL_MS = int(os.environ["LOCKPICK_TTL_MS"])
if TTL_MS % 1000:
    sys.exit(f"{sys.argv[0]}: python-redis-lock's expire is whole seconds: run with --ttl 1s, 2s, ...")
TIMEOUT_S = int(os.environ.get("LOCKPICK_OP_TIMEOUT_MS", "500")) / 1000 * 0.8
host, port = os.environ["LOCKPICK_SERVERS"].split(",")[0].rsplit(":", 1)
# No retries: a request that timed out is answered `unknown` at once, inside the op's bound.
server = redis.StrictRedis(host=host, port=int(port), socket_timeout=TIMEOUT_S,
                           socket_connect_timeout=TIMEOUT_S, retry_on_timeout=False)
NAME = os.environ["LOCKPICK_KEY"]
LEASE = {"valid_ms": TTL_MS, "expires_ms": TTL_MS}
lock = None


def acquire(wait_s):
    """Non-blocking attempts 10 ms apart (the library's blocking acquire waits on a BLPOP in
    whole seconds, past the op's bound), each with a fresh Lock (a fresh random id), so that the
    answer can say when the attempt that succeeded was sent."""
    global lock
    received = time.monotonic()
    while True:
        attempt = time.monotonic()
        candidate = redis_lock.Lock(server, NAME, expire=TTL_MS // 1000)
        if candidate.acquire(blocking=False):
            lock = candidate
            granted_after_ms = int((attempt - received) * 1000)
            return {"result": "ok", "granted_after_ms": granted_after_ms, **LEASE}
        if attempt + 0.01 > received + wait_s:
            return {"result": "fail", "error": "held by another client"}
        time.sleep(0.01)


def handle(request):
    op = request["op"]
    try:
        if op == "acquire":
            return acquire(request["wait_ms"] / 1000)
        if op == "release":
            lock.release()
            return {"result": "ok"}
        if op == "extend":
            lock.extend(expire=TTL_MS // 1000)
            return {"result": "ok", **LEASE}
        return {"result": "fail", "error": f"unknown op {op}"}
    except redis_lock.NotAcquired as e:
        return {"result": "fail", "error": f"no longer ours: {e}"}
    except RedisError as e:
        # A timeout after sending: the command may still have been applied.
        return {"result": "unknown", "error": f"{type(e).__name__}: {e}"}


version = importlib.metadata.version("python-redis-lock")
print(json.dumps({"protocol": 1, "library": f"python-redis-lock {version}, redis-py "
                  f"{redis.__version__}", "extend": True}), flush=True)
for line in sys.stdin:
    request = json.loads(line)
    print(json.dumps({"id": request["id"], **handle(request)}), flush=True)
