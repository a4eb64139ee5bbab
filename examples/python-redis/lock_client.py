#!/usr/bin/python3
"""lockpick client program (workloads/PROTOCOL.md, version 1) over redis-py's own Lock
(Debian: python3-redis), against the first server of LOCKPICK_SERVERS.

    lockpick run --lock 'exec:redis:examples/python-redis/lock_client.py'

redis-py's Lock is SET NX PX with a random value; it hands out no fencing token. The lease is
the key's PX: held for at least TTL after the request was sent, gone at most TTL after the
answer, unless extended (this client answers `extend` with Lock.extend)."""
import json
import os
import sys

import redis
from redis.exceptions import LockError, LockNotOwnedError, RedisError

TTL_MS = int(os.environ["LOCKPICK_TTL_MS"])
TIMEOUT_S = int(os.environ.get("LOCKPICK_OP_TIMEOUT_MS", "500")) / 1000 * 0.8
host, port = os.environ["LOCKPICK_SERVERS"].split(",")[0].rsplit(":", 1)
server = redis.Redis(host=host, port=int(port), socket_timeout=TIMEOUT_S,
                     socket_connect_timeout=TIMEOUT_S)
lock = server.lock(os.environ["LOCKPICK_KEY"], timeout=TTL_MS / 1000, sleep=0.01,
                   thread_local=False)
LEASE = {"valid_ms": TTL_MS, "expires_ms": TTL_MS}


def handle(request):
    op = request["op"]
    try:
        if op == "acquire":
            if lock.acquire(blocking_timeout=request["wait_ms"] / 1000):
                return {"result": "ok", **LEASE}
            return {"result": "fail", "error": "held by another client"}
        if op == "release":
            lock.release()
            return {"result": "ok"}
        if op == "extend":
            lock.extend(TTL_MS / 1000, replace_ttl=True)
            return {"result": "ok", **LEASE}
        return {"result": "fail", "error": f"unknown op {op}"}
    except LockNotOwnedError as e:
        return {"result": "fail", "error": f"no longer ours: {e}"}
    except LockError as e:
        return {"result": "fail", "error": str(e)}
    except RedisError as e:
        # A timeout after sending: the command may still have been applied.
        return {"result": "unknown", "error": f"{type(e).__name__}: {e}"}


print(json.dumps({"protocol": 1, "library": f"redis-py {redis.__version__}",
                  "extend": True}), flush=True)
for line in sys.stdin:
    request = json.loads(line)
    print(json.dumps({"id": request["id"], **handle(request)}), flush=True)
