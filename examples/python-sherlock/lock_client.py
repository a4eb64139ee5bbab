#!/usr/bin/python3
"""lockpick client program (workloads/PROTOCOL.md, version 1) over sherlock's RedisLock (PyPI
`sherlock` 0.4.1, vendored as its wheel in vendor/: pure Python, imported from the wheel itself,
so nothing is installed), against the first server of LOCKPICK_SERVERS.

    lockpick run --lock 'exec:redis:examples/python-sherlock/lock_client.py' --time-limit 6s
    lockpick run --lock 'exec:redis:examples/python-sherlock/lock_client.py --whole-seconds'

Its acquire is one Lua script: `SETNX key <uuid>`, then `EXPIRE key <expire>`. sherlock's docs
give `expire` as a float (`:param float expire:`), and this client passes the TTL as one (1.0
for 1 s), as they show: Redis refuses `EXPIRE key 1.0` (not an integer) after the `SETNX` was
applied, the script fails with the key set and no expiry, and nobody ever gets the lock again.
lockpick's answer: a jam, with Redis's error in the verdict's reasons. With --whole-seconds it
passes an int (needs a TTL of whole seconds) and the lock works. No fencing token.
Needs redis-py (Debian: python3-redis)."""
import glob
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = sorted(glob.glob(os.path.join(HERE, "vendor", "sherlock-*.whl")))
try:
    import redis
    from redis.exceptions import RedisError
    import sherlock
    from sherlock import LockException
except ImportError as e:
    sys.exit(f"{sys.argv[0]}: {e} in {sys.executable}: install Debian's python3-redis, or name an "
             "interpreter that has it: --lock 'exec:<service>:/path/to/python3 <this program>'")

TTL_MS = int(os.environ["LOCKPICK_TTL_MS"])
WHOLE = "--whole-seconds" in sys.argv[1:]
if WHOLE and TTL_MS % 1000:
    sys.exit(f"{sys.argv[0]}: --whole-seconds needs a TTL of whole seconds, not {TTL_MS} ms")
TIMEOUT_S = int(os.environ.get("LOCKPICK_OP_TIMEOUT_MS", "500")) / 1000 * 0.8
host, port = os.environ["LOCKPICK_SERVERS"].split(",")[0].rsplit(":", 1)
server = redis.Redis(host=host, port=int(port), socket_timeout=TIMEOUT_S,
                     socket_connect_timeout=TIMEOUT_S)
EXPIRE = TTL_MS // 1000 if WHOLE else TTL_MS / 1000
lock = sherlock.RedisLock(os.environ["LOCKPICK_KEY"], client=server, expire=EXPIRE, timeout=0)
LEASE = {"valid_ms": TTL_MS, "expires_ms": TTL_MS}


def acquire(wait_s):
    """sherlock's blocking acquire retries every `retry_interval`; written out with
    non-blocking attempts 10 ms apart, so that the answer can date the grant."""
    received = time.monotonic()
    while True:
        attempt = time.monotonic()
        if lock.acquire(blocking=False):
            return {"result": "ok", "granted_after_ms": int((attempt - received) * 1000), **LEASE}
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
        return {"result": "fail", "error": f"unknown op {op}"}
    except LockException as e:  # its release script found the key gone or another's
        return {"result": "fail", "kind": "not-ours", "error": f"LockException: {e}"}
    except RedisError as e:  # a timeout after sending, or a script that failed part-way
        return {"result": "unknown", "error": f"{type(e).__name__}: {e}"}


print(json.dumps({"protocol": 1, "library": f"sherlock 0.4.1, redis-py {redis.__version__}"}),
      flush=True)
for line in sys.stdin:
    request = json.loads(line)
    print(json.dumps({"id": request["id"], **handle(request)}), flush=True)
