#!/usr/bin/python3
"""A lock client that a crash jams, for lockpick's own tests (issue: liveness): it takes the
Redis key with `SET key <id> NX` and no expiry, so a holder that dies never gives it back. It
still reports the TTL as its lease (`valid_ms`, `expires_ms`), the claim a careless wrapper
makes: lockpick takes that claim as the client program's word.

    lockpick run --lock 'exec:redis:examples/broken/no_expiry_client.py' --nemesis kill-client

Needs Debian's python3-redis (for /usr/bin/python3)."""
import json
import os
import sys
import uuid

import redis
from redis.exceptions import RedisError

TTL_MS = int(os.environ["LOCKPICK_TTL_MS"])
TIMEOUT_S = int(os.environ.get("LOCKPICK_OP_TIMEOUT_MS", "500")) / 1000 * 0.8
KEY = os.environ["LOCKPICK_KEY"]
host, port = os.environ["LOCKPICK_SERVERS"].split(",")[0].rsplit(":", 1)
server = redis.Redis(host=host, port=int(port), socket_timeout=TIMEOUT_S,
                     socket_connect_timeout=TIMEOUT_S)
RELEASE = server.register_script(
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0")
mine = None


def handle(request):
    global mine
    try:
        if request["op"] == "acquire":
            me = uuid.uuid4().hex
            if server.set(KEY, me, nx=True):
                mine = me
                return {"result": "ok", "valid_ms": TTL_MS, "expires_ms": TTL_MS}
            return {"result": "fail", "error": "held by another client"}
        if request["op"] == "release":
            if mine is not None and RELEASE(keys=[KEY], args=[mine]) == 1:
                mine = None
                return {"result": "ok"}
            return {"result": "fail", "error": "no longer ours"}
        return {"result": "fail", "error": "unknown op"}
    except RedisError as e:
        return {"result": "unknown", "error": f"{type(e).__name__}: {e}"}


print(json.dumps({"protocol": 1, "library": f"SET NX without expiry, redis-py {redis.__version__}"}),
      flush=True)
for line in sys.stdin:
    request = json.loads(line)
    print(json.dumps({"id": request["id"], **handle(request)}), flush=True)
