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
import threading
import time

try:
    import kazoo
    from kazoo.client import KazooClient, KazooState
    from kazoo.exceptions import KazooException, LockTimeout
except ImportError as e:
    # One clear line in the client's log, rather than a traceback: the interpreter lacks it.
    sys.exit(f"{sys.argv[0]}: {e} in {sys.executable}: install Debian's python3-kazoo, or name an "
             "interpreter that has it: --lock 'exec:<service>:/path/to/python3 <this program>'")

TTL_MS = int(os.environ["LOCKPICK_TTL_MS"])
OP_TIMEOUT_S = int(os.environ.get("LOCKPICK_OP_TIMEOUT_MS", "500")) / 1000
PATH = "/lockpick/" + os.environ["LOCKPICK_KEY"]
client = KazooClient(hosts=os.environ["LOCKPICK_SERVERS"], timeout=TTL_MS / 1000)
client.start(timeout=10)
lock = None  # the Lock of the last acquire that answered ok
session = {"lost": False}


def on_state(state):
    if state == KazooState.LOST:
        session["lost"] = True  # the ephemeral lock node went with the session


client.add_listener(on_state)


class Overran(Exception):
    """A call that did not return within its bound."""


def within(bound_s, call, if_late=None):
    """Runs `call` on a thread and returns its result, or raises what it raised, or `Overran`
    when it has not returned within `bound_s`. kazoo's own retry has no limit, so this is what
    keeps each request within the protocol's bound. Should an overrun call return later after
    all, its result goes to `if_late`."""
    state = {"done": False, "abandoned": False, "result": None, "error": None}
    guard = threading.Lock()

    def run():
        result, error = None, None
        try:
            result = call()
        except KazooException as e:
            error = e
        with guard:
            state.update(done=True, result=result, error=error)
            late = state["abandoned"]
        if late and error is None and if_late is not None:
            if_late(result)

    threading.Thread(target=run, daemon=True).start()
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        with guard:
            if state["done"]:
                break
        time.sleep(0.005)
    with guard:
        if not state["done"]:
            state["abandoned"] = True
            raise Overran()
    if state["error"] is not None:
        raise state["error"]
    return state["result"]


def unknown(e):
    return {"result": "unknown", "error": f"{type(e).__name__}: {e}"}


def bounded_acquire(wait_s):
    """kazoo's Lock.acquire, kept within the protocol's bound (wait + the op timeout): its
    timeout bounds the wait, not the retries and clean-up after a lost connection. One that
    overruns is answered `unknown` and, should it still take the lock later, gives it back.
    Each acquire gets a Lock of its own, so an abandoned one never blocks the next."""
    attempt = client.Lock(PATH, os.environ["LOCKPICK_CLIENT"])

    def take():
        try:
            return attempt.acquire(timeout=wait_s)
        except LockTimeout:
            return False

    def give_back(got):
        if got:
            try:
                attempt.release()
            except KazooException:
                pass  # its session ends with this program: the node goes with it

    try:
        got = within(wait_s + OP_TIMEOUT_S * 0.8, take, give_back)
    except Overran:
        return None, {"result": "unknown", "error": "kazoo's acquire overran its bound"}
    except KazooException as e:
        return None, unknown(e)
    if not got:
        return None, {"result": "fail", "error": "held by another client"}
    return attempt, {"result": "ok", "token": int(attempt.node[-10:]), "valid_ms": TTL_MS}


def bounded_release(held):
    """kazoo's Lock.release, kept within the op timeout: it goes through kazoo's command retry
    too, so a release sent while the ensemble is unreachable would never answer. One that
    overruns is answered `unknown` (it may still delete the node later, or the session's end
    will)."""
    try:
        within(OP_TIMEOUT_S * 0.8, held.release)
    except Overran:
        return {"result": "unknown", "error": "kazoo's release overran its bound"}
    except KazooException as e:
        return unknown(e)
    if session["lost"]:
        # kazoo heard from the ensemble that the session expired: its lock node went with it.
        return {"result": "fail", "kind": "not-ours", "error": "the session expired while held"}
    return {"result": "ok"}


def handle(request):
    global lock
    op = request["op"]
    try:
        if op == "acquire":
            session["lost"] = False
            lock, answer = bounded_acquire(request["wait_ms"] / 1000)
            return answer
        if op == "release":
            if lock is None:
                return {"result": "fail", "kind": "not-held", "error": "no lock held"}
            held, lock = lock, None
            return bounded_release(held)
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
