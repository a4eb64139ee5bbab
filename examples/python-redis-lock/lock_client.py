#!/usr/bin/python3
"""lockpick client program (workloads/PROTOCOL.md, version 1) over python-redis-lock
(PyPI `python-redis-lock` 4.0.1, vendored as its wheel in vendor/: pure Python, imported from
the wheel itself, so nothing is installed), against the first server of LOCKPICK_SERVERS.

    lockpick run --lock 'exec:redis:examples/python-redis-lock/lock_client.py'
    lockpick run --lock 'exec:redis:examples/python-redis-lock/lock_client.py --auto-renewal'

Its Lock is `SET lock:<name> <random id> NX EX <expire>` (whole seconds), released and
extended by Lua scripts that check the id; it hands out no fencing token. The lease is the
key's EX: held for at least the expire after the request was sent, gone at most the expire
after the answer, unless extended. By default this client answers lockpick's `extend` with
Lock.extend, the library's own call. With --auto-renewal the library's own `auto_renewal`
thread renews the lease every two thirds of the expire, and the program reports each of its
renewals (`renewed`, PROTOCOL.md), so lockpick still knows when the lease can have ended.
Needs redis-py (Debian: python3-redis) and a TTL of whole seconds."""
import glob
import importlib.metadata
import json
import logging
import os
import sys
import threading
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
AUTO_RENEWAL = "--auto-renewal" in sys.argv[1:]
# Redis drops a key once its clock in whole ms is past the expiry: up to 1 ms after it. A
# renewal's report counts from after its reply, but stays 2 ms wide all the same.
EXPIRES_MS = TTL_MS + 2 if AUTO_RENEWAL else TTL_MS
LEASE = {"valid_ms": TTL_MS, "expires_ms": EXPIRES_MS}
lock = None
# The renewal thread and the request loop both print: one line at a time.
stdout_lock = threading.Lock()


def say(message):
    with stdout_lock:
        print(json.dumps(message), flush=True)


class ReportedLock(redis_lock.Lock):
    """The library's Lock, whose renewal thread calls `extend`: each renewal is reported once its
    outcome is known. A renewal that raises ends the library's renewal thread."""

    def extend(self, expire=None):
        try:
            super().extend(expire)
        except redis_lock.NotAcquired as e:
            say({"renewed": "fail", "error": f"no longer ours: {e}"})
            raise
        except RedisError as e:  # a timeout after sending: it may still be applied
            say({"renewed": "unknown", "error": f"{type(e).__name__}: {e}"})
            raise
        say({"renewed": "ok", "expires_ms": EXPIRES_MS})


def renewal_thread_ended(args):
    """A renewal that raised ends the library's renewal thread (reported above): one line in the
    client's log, not a traceback."""
    if isinstance(args.exc_value, (redis_lock.NotAcquired, RedisError)):
        print(f"{sys.argv[0]}: the renewal thread stopped: {args.exc_value}", file=sys.stderr)
    else:
        threading.__excepthook__(args)


threading.excepthook = renewal_thread_ended


def acquire(wait_s):
    """Non-blocking attempts 10 ms apart (the library's blocking acquire waits on a BLPOP in
    whole seconds, past the op's bound), each with a fresh Lock (a fresh random id), so that the
    answer can say when the attempt that succeeded was sent."""
    global lock
    received = time.monotonic()
    while True:
        attempt = time.monotonic()
        if AUTO_RENEWAL:
            candidate = ReportedLock(server, NAME, expire=TTL_MS // 1000, auto_renewal=True)
        else:
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
        # The server's script found the key gone or another's; only a release says its kind.
        kind = {"kind": "not-ours"} if op == "release" else {}
        return {"result": "fail", "error": f"no longer ours: {e}", **kind}
    except RedisError as e:
        # A timeout after sending: the command may still have been applied.
        return {"result": "unknown", "error": f"{type(e).__name__}: {e}"}


version = importlib.metadata.version("python-redis-lock")
library = f"python-redis-lock {version}, redis-py {redis.__version__}"
if AUTO_RENEWAL:
    say({"protocol": 1, "library": f"{library}, auto_renewal", "reports_renewals": True})
else:
    say({"protocol": 1, "library": library, "extend": True})
for line in sys.stdin:
    request = json.loads(line)
    say({"id": request["id"], **handle(request)})
