"""A lock client of the lock-client protocol whose behaviour the key of
each acquire picks, for the tests of the harness's reading of a client's
output: "lost-during" sends a lost notice, then its reply; "lost-after"
replies, then sends a lost notice 50 ms later, between calls;
"hold:PATH" replies once the file PATH exists; any other key is granted
at once. No server."""
import os
import json
import sys
import threading
import time

zero = None
lock = threading.Lock()


def now():
    return (time.monotonic() - zero) * 1000


def send(m):
    with lock:
        sys.stdout.write(json.dumps(m) + "\n")
        sys.stdout.flush()


def main():
    global zero
    sys.stdin.readline()
    zero = time.monotonic()
    send({"type": "init_ok", "now_ms": now(), "wall_ms": time.time() * 1000,
          "client": "scripted.py", "abilities": ["lost"]})
    n = 0
    for line in sys.stdin:
        received = now()
        req = json.loads(line)
        n += 1
        key, rid = req.get("key"), req["id"]
        ok = {"type": "ok", "id": rid, "owner": "o%d" % n, "never": True, "received_ms": received}
        if key == "lost-during":
            send({"type": "lost", "key": "k", "owner": "during"})
        elif key.startswith("hold:"):
            while not os.path.exists(key[len("hold:"):]):
                time.sleep(0.01)
        elif key == "lost-after":
            threading.Timer(0.05, send, [{"type": "lost", "key": "k", "owner": "after"}]).start()
        ok["now_ms"] = now()
        send(ok)


main()
