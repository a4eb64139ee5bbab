#!/usr/bin/python3
"""lockpick client program (workloads/PROTOCOL.md, version 1) over kazoo's own Lock recipe
(Debian: python3-kazoo), against the ZooKeeper ensemble in LOCKPICK_SERVERS.

    lockpick run --lock 'exec:zookeeper:examples/python-kazoo/lock_client.py' --fencing on

The token is the sequence number of the lock's ephemeral-sequential node. The lease is the
session (timeout = the TTL): held for at least the session timeout after the request was sent;
kazoo pings on its own, so there is no known end (no `expires_ms`, no `extend`)."""
import json
import os
import sys

import kazoo
from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import KazooException, LockTimeout

TTL_MS = int(os.environ["LOCKPICK_TTL_MS"])
client = KazooClient(hosts=os.environ["LOCKPICK_SERVERS"], timeout=TTL_MS / 1000)
client.start(timeout=10)
lock = client.Lock("/lockpick/" + os.environ["LOCKPICK_KEY"], os.environ["LOCKPICK_CLIENT"])
session = {"lost": False}


def on_state(state):
    if state == KazooState.LOST:
        session["lost"] = True  # the ephemeral lock node went with the session


client.add_listener(on_state)


def handle(request):
    op = request["op"]
    try:
        if op == "acquire":
            session["lost"] = False
            if lock.acquire(timeout=request["wait_ms"] / 1000):
                return {"result": "ok", "token": int(lock.node[-10:]), "valid_ms": TTL_MS}
            return {"result": "fail", "error": "held by another client"}
        if op == "release":
            lock.release()
            if session["lost"]:
                return {"result": "fail", "error": "the session expired while held"}
            return {"result": "ok"}
        return {"result": "fail", "error": f"unknown op {op}"}
    except LockTimeout as e:
        return {"result": "fail", "error": f"LockTimeout: {e}"}
    except KazooException as e:
        return {"result": "unknown", "error": f"{type(e).__name__}: {e}"}


print(json.dumps({"protocol": 1, "library": f"kazoo {kazoo.version.__version__}"}), flush=True)
for line in sys.stdin:
    request = json.loads(line)
    print(json.dumps({"id": request["id"], **handle(request)}), flush=True)
client.stop()
