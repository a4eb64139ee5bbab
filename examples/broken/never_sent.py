#!/usr/bin/python3
"""A redis-py client that checks its connection before each request, for lockpick's own tests
of `"sent": false` (workloads/PROTOCOL.md). Each acquire and release first PINGs the server on a
fresh connection; when the PING times out (every server stopped), the request itself was never
written, so nothing of it can be applied later, and the program says so: `fail` with
`"sent": false`. A timeout of the request itself stays `unknown`. Its hello also says `clock`,
so protocol-check's echo of every hello field can be seen.

    lockpick protocol-check examples/broken/never_sent.py

Needs Debian's python3-redis (for /usr/bin/python3)."""
import json
import os
import sys
import time
import uuid

try:
    import redis
    from redis.exceptions import RedisError
except ImportError as e:
    sys.exit(f"{sys.argv[0]}: {e} in {sys.executable}: install Debian's python3-redis")

TTL_MS = int(os.environ["LOCKPICK_TTL_MS"])
TIMEOUT_S = int(os.environ.get("LOCKPICK_OP_TIMEOUT_MS", "500")) / 1000 * 0.4
KEY = os.environ["LOCKPICK_KEY"]
host, port = os.environ["LOCKPICK_SERVERS"].split(",")[0].rsplit(":", 1)
RELEASE = ("if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) "
           "end return 0")
mine = None


def connected():
    """A fresh connection whose PING came back, or None: then nothing else was sent on it."""
    server = redis.Redis(host=host, port=int(port), socket_timeout=TIMEOUT_S,
                         socket_connect_timeout=TIMEOUT_S, single_connection_client=True)
    try:
        server.ping()
        return server
    except RedisError:
        server.close()
        return None


def handle(request):
    global mine
    op = request["op"]
    if op == "clock":
        return {"result": "ok", "wall_ms": int(time.time() * 1000)}
    server = connected()
    if server is None:
        return {"result": "fail", "sent": False, "error": "no answer to PING: request not sent"}
    try:
        if op == "acquire":
            me = uuid.uuid4().hex
            if server.set(KEY, me, nx=True, px=TTL_MS):
                mine = me
                return {"result": "ok", "valid_ms": TTL_MS, "expires_ms": TTL_MS}
            return {"result": "fail", "error": "held by another client"}
        if op == "release":
            if mine is not None and server.eval(RELEASE, 1, KEY, mine) == 1:
                mine = None
                return {"result": "ok"}
            return {"result": "fail", "kind": "not-ours", "error": "no longer ours"}
        return {"result": "fail", "error": f"unknown op {op}"}
    except RedisError as e:
        return {"result": "unknown", "error": f"{type(e).__name__}: {e}"}
    finally:
        server.close()


print(json.dumps({"protocol": 1, "library": f"redis-py {redis.__version__} (PING first)",
                  "clock": True}), flush=True)
for line in sys.stdin:
    request = json.loads(line)
    print(json.dumps({"id": request["id"], **handle(request)}), flush=True)
