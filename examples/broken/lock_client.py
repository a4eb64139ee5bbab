#!/usr/bin/python3
"""A deliberately broken lockpick client program, for lockpick's own tests: it says hello
properly, then breaks the protocol at its first acquire the way argv[1] says:
  garbage - answers with a line that is not JSON;
  die     - exits in the middle of the operation;
  silent  - never answers (the harness must not wait for it);
  chatter - prints a log line on stdout before answering;
  foreign-grant - answers ok, granted by a server it was not given (so that a nemesis aiming at
                  the granting servers would hit another machine)."""
import json
import sys
import time

mode = sys.argv[1]
print(json.dumps({"protocol": 1, "library": f"broken ({mode})"}), flush=True)
for line in sys.stdin:
    request = json.loads(line)
    if mode == "garbage":
        print("Traceback (most recent call last): oops", flush=True)
    elif mode == "die":
        sys.exit(3)
    elif mode == "silent":
        time.sleep(3600)
    elif mode == "chatter":
        print("INFO acquiring the lock", flush=True)
        print(json.dumps({"id": request["id"], "result": "fail"}), flush=True)
    elif mode == "foreign-grant":
        print(json.dumps({"id": request["id"], "result": "ok",
                          "granted_by": ["192.0.2.1:6379"]}), flush=True)
