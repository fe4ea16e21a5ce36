# make_liveness_fixtures.py writes the hand-made liveness fixtures of this
# directory (liveness-<name>.jsonl, format version 3 with the nemesis's
# availability records) and what the checkers must conclude about each
# (liveness-<name>.expect: the safety verdict, exactly the safety anomaly
# kinds, and on a "liveness:" line exactly the liveness anomaly kinds).
# Regenerate with: python3 checker/testdata/make_liveness_fixtures.py
# make_lease_liveness_fixtures.py writes its fixtures with fx and the op
# makers of this file.
import json, os
MS = 1_000_000
os.chdir(os.path.dirname(os.path.abspath(__file__)))

def fx(name, live, rows, version=3, claims=()):
    """Writes liveness-<name>.jsonl (format version; version 1 has no
    history record) and liveness-<name>.expect: valid, no safety anomaly,
    exactly the liveness kinds live, and the claims about what the
    anomalies say (fixtures_test.go's "says:" lines)."""
    lines = []
    if version > 1:
        lines.append(json.dumps({"index": 0, "time": 0, "process": -1, "type": "info", "f": "history",
                                 "value": {"format": "jepsen-lite", "version": version}}, separators=(",", ":")))
    rows = sorted(rows, key=lambda r: r[0])
    for r in rows:
        t, p, typ, f = r[:4]
        extra = r[4] if len(r) > 4 else {}
        o = {"index": len(lines), "time": int(round(t*MS)), "process": p}
        if p != -1: o["client"] = p % 4
        o["type"] = typ; o["f"] = f
        for k in ["key", "ttl", "lease", "session", "value", "error"]:
            if k in extra: o[k] = extra[k]
        lines.append(json.dumps(o, separators=(",", ":")))
    open("liveness-"+name+".jsonl", "w").write("\n".join(lines)+"\n")
    open("liveness-"+name+".expect", "w").write("verdict: valid\nanomalies: \nliveness: %s\n" % " ".join(sorted(live))
                                                + "".join(c+"\n" for c in claims))

def acquire(t, p, outcome, lease=None, ttl=1000):
    """An acquire of k by p from t to t+5 ms; lease in ms (-1: never)."""
    ok = {"key": "k"}
    if outcome == "ok" and lease is not None: ok["lease"] = lease*MS if lease >= 0 else -1
    if outcome == "info": ok["error"] = "timeout"
    return [(t, p, "invoke", "acquire", {"key": "k", "ttl": ttl*MS}), (t+5, p, outcome, "acquire", ok)]

def session_acquire(t, p, outcome, lease=2000, ttl=2000, took=5):
    """An acquire of k by p of a session lock with a finite lease (a
    ZooKeeper node, an etcd session lease), from t to t+took ms."""
    ok = {"key": "k"}
    if outcome == "ok": ok.update(lease=lease*MS, session=True)
    if outcome == "info": ok["error"] = "timeout"
    return [(t, p, "invoke", "acquire", {"key": "k", "ttl": ttl*MS}), (t+took, p, outcome, "acquire", ok)]

def timeouts(starts, took=1000):
    """Acquires refused after waiting took ms, each (t, p) invoked at t by p."""
    return [r for t, p in starts for r in [(t, p, "invoke", "acquire", {"key": "k", "ttl": 1000*MS}),
                                            (t+took, p, "fail", "acquire", {"key": "k", "error": "timeout"})]]

def release(t, p):
    return [(t, p, "invoke", "release", {"key": "k"}), (t+5, p, "ok", "release", {"key": "k"})]

def crash(t, p):
    """p crashes: a write of unknown outcome."""
    return [(t, p, "invoke", "write", {"key": "k", "value": 1}), (t+5, p, "info", "write", {"key": "k", "error": "timeout"})]

def refusals(t0, t1, procs=(1, 2, 3), acquire=acquire):
    """Refused acquires every 100 ms from t0 to t1, by procs in turn."""
    out, i = [], 0
    for t in range(t0, t1, 100):
        out += acquire(t, procs[i % len(procs)], "fail")
        i += 1
    return out

def avail(t, nodes, down):
    return (t, -1, "info", "availability", {"value": {"nodes": nodes, "down": down}})

def nemesis(t, f, value, typ="info", error=None):
    extra = {"value": value}
    if error: extra["error"] = error
    return (t, -1, typ, f, extra)

if __name__ == "__main__":
    # Every node up, the holder of a lock that never expires crashed: nobody can
    # take it again. Stuck, and unavailable (a majority is up) from the crash on.
    fx("holder-crashed-never-expires", ["stuck", "unavailable"],
       acquire(0, 0, "ok", lease=-1) + crash(10, 0) + refusals(100, 2500))

    # Every node up and nobody holds the lock, yet it is refused for 3 s; then
    # it is granted again: unavailable between the grants, not stuck.
    fx("refused-3s-no-holder", ["unavailable"],
       acquire(0, 0, "ok", lease=1000) + release(10, 0) + refusals(100, 3100)
       + acquire(3200, 1, "ok", lease=1000) + release(3210, 1))

    # A cut of the one node from 1 s to 4 s; worker 0's acquire sent at 1.5 s
    # times out (unknown outcome). TCP holds its SET and delivers it at its
    # first retransmission after the heal, by 4 s + (4 s - 1.5 s) + 1 s =
    # 7.5 s at the latest, when it takes the lock for its ttl: the refusals
    # from 6 s to 7.5 s may be that, and are excused (docs/history.md §4.5,
    # "Requests held back by a cut").
    fx("unknown-acquire-held-by-cut", [],
       acquire(0, 0, "ok", lease=1000) + release(10, 0)
       + [avail(1000, 1, ["n1"]), nemesis(1001, "partition", {"nodes": ["n1"]})]
       + acquire(1500, 4, "info")
       + [avail(4000, 1, []), nemesis(4001, "heal", {"nodes": ["n1"]})]
       + refusals(6000, 7500) + acquire(7600, 5, "ok", lease=1000) + release(7610, 5))

    # The same cut, with refusals from 9 s to 10.5 s: past the latest arrival
    # of the held acquire (7.502 s) plus its ttl (1 s), nothing excuses them.
    fx("held-acquire-excuse-ends", ["unavailable"],
       acquire(0, 0, "ok", lease=1000) + release(10, 0)
       + [avail(1000, 1, ["n1"]), nemesis(1001, "partition", {"nodes": ["n1"]})]
       + acquire(1500, 4, "info")
       + [avail(4000, 1, []), nemesis(4001, "heal", {"nodes": ["n1"]})]
       + refusals(9000, 10500) + acquire(10600, 5, "ok", lease=1000) + release(10610, 5))

    # The same first cut, and a second one from 6 s to 8 s, which begins
    # before the held acquire's latest arrival after the first (7.502 s):
    # it may hold the request again, until 8.001 s + (8.001 s - 1.5 s) + 1 s
    # = 15.502 s. The refusals from 10 s to 11.5 s, after the majority came
    # back (8 s) and settled (9 s), are still excused.
    fx("held-acquire-held-again-by-second-cut", [],
       acquire(0, 0, "ok", lease=1000) + release(10, 0)
       + [avail(1000, 1, ["n1"]), nemesis(1001, "partition", {"nodes": ["n1"]})]
       + acquire(1500, 4, "info")
       + [avail(4000, 1, []), nemesis(4001, "heal", {"nodes": ["n1"]})]
       + [avail(6000, 1, ["n1"]), nemesis(6001, "partition", {"nodes": ["n1"]})]
       + [avail(8000, 1, []), nemesis(8001, "heal", {"nodes": ["n1"]})]
       + refusals(10000, 11500) + acquire(11600, 5, "ok", lease=1000) + release(11610, 5))

    # Worker 0 holds the lock (1 s lease) and renews it at 0.6 s, during a cut
    # of the one node from 0.5 s to 3.5 s; the renewal times out (unknown
    # outcome). TCP holds it until the first retransmission after the heal,
    # by 3.501 s + (3.501 s - 0.6 s) + 1 s = 7.402 s, when it may set the
    # lease to run 1 s more: the refusals from 5 s to 8 s are excused.
    fx("renewal-held-by-cut", [],
       acquire(0, 0, "ok", lease=1000)
       + [avail(500, 1, ["n1"]), nemesis(501, "partition", {"nodes": ["n1"]}),
          (600, 0, "invoke", "renew", {"key": "k", "ttl": 1000*MS}),
          (1100, 0, "info", "renew", {"key": "k", "error": "timeout"}),
          avail(3500, 1, []), nemesis(3501, "heal", {"nodes": ["n1"]})]
       + refusals(5000, 8000) + acquire(8500, 5, "ok", lease=1000) + release(8510, 5))

    # Redlock over 5 masters, 3 of them killed during the refusals: no majority,
    # so the refusals prove nothing. After the start, the lock is granted again
    # within its lease.
    fx("redlock-majority-killed", [],
       acquire(0, 0, "ok", lease=1000) + release(10, 0)
       + [avail(95, 5, ["n1", "n2", "n3"]), nemesis(96, "kill", {"nodes": ["n1", "n2", "n3"]})]
       + refusals(100, 3100)
       + [avail(3150, 5, []), nemesis(3151, "start", {"nodes": ["n1", "n2", "n3"]})]
       + acquire(3300, 1, "ok", lease=1000) + release(3310, 1))

    # A live holder's lease of 5 s excuses the refusals of the others; it then
    # releases and the next worker takes the lock.
    fx("refusals-excused-by-live-lease", [],
       acquire(0, 0, "ok", lease=5000, ttl=5000) + refusals(100, 3100) + release(3200, 0)
       + acquire(3300, 1, "ok", lease=1000) + release(3310, 1))

    # Refused for less than the bound (0.8 s), with nobody holding the lock.
    fx("refused-shorter-than-window", [],
       acquire(0, 0, "ok", lease=1000) + release(10, 0) + refusals(100, 900)
       + acquire(950, 1, "ok", lease=1000) + release(960, 1))

    # 3 of 5 nodes killed at 1 s and started at 2 s; the longest lease of k is
    # 2 s, so the window may begin only at 4 s, when a lease granted before the
    # kill has run out for sure; the lock is granted again at 6.5 s.
    fx("kill-then-start-window-after-lease", ["unavailable"],
       acquire(0, 0, "ok", lease=2000, ttl=2000) + release(10, 0) + refusals(200, 6400)
       + [avail(1000, 5, ["n1", "n2", "n3"]), nemesis(1001, "kill", {"nodes": ["n1", "n2", "n3"]}),
          avail(2000, 5, []), nemesis(2001, "start", {"nodes": ["n1", "n2", "n3"]})]
       + acquire(6500, 1, "ok", lease=2000, ttl=2000) + release(6510, 1))

    # A session lock of three ZooKeeper servers (2 s sessions). The leader n1
    # is killed at 1 s and started at 6 s; worker 0's acquire at 1.1 s times
    # out (unknown outcome) and its process crashes. Its node lives until
    # the ensemble expires its session, and while a node is down the
    # ensemble may have had no leader to do so: a new leader gives the
    # session a full timeout, so it may live until 6 s + 2 s = 8 s
    # (docs/history.md §4.5, "Sessions kept by a leader"). The refusals up to
    # then are excused, and the lock is granted again at 8.1 s.
    fx("session-unknown-acquire-outlives-leaderless-ensemble", [],
       session_acquire(0, 0, "ok") + release(10, 0)
       + [avail(1000, 3, ["n1"]), nemesis(1001, "kill", {"nodes": ["n1"]})]
       + session_acquire(1100, 4, "info")
       + refusals(1200, 7900)
       + [avail(6000, 3, []), nemesis(6001, "start", {"nodes": ["n1"]})]
       + session_acquire(8100, 5, "ok") + release(8110, 5))

    # The same, with the refusals going on to 10 s and no grant: the session
    # of the acquire in doubt may live until 8 s, no later; the lock is
    # unavailable (and stuck) from then on, not from its completion plus the
    # session timeout (3.105 s).
    fx("session-lease-ends-after-ensemble-is-back", ["stuck", "unavailable"],
       session_acquire(0, 0, "ok") + release(10, 0)
       + [avail(1000, 3, ["n1"]), nemesis(1001, "kill", {"nodes": ["n1"]})]
       + session_acquire(1100, 4, "info")
       + refusals(1200, 10000)
       + [avail(6000, 3, []), nemesis(6001, "start", {"nodes": ["n1"]})],
       claims=["says: unavailable k unavailable from 8.000s to 9.905s"])

    # One of three etcd members paused from 0.6 s to 3.7 s (1 s sessions),
    # nobody holding the lock. Worker 0's waiting acquire, asked at 0.5 s, is
    # granted only after the resume (3.8 s); every other call times out
    # meanwhile. A grant excuses no moment of a down stretch before its
    # return (docs/history.md §4.5): the lock was unavailable from 0.6 s to
    # 3.7 s, with two of three members up.
    fx("waiting-grant-after-member-pause", ["unavailable"],
       session_acquire(0, 0, "ok", lease=1000, ttl=1000) + release(10, 0)
       + session_acquire(500, 4, "ok", lease=1000, ttl=1000, took=3300) + release(3900, 4)
       + [avail(600, 3, ["n1"]), nemesis(601, "pause", {"nodes": ["n1"]})]
       + timeouts([(700, 1), (1000, 2), (1300, 3), (1700, 1), (2000, 2), (2300, 3), (2700, 1)])
       + [avail(3700, 3, []), nemesis(3701, "resume", {"nodes": ["n1"]})]
       + session_acquire(4000, 5, "ok", lease=1000, ttl=1000) + release(4010, 5),
       claims=["says: unavailable k unavailable from 0.600s to 3.700s"])

    # The same pause, but worker 0 holds the lock (a 5 s session lease) until
    # its release at 3.75 s, and the waiter takes it at once: every refusal
    # had a holder that rightly kept the lock.
    fx("waiting-grant-behind-holder-during-member-pause", [],
       session_acquire(0, 0, "ok", lease=5000, ttl=5000) + release(3750, 0)
       + session_acquire(500, 4, "ok", lease=1000, ttl=1000, took=3260) + release(3900, 4)
       + [avail(600, 3, ["n1"]), nemesis(601, "pause", {"nodes": ["n1"]})]
       + timeouts([(700, 1), (1000, 2), (1300, 3), (1700, 1), (2000, 2), (2300, 3), (2700, 1)])
       + [avail(3700, 3, []), nemesis(3701, "resume", {"nodes": ["n1"]})]
       + session_acquire(4000, 5, "ok", lease=1000, ttl=1000) + release(4010, 5))
