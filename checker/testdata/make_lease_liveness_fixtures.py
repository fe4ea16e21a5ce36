# make_lease_liveness_fixtures.py writes the hand-made fixtures of the
# liveness rules founded on the lease model (docs/history.md §4.5 and §4.6):
# liveness-<name>.jsonl (format version 4, or version 1 where the fixture is
# about a history without `lease`) and liveness-<name>.expect (the safety
# verdict, exactly the safety anomaly kinds, and on a "liveness:" line
# exactly the liveness anomaly kinds). Each pins one rule that an earlier
# statement of §4.5/§4.6 got wrong.
# Regenerate with: python3 checker/testdata/make_lease_liveness_fixtures.py
import sys
sys.dont_write_bytecode = True  # no __pycache__ in testdata
import make_liveness_fixtures as liveness
from make_liveness_fixtures import MS, crash, avail, nemesis

def fx(name, live, rows, version=4):
    liveness.fx(name, live, rows, version)

def acquire(t, p, outcome, lease=None, ttl=1000, took=5, session=None, error="held"):
    """An acquire of k by p from t to t+took ms; lease in ms (-1: never)."""
    inv = {"key": "k"}
    if ttl is not None: inv["ttl"] = ttl*MS
    done = {"key": "k"}
    if outcome == "ok" and lease is not None: done["lease"] = lease*MS if lease >= 0 else -1
    if outcome == "ok" and session: done["session"] = True
    if outcome == "info": done["error"] = "timeout"
    if outcome == "fail": done["error"] = error
    out = [(t, p, "invoke", "acquire", inv)]
    if outcome != "pending":
        out.append((t+took, p, outcome, "acquire", done))
    return out

def release(t, p, outcome="ok", error=None):
    done = {"key": "k"}
    if error: done["error"] = error
    return [(t, p, "invoke", "release", {"key": "k"}), (t+5, p, outcome, "release", done)]

def renew(t, p, outcome, ttl):
    out = [(t, p, "invoke", "renew", {"key": "k", "ttl": ttl*MS})]
    if outcome == "info":
        out.append((t+5, p, "info", "renew", {"key": "k", "error": "timeout"}))
    return out

def lease_lost(t, p):
    return [(t, p, "invoke", "lease-lost", {"key": "k"}), (t, p, "ok", "lease-lost", {"key": "k"})]

def refusals(t0, t1, procs=(1, 2, 3)):
    """Refused acquires every 100 ms from t0 to t1, by procs in turn."""
    return liveness.refusals(t0, t1, procs, acquire)

# A version 1 history (no `lease`: the ttl stands for the lease and counts
# from the grant): worker 1 waits in a blocking acquire from 0.1 s and is
# granted at 3 s, when worker 0 releases; its 2 s lease runs to 5 s, past
# the end at 4.5 s, so the refusals after the grant are excused. Counting
# the ttl from the call (2.1 s) made it stuck and unavailable.
fx("waiter-ttl-counts-from-grant", [],
   acquire(0, 0, "ok", ttl=2000) + release(2990, 0) +
   acquire(100, 1, "ok", ttl=2000, took=2905) +
   refusals(3100, 4500, procs=(2, 3, 4)), version=1)

# A renewal of unknown outcome may have extended the lease: worker 0's 1 s
# lease, renewed for 5 s at 0.8 s with no answer (info), may run to 5.8 s,
# past the end; the refusals from 1.1 s on are excused.
fx("renewal-of-unknown-outcome-extends", [],
   acquire(0, 0, "ok", lease=1000) + renew(800, 0, "info", 5000) + refusals(1100, 4000))

# The same with the renewal still pending at the end (the holder is alive
# and waiting for the answer).
fx("pending-renewal-extends", [],
   acquire(0, 0, "ok", lease=1000) + renew(800, 0, "pending", 5000) + refusals(1100, 4000))

# Three of five nodes killed at 0.5 s and never restarted: the fault is in
# force at the end and the availability record shows no majority, so the
# refusals after it say nothing about the lock. Not judged for stuck (and
# not for unavailable: no majority after 0.5 s); "the last fault plus the
# longest lease" called it stuck.
fx("kill-majority-never-restarted", [],
   acquire(0, 0, "ok", lease=1000) + release(200, 0) +
   [avail(499, 5, ["n1", "n2", "n3"]), nemesis(500, "kill", {"nodes": ["n1", "n2", "n3"]})] +
   refusals(600, 4000))

# Worker 0's session lock: its lease is lost at 0.5 s and its release is
# refused "not held" at 0.6 s, so it holds nothing from then: eight refusals
# over 5 s with nobody holding the lock are stuck and unavailable. (The live
# process's session counted as held for ever.)
fx("lease-lost-holds-nothing", ["stuck", "unavailable"],
   acquire(0, 0, "ok", lease=-1, session=True, ttl=None) + lease_lost(500, 0) +
   release(600, 0, "fail", "clients: redis-set: release k: clients: lock not held") +
   [x for i, t in enumerate(range(700, 5700, 625)) for x in acquire(t, 1 + i % 3, "fail")])

# The same without the lease-lost: a release refused "not held" alone ends
# the hold.
fx("release-refused-not-held-holds-nothing", ["stuck", "unavailable"],
   acquire(0, 0, "ok", lease=-1, session=True, ttl=None) +
   release(600, 0, "fail", "clients: lock not held") +
   [x for i, t in enumerate(range(700, 5700, 625)) for x in acquire(t, 1 + i % 3, "fail")])

# A release that the algorithm does not perform on the server (a timeout
# lock, recorded fail with another error) frees nothing: the lease runs on
# to its end at 10 s, past the end of the history, and excuses the refusals.
fx("release-no-op-lease-runs-on", [],
   acquire(0, 0, "ok", lease=10000) +
   release(600, 0, "fail", "clients: release does nothing on the server: the lock frees itself when its lease ends") +
   refusals(700, 3000))

# Three workers wait from 0.1-0.2 s while worker 0 holds the lock; it
# releases at 1 s, and all three give up at their wait bound at 2.1-2.2 s
# with the lock free: they asked in vain from the release on, so the lock is
# stuck and was unavailable. (Only acquires invoked after the release
# counted.)
fx("waiters-give-up-after-release", ["stuck", "unavailable"],
   acquire(0, 0, "ok", lease=-1) + release(1000, 0) +
   acquire(100, 1, "fail", took=2000, error="timed out waiting") +
   acquire(150, 2, "fail", took=2000, error="timed out waiting") +
   acquire(200, 3, "fail", took=2000, error="timed out waiting") +
   [(2300, 0, "invoke", "read", {"key": "k"}), (2305, 0, "ok", "read", {"key": "k", "value": 0})])

# A clock-bump the nemesis could not apply (recorded fail) was never in
# force and excuses nothing: worker 0 crashed holding a lock that never
# expires, and the refusals after it are unavailable as well as stuck. (The
# failed fault counted as in force to the end.)
fx("failed-clock-fault-excuses-nothing", ["stuck", "unavailable"],
   [nemesis(50, "clock-bump", {"nodes": ["n1"], "delta_ns": 30000000000}, typ="fail", error="etcd: cannot skew a Go server's clock")] +
   acquire(100, 0, "ok", lease=-1) + crash(200, 0) + refusals(300, 3000))

# An acquire of unknown outcome on a lock that never expires (its grants
# record lease -1) may have left the lock held for ever; its ttl, which the
# lock ignores, does not bound the excuse. Not stuck, not unavailable.
fx("info-acquire-never-expires-excuses-for-ever", [],
   acquire(0, 0, "ok", lease=-1) + release(100, 0) +
   acquire(200, 1, "info", ttl=2000) + refusals(1100, 8000, procs=(2, 3, 4)))
