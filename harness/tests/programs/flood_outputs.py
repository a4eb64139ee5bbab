# A client program that says hello, then floods its stdout with no newline (with `lines`: with
# short lines that answer nothing) and its stderr, forever (run with /usr/bin/python3): lockpick
# must refuse it with bounded memory and output.
import sys
import threading


def flood_stderr():
    chunk = b"e" * 65536
    while True:
        sys.stderr.buffer.write(chunk)


threading.Thread(target=flood_stderr, daemon=True).start()
sys.stdout.write('{"protocol": 1}\n')
sys.stdout.flush()
chunk = b"x" * 65536
if sys.argv[1:] == ["lines"]:
    chunk = b'{"id": 0, "result": "ok"}\n' * 2048
while True:
    sys.stdout.buffer.write(chunk)
