#!/usr/bin/env python3
"""A lock client of the jepsen-lite lock-client protocol in plain Python:
Redis SET key owner NX PX ttl, released by a compare-and-delete script, over
a socket of its own (no library); with --queue also the NoSQL seed's
state-transition queue (ZADD tasks:<queue> XX CH 1 <id> in one script), as
the built-in redis-zadd-queue-script writes it. The tests of the protocol run it against a
real redis-server, well behaved or, with --break, breaking the protocol at
its Nth request: malformed (a line that is not JSON), exit (exits with
status 3), hang (never answers), wrong-id (answers with another id),
garbage-hang (writes bytes without a newline, then never answers). With
--wrong it speaks the protocol throughout but is wrong in one way that
protocol-test must catch: until-wall (until_ms from the wall clock),
lease-seconds (lease_ms in seconds), no-handshake (claims after-response
and never sends it), fixed-owner (the same owner in every process, drawn
from a seed of its own rather than init's)."""
import json, os, random, socket, sys, time

RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"
CAPTURE = """local got = {}
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, 2, 'BYSCORE')) do
  if #got >= tonumber(ARGV[1]) then break end
  if redis.call('ZADD', KEYS[1], 'XX', 'CH', 1, id) == 1 then
    redis.call('ZADD', KEYS[2], ARGV[2], id)
    got[#got + 1] = id
  end
end
return got"""
REAP = """local got = {}
for _, id in ipairs(redis.call('ZRANGE', KEYS[2], '-inf', ARGV[1], 'BYSCORE')) do
  if redis.call('ZSCORE', KEYS[1], id) == '1' then
    redis.call('ZADD', KEYS[1], 'XX', 2, id)
    got[#got + 1] = id
  end
end
return got"""


class Redis:
    def __init__(self, addr):
        host, port = addr.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=5)
        self.buf = b""

    def cmd(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.sock.sendall(out)
        return self.reply()

    def line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("connection closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def reply(self):
        line = self.line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"*":
            return [self.reply() for _ in range(int(rest))]
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self.buf += self.sock.recv(65536)
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data.decode()
        raise RuntimeError("unexpected reply %r" % line)


def main():
    breaking, at = None, 0
    if "--break" in sys.argv:
        breaking, at = sys.argv[sys.argv.index("--break") + 1].split("@")
        at = int(at)
    wrong = sys.argv[sys.argv.index("--wrong") + 1] if "--wrong" in sys.argv else None
    first = sys.stdin.readline()
    zero = time.monotonic()
    init = json.loads(first)
    ep = next((e for e in init["endpoints"] if e["role"] == "primary"), init["endpoints"][0])
    r = Redis(ep["addr"])
    now = lambda: (time.monotonic() - zero) * 1000

    received = 0

    def send(m):
        if "id" in m:
            m["received_ms"], m["now_ms"] = received, now()
        sys.stdout.write(json.dumps(m) + "\n")
        sys.stdout.flush()

    send({"type": "init_ok", "now_ms": now(), "wall_ms": time.time() * 1000,
          "client": "resp_lock.py (plain sockets, python %d.%d)" % sys.version_info[:2],
          "abilities": ["wait"] + (["queue"] if "--queue" in sys.argv else []) +
          (["after-response"] if wrong == "no-handshake" else [])})
    draw = random.Random(int(init.get("seed", "0")))
    if wrong == "fixed-owner":
        draw = random.Random(1)
    owner_of_process = "%032x" % draw.getrandbits(128)
    n = 0
    received = 0
    for line in sys.stdin:
        received = now()
        req = json.loads(line)
        n += 1
        if breaking and n == at:
            if breaking == "malformed":
                print("acquired " + req.get("key", ""), flush=True)
                continue
            if breaking == "exit":
                sys.exit(3)
            if breaking == "hang":
                time.sleep(3600)
            if breaking == "wrong-id":
                send({"type": "not-acquired", "id": req["id"] + 100})
                continue
            if breaking == "garbage-hang":
                sys.stdout.write("acquired " + req.get("key", ""))
                sys.stdout.flush()
                time.sleep(3600)
        rid, key = req["id"], req.get("key")
        try:
            if req["type"] == "setup":
                for q in {t["queue"] for t in req["tasks"]}:
                    r.cmd("DEL", "tasks:" + q, "tasks:" + q + ":captured")
                for t in req["tasks"]:
                    r.cmd("ZADD", "tasks:" + t["queue"], "NX", 0, t["task"])
                send({"type": "ok", "id": rid})
            elif req["type"] == "capture":
                q = req["queue"]
                ids = r.cmd("EVAL", CAPTURE, 2, "tasks:" + q, "tasks:" + q + ":captured", req["limit"], int(time.time() * 1000))
                send({"type": "ok", "id": rid, "tasks": [{"task": i, "queue": q} for i in ids]})
            elif req["type"] == "set-status":
                score = 0 if req["status"] == "done" else 2
                r.cmd("ZADD", "tasks:" + req["queue"], "XX", score, req["task"])
                send({"type": "ok", "id": rid})
            elif req["type"] == "reap":
                cutoff = int(time.time() * 1000 - req["timeout_ms"])
                got = []
                for q in req["queues"]:
                    got += r.cmd("EVAL", REAP, 2, "tasks:" + q, "tasks:" + q + ":captured", cutoff)
                send({"type": "ok", "id": rid, "tasks": got})
            elif req["type"] == "acquire":
                owner = owner_of_process if wrong == "fixed-owner" else "%032x" % draw.getrandbits(128)
                give_up = now() + req.get("wait_ms", 0)
                while True:  # a waiting acquire tries every 50 ms
                    t0 = now()
                    if r.cmd("SET", key, owner, "NX", "PX", int(req["ttl_ms"])) == "OK":
                        until, lease = t0 + req["ttl_ms"], req["ttl_ms"]
                        if wrong == "until-wall":
                            until = time.time() * 1000 + req["ttl_ms"]
                        if wrong == "lease-seconds":
                            lease = req["ttl_ms"] / 1000
                        send({"type": "ok", "id": rid, "owner": owner, "until_ms": until, "lease_ms": lease})
                        break
                    if now() + 50 > give_up:
                        send({"type": "not-acquired", "id": rid})
                        break
                    time.sleep(0.05)
            elif req["type"] == "release":
                if r.cmd("EVAL", RELEASE, 1, key, req["owner"]) == 1:
                    send({"type": "ok", "id": rid})
                else:
                    send({"type": "not-held", "id": rid})
            else:
                send({"type": "error", "id": rid, "message": "unknown request " + req["type"]})
        except Exception as e:  # the outcome is unknown
            send({"type": "error", "id": rid, "message": str(e)})
            return


if __name__ == "__main__":
    main()
