#!/usr/bin/python3
"""lockpick client program (workloads/PROTOCOL.md, version 1) over PyMySQL (Debian:
python3-pymysql): MariaDB's GET_LOCK on a session of its own, against the server in
LOCKPICK_SERVERS.

    lockpick run --lock 'exec:mariadb:examples/python-pymysql/lock_client.py' --nemesis kill-client

lockpick's MariaDB lets the user `lockpick` in from the run's network without a password. The
lock lives as long as the session: no token, no lease length (no `valid_ms`, no `expires_ms`).
GET_LOCK(name, 0) answers 1 (granted), 0 (held by another session) or NULL (an error);
RELEASE_LOCK(name) answers 1 (released), 0 (another session's) or NULL (nobody's). A call that
times out or loses its connection is `unknown`, and the connection is dropped, so the server
ends its session and any lock it held."""
import json
import os
import sys

try:
    import pymysql
except ImportError as e:
    # One clear line in the client's log, rather than a traceback: the interpreter lacks it.
    sys.exit(f"{sys.argv[0]}: {e} in {sys.executable}: install Debian's python3-pymysql, or name "
             "an interpreter that has it: --lock 'exec:mariadb:/path/to/python3 <this program>'")

SERVER = os.environ["LOCKPICK_SERVERS"].split(",")[0]
HOST, PORT = SERVER.rsplit(":", 1)
# PyMySQL sets its timeouts on the socket, fractions of a second included: 80% of the bound,
# so an answer of `unknown` comes within it.
TIMEOUT_S = int(os.environ.get("LOCKPICK_OP_TIMEOUT_MS", "500")) / 1000 * 0.8
NAME = os.environ["LOCKPICK_KEY"]
conn = None  # the session, opened on first use and dropped after any doubt


def session():
    global conn
    if conn is None:
        conn = pymysql.connect(host=HOST, port=int(PORT), user="lockpick", autocommit=True,
                               connect_timeout=TIMEOUT_S, read_timeout=TIMEOUT_S,
                               write_timeout=TIMEOUT_S)
    return conn


def answer_of(sql):
    with session().cursor() as cursor:
        cursor.execute(sql, (NAME,))
        return cursor.fetchone()[0]


def handle(request):
    global conn
    op = request["op"]
    try:
        if op == "acquire":
            got = answer_of("SELECT GET_LOCK(%s, 0)")
            if got == 1:
                return {"result": "ok", "token": None, "granted_by": [SERVER]}
            if got == 0:
                return {"result": "fail", "error": "held by another session"}
            conn = None  # NULL: whether this session holds it is not known; end the session
            return {"result": "unknown", "error": "GET_LOCK answered NULL"}
        if op == "release":
            if conn is None:
                return {"result": "fail", "kind": "not-held",
                        "error": "the session had ended, and its lock with it"}
            got = answer_of("SELECT RELEASE_LOCK(%s)")
            if got == 1:
                return {"result": "ok"}
            # 0 or NULL: the server found the lock another session's, or nobody's.
            return {"result": "fail", "kind": "not-ours", "error": f"RELEASE_LOCK answered {got}"}
        return {"result": "fail", "error": f"unknown op {op}"}
    except pymysql.err.OperationalError as e:
        if conn is None:  # no connection was made (an acquire's): nothing was sent
            return {"result": "fail", "error": str(e)}
        conn = None
        return {"result": "unknown", "error": str(e)}


print(json.dumps({"protocol": 1, "library": f"PyMySQL {pymysql.__version__}"}), flush=True)
for line in sys.stdin:
    request = json.loads(line)
    print(json.dumps({"id": request["id"], **handle(request)}), flush=True)
