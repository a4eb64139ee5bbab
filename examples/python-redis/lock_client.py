#!/usr/bin/python3
"""lockpick client program (workloads/PROTOCOL.md, version 1) over redis-py's own Lock
(Debian: python3-redis), against the first server of LOCKPICK_SERVERS.

    lockpick run --lock 'exec:redis:examples/python-redis/lock_client.py'

redis-py's Lock is SET NX PX with a random value; it hands out no fencing token. The lease is
the key's PX: held for at least TTL after the request was sent, gone at most TTL after the
answer, unless extended (this client answers `extend` with Lock.extend). It answers `clock` with
its wall clock, so that `skew-clients` can see its clock moved."""
import json
import os
import sys
import time

try:
    import redis
    from redis.exceptions import LockError, LockNotOwnedError, RedisError
except ImportError as e:
    # One clear line in the client's log, rather than a traceback: the interpreter lacks it.
    sys.exit(f"{sys.argv[0]}: {e} in {sys.executable}: install Debian's python3-redis, or name an "
             "interpreter that has it: --lock 'exec:<service>:/path/to/python3 <this program>'")

TTL_MS = int(os.environ["LOCKPICK_TTL_MS"])
TIMEOUT_S = int(os.environ.get("LOCKPICK_OP_TIMEOUT_MS", "500")) / 1000 * 0.8
host, port = os.environ["LOCKPICK_SERVERS"].split(",")[0].rsplit(":", 1)
server = redis.Redis(host=host, port=int(port), socket_timeout=TIMEOUT_S,
                     socket_connect_timeout=TIMEOUT_S)
lock = server.lock(os.environ["LOCKPICK_KEY"], timeout=TTL_MS / 1000, sleep=0.01,
                   thread_local=False)
LEASE = {"valid_ms": TTL_MS, "expires_ms": TTL_MS}


def acquire(wait_s):
    """Lock.acquire's own retry loop, written out (non-blocking attempts 10 ms apart, as its
    `sleep=0.01`) so that the answer can say when the attempt that succeeded was sent."""
    received = time.monotonic()
    while True:
        attempt = time.monotonic()
        if lock.acquire(blocking=False):
            granted_after_ms = int((attempt - received) * 1000)
            return {"result": "ok", "granted_after_ms": granted_after_ms, **LEASE}
        if attempt + 0.01 > received + wait_s:
            return {"result": "fail", "error": "held by another client"}
        time.sleep(0.01)


def failed(op, kind, error):
    # A release's fail says what it means for the lease (`kind`); no other answer carries one.
    return {"result": "fail", "error": error, **({"kind": kind} if op == "release" else {})}


def handle(request):
    op = request["op"]
    try:
        if op == "acquire":
            return acquire(request["wait_ms"] / 1000)
        if op == "release":
            lock.release()
            return {"result": "ok"}
        if op == "extend":
            lock.extend(TTL_MS / 1000, replace_ttl=True)
            return {"result": "ok", **LEASE}
        if op == "clock":
            return {"result": "ok", "wall_ms": int(time.time() * 1000)}
        return {"result": "fail", "error": f"unknown op {op}"}
    except LockNotOwnedError as e:  # the server found the key gone, or another's
        return failed(op, "not-ours", f"no longer ours: {e}")
    except LockError as e:  # redis-py's own refusal: it holds no token, so sent nothing
        return failed(op, "not-held", str(e))
    except RedisError as e:
        # A timeout after sending: the command may still have been applied.
        return {"result": "unknown", "error": f"{type(e).__name__}: {e}"}


print(json.dumps({"protocol": 1, "library": f"redis-py {redis.__version__}",
                  "extend": True, "clock": True}), flush=True)
for line in sys.stdin:
    request = json.loads(line)
    print(json.dumps({"id": request["id"], **handle(request)}), flush=True)
