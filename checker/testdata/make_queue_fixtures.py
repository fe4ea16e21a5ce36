# make_queue_fixtures.py writes the hand-made queue fixtures of this
# directory (queue-<name>.jsonl, format version 5, with the task table
# record) and what the checkers must conclude about each (queue-<name>.expect:
# the safety verdict, exactly the safety anomaly kinds, exactly the
# liveness anomaly kinds, and the ops of each anomaly).
# Regenerate with: python3 checker/testdata/make_queue_fixtures.py
import json, os
MS = 1_000_000
os.chdir(os.path.dirname(os.path.abspath(__file__)))

def tasks(*ts):
    out = []
    for t in ts:
        d = {"task": t[0], "queue": t[1]}
        if len(t) > 2: d["budget"] = t[2]
        out.append(d)
    return out

def fx(name, table, rows, safety, live, claims=()):
    """rows: (ms, process, type, f, fields); process -1 is the nemesis."""
    lines = [{"index": 0, "time": 0, "process": -1, "type": "info", "f": "history",
              "value": {"format": "jepsen-lite", "version": 5}},
             {"index": 1, "time": 0, "process": -1, "type": "info", "f": "tasks", "value": table}]
    for r in rows:
        t, p, typ, f = r[:4]
        extra = r[4] if len(r) > 4 else {}
        o = {"index": len(lines), "time": int(round(t*MS)), "process": p}
        if p != -1: o["client"] = p % 3 if p != 9 else 9
        o["type"] = typ; o["f"] = f
        for k in ["key", "token", "value", "error"]:
            if k in extra: o[k] = extra[k]
        lines.append(o)
    open("queue-"+name+".jsonl", "w").write("".join(json.dumps(o, separators=(",", ":"))+"\n" for o in lines))
    exp = "verdict: %s\nanomalies: %s\nliveness: %s\n" % ("invalid" if safety else "valid", " ".join(sorted(safety)), " ".join(sorted(live)))
    for c in claims: exp += c + "\n"
    open("queue-"+name+".expect", "w").write(exp)

def entry(x):
    """A capture's entry: a task id, or (id, the budget left after it)."""
    if isinstance(x, tuple):
        return {"task": x[0], "token": 1, "budget": x[1]}
    return {"task": x, "token": 1}

def cap(t, p, q, limit, got, dur=2, typ="ok"):
    """A capture of queue q by p from t to t+dur ms returning the tasks got."""
    rows = [(t, p, "invoke", "capture", {"key": q, "value": limit})]
    if typ == "ok":
        rows.append((t+dur, p, "ok", "capture", {"key": q, "value": [entry(x) for x in got]}))
    elif typ is not None:
        rows.append((t+dur, p, typ, "capture", {"key": q, "error": "timeout"}))
    return rows

def st(t, p, task, status="done", dur=2, typ="ok"):
    rows = [(t, p, "invoke", "set-status", {"key": task, "value": status})]
    if typ is not None:
        rows.append((t+dur, p, typ, "set-status", {"key": task}))
    return rows

def reap(t, got, dur=2, p=9, typ="ok", timeout=500):
    """A reaper pass with the timeout in ms (None: the invoke gives none)."""
    rows = [(t, p, "invoke", "reap", {} if timeout is None else {"value": timeout*MS})]
    if typ == "ok":
        rows.append((t+dur, p, "ok", "reap", {"value": got}))
    elif typ is not None:
        rows.append((t+dur, p, typ, "reap", {"error": "timeout"}))
    return rows

def srt(*parts):
    rows = [r for p in parts for r in p]
    return sorted(rows, key=lambda r: r[0])

T2 = tasks(("t1", "q0", 3), ("t2", "q0", 3))

# Two overlapping captures return t1: the seed's race.
fx("double-capture", T2, srt(cap(10, 0, "q0", 2, ["t1", "t2"], dur=10), cap(12, 1, "q0", 2, ["t1"], dur=4),
   st(30, 0, "t1"), st(40, 0, "t2"), st(50, 1, "t1")),
   ["double-capture"], [],
   ["ops: double-capture 3 4 2 5 10", "says: double-capture worker 0 captured task t1 at 0.020s while worker 1 held it since its capture at 0.016s"])
# The holder gives t1 up (set-status invoked) before the other capture returns it.
fx("handover-at-set-status", T2, srt(cap(10, 0, "q0", 2, ["t1", "t2"]), st(20, 0, "t1", dur=10),
   cap(25, 1, "q0", 1, ["t1"]), st(40, 1, "t1"), st(50, 0, "t2")), [], [])
# A set-status that failed gives nothing up: the next capture of t1 is a double capture.
fx("failed-set-status-keeps-hold", T2, srt(cap(10, 0, "q0", 2, ["t1", "t2"]), st(20, 0, "t1", typ="fail"),
   cap(30, 1, "q0", 1, ["t1"]), st(40, 1, "t1"), st(50, 0, "t2")), ["double-capture"], [])
# A crashed holder still holds t1 in the service: a capture of it by another is a double capture.
fx("capture-from-crashed-holder", T2, srt(cap(10, 0, "q0", 2, ["t1", "t2"]), st(20, 0, "t2"), cap(30, 0, "q0", 1, [], typ="info"),
   cap(40, 3, "q0", 1, ["t1"]), st(50, 3, "t1")), ["double-capture"], [])
# Budget 1: t1 is captured twice.
T1 = tasks(("t1", "q0", 1))
fx("budget-overspent", T1, srt(cap(10, 0, "q0", 1, ["t1"]), st(20, 0, "t1", "failed"), cap(30, 1, "q0", 1, ["t1"]), st(40, 1, "t1")),
   ["budget-overspent"], [],
   ["ops: budget-overspent 1 6 7", "says: budget-overspent task t1 has a budget of 1 captures in the task table, but it was captured 2 times"])
# Budget 2, captured twice: within it.
fx("budget-spent-exactly", tasks(("t1", "q0", 2)), srt(cap(10, 0, "q0", 1, ["t1"]), st(20, 0, "t1", "failed"), cap(30, 1, "q0", 1, ["t1"]), st(40, 1, "t1")), [], [])
# A capture of q0 returns t2 of q1; once t2 is done again, a capture of q1 passes it over.
fx("cross-queue", tasks(("t1", "q0"), ("t2", "q1")), srt(cap(10, 0, "q0", 2, ["t1", "t2"]), st(20, 0, "t1"), st(30, 0, "t2"), cap(40, 1, "q1", 1, [])),
   ["cross-queue"], ["lost-task"],
   ["ops: cross-queue 1 2 3", "says: cross-queue worker 0's capture of queue q0 returned task t2 at 0.012s, which is of queue q1, as the task table says"])
# The reaper sets t1 back after worker 0's capture; worker 1 captures it; worker 0's late done overwrites worker 1's hold.
fx("stale-status", tasks(("t1", "q0")), srt(cap(10, 0, "q0", 1, ["t1"]), reap(100, ["t1"]), cap(110, 1, "q0", 1, ["t1"]),
   st(120, 0, "t1"), st(150, 1, "t1")),
   ["stale-status"], [],
   ["ops: stale-status 2 3 4 5 6 7 8 9", "says: stale-status worker 0 set task t1 to done at 0.122s, although a reaper pass had set it back at 0.102s after worker 0's capture at 0.012s, and worker 1 had captured it again at 0.112s and still held it"])
# The same, but worker 1 set its status before worker 0's late done was invoked: nothing of a newer capture is overwritten.
fx("late-status-after-new-holder-done", tasks(("t1", "q0")), srt(cap(10, 0, "q0", 1, ["t1"]), reap(100, ["t1"]), cap(110, 1, "q0", 1, ["t1"]),
   st(115, 1, "t1"), st(120, 0, "t1")), [], [])
# The reaper frees a crashed holder's task and another worker finishes it.
fx("reaped-then-recaptured", tasks(("t1", "q0")), srt(cap(10, 0, "q0", 1, ["t1"]), cap(20, 0, "q0", 1, [], typ="info"), reap(100, ["t1"]),
   cap(110, 3, "q0", 1, ["t1"]), st(120, 3, "t1")), [], [])
# The holder crashes and no reaper runs: t1 is lost in progress.
fx("lost-task-crashed-holder", tasks(("t1", "q0")), srt(cap(10, 0, "q0", 1, ["t1"]), cap(20, 0, "q0", 1, [], typ="info"), cap(30, 3, "q0", 1, []),
   cap(200, 3, "q0", 1, [])), [], ["lost-task"],
   ["ops: lost-task 2 3 5", "says: lost-task task t1 stayed in progress from worker 0's capture at 0.012s to the end: its process crashed at 0.022s"])
# The holder crashes, and a reaper pass comes after, when its timeout (500ms) has passed since the capture, and
# returns without t1: it did not set t1 back, and nothing else came to: lost.
fx("lost-task-reap-returned-without-it", tasks(("t1", "q0")), srt(cap(10, 0, "q0", 1, ["t1"]), cap(20, 0, "q0", 1, [], typ="info"), reap(600, [])), [], ["lost-task"],
   ["ops: lost-task 2 3 5", "says: lost-task task t1 stayed in progress from worker 0's capture at 0.012s to the end: its process crashed at 0.022s without setting its status, and no set-status or reaper pass freed it after"])
# The holder crashes, and a reaper pass of unknown outcome comes after: it may have set t1 back, not lost.
fx("crashed-holder-unknown-reap", tasks(("t1", "q0")), srt(cap(10, 0, "q0", 1, ["t1"]), cap(20, 0, "q0", 1, [], typ="info"), reap(600, [], typ="info")), [], [])
# The holder crashes; the only reaper pass after the crash comes before its timeout has passed since the capture: lost.
fx("lost-task-reap-before-timeout", tasks(("t1", "q0")), srt(cap(10, 0, "q0", 1, ["t1"]), cap(20, 0, "q0", 1, [], typ="info"), reap(100, [])), [], ["lost-task"],
   ["ops: lost-task 2 3 5", "says: lost-task task t1 stayed in progress from worker 0's capture at 0.012s to the end: its process crashed at 0.022s without setting its status, and no set-status or reaper pass freed it after"])
# The reaper pass completes exactly its timeout after the capture's invoke (10ms + 500ms), and returns without t1: lost.
fx("lost-task-reap-at-timeout-returned-without-it", tasks(("t1", "q0")), srt(cap(10, 0, "q0", 1, ["t1"]), cap(20, 0, "q0", 1, [], typ="info"), reap(505, [], dur=5)), [], ["lost-task"],
   ["ops: lost-task 2 3 5"])
# The reaper pass completes 1ms before its timeout has passed since the capture's invoke: it could not have freed the task, lost.
fx("lost-task-reap-completes-before-timeout", tasks(("t1", "q0")), srt(cap(10, 0, "q0", 1, ["t1"]), cap(20, 0, "q0", 1, [], typ="info"), reap(504, [], dur=5)), [], ["lost-task"],
   ["ops: lost-task 2 3 5"])
# A reaper pass whose invoke gives no timeout returns without t1: lost.
fx("lost-task-reap-without-timeout-returned-without-it", tasks(("t1", "q0")), srt(cap(10, 0, "q0", 1, ["t1"]), cap(20, 0, "q0", 1, [], typ="info"), reap(100, [], timeout=None)), [], ["lost-task"],
   ["ops: lost-task 2 3 5"])
# Worker 0's set-status of t1 is cut off and crashes its process; the reaper sets t1 back and worker 1 captures it;
# the cut-off done then takes effect (delivered late) and worker 2 captures t1 while worker 1 still holds it.
fx("double-capture-after-late-status", tasks(("t1", "q0")), srt(cap(10, 0, "q0", 1, ["t1"]), st(20, 0, "t1", dur=1000, typ="info"), reap(1100, ["t1"]),
   cap(1200, 4, "q0", 1, ["t1"]), cap(1210, 5, "q0", 1, ["t1"]), st(1230, 4, "t1"), st(1240, 5, "t1")),
   ["double-capture"], [],
   ["ops: double-capture 8 9 10 11 12", "says: double-capture worker 2 captured task t1 at 1.212s while worker 1 held it since its capture at 1.202s, and did not give it up before its set-status at 1.230s; worker 0's set-status of t1 to done, invoked at 0.020s and of unknown outcome, may have taken effect after worker 1's capture and made it capturable under it"])
# The same cut-off done, but worker 2 captures t1 only after worker 1 set its status: no double capture.
fx("late-status-after-holder-gave-up", tasks(("t1", "q0")), srt(cap(10, 0, "q0", 1, ["t1"]), st(20, 0, "t1", dur=1000, typ="info"), reap(1100, ["t1"]),
   cap(1200, 4, "q0", 1, ["t1"]), st(1230, 4, "t1"), cap(1235, 5, "q0", 1, ["t1"]), st(1240, 5, "t1")), [], [])
# t2 is never captured although a capture of q0 asked for two and got one.
fx("lost-task-never-captured", T2, srt(cap(10, 0, "q0", 2, ["t1"]), st(20, 0, "t1")), [], ["lost-task"],
   ["ops: lost-task 1 2 3", "says: lost-task task t2 of queue q0 was never captured"])
# t2 is never captured although a capture of q0 asked for two and got one; a capture of q0 of unknown outcome may have
# taken it, but its process crashed and nothing came after that could have freed t2: lost whether it took t2 or not.
fx("lost-task-never-captured-unknown-capture-crashed", T2, srt(cap(10, 0, "q0", 2, ["t1"]), st(20, 0, "t1"), cap(30, 1, "q0", 1, [], typ="info")), [], ["lost-task"],
   ["ops: lost-task 1 2 3 6 7", "says: lost-task task t2 of queue q0 was never captured, although it was capturable throughout (done from the start, with budget left) and worker 0's capture of q0 at 0.012s asked for 2 tasks and got 1, or a capture of unknown outcome took it: worker 1's, invoked at 0.030s, whose process crashed at 0.032s, with nothing after that could have freed the task"])
# The same, and a reaper pass names t2 after: it may have freed t2 from the crashed capture, not lost.
fx("never-captured-unknown-capture-then-reaped", T2, srt(cap(10, 0, "q0", 2, ["t1"]), st(20, 0, "t1"), cap(30, 1, "q0", 1, [], typ="info"), reap(600, ["t2"])), [], [])
# The same with the capture of unknown outcome pending at the end: its process may still finish t2, not lost.
fx("never-captured-pending-capture", T2, srt(cap(10, 0, "q0", 2, ["t1"]), st(20, 0, "t1"), cap(30, 1, "q0", 1, [], typ=None)), [], [])
# t2 has no budget left (0): not capturable, so not lost.
fx("no-budget-not-lost", tasks(("t1", "q0", 1), ("t2", "q0", 0)), srt(cap(10, 0, "q0", 2, ["t1"]), st(20, 0, "t1")), [], [])
# A reaper pass that overlaps worker 0's capture may have set t1 back after it: worker 1's capture is no double capture.
fx("reap-overlapping-capture-ends-hold", tasks(("t1", "q0")), srt(cap(10, 0, "q0", 1, ["t1"], dur=10), reap(15, ["t1"], dur=10),
   cap(30, 1, "q0", 1, ["t1"]), st(40, 1, "t1"), st(50, 0, "t1", typ="fail")), [], [])
# A reaper pass that completed before worker 0's capture was invoked set back an earlier hold, not worker 0's.
fx("reap-before-capture-ends-nothing", tasks(("t1", "q0")), srt(reap(5, ["t1"], dur=3), cap(10, 0, "q0", 1, ["t1"]),
   cap(30, 1, "q0", 1, ["t1"]), st(40, 1, "t1"), st(50, 0, "t1")), ["double-capture"], [])

# The SQL seed's budget filter on the outer update: t1 is done again with budget left after worker 0's capture,
# and worker 1's capture of q0, invoked after the set-status returned, gets nothing.
TB = tasks(("t1", "q0", 3))
fx("lost-task-passed-over-after-done", TB, srt(cap(10, 0, "q0", 1, [("t1", 2)]), st(20, 0, "t1"), cap(30, 1, "q0", 1, []),
   cap(40, 1, "q0", 1, [])), [], ["lost-task"],
   ["ops: lost-task 2 3 4 5 6 7",
    "says: lost-task task t1, last captured by worker 0 at 0.012s with 2 captures of budget left, was set done by worker 0 at 0.022s, and worker 1's capture of q0 at 0.032s returned 0 of 1 tasks; no capture took it to the end"])
# The same after a set-status to failed, by another worker than the capture's.
fx("lost-task-passed-over-after-failed", TB, srt(cap(10, 0, "q0", 1, [("t1", 1)]), st(20, 2, "t1", "failed"), cap(30, 1, "q0", 2, [])),
   [], ["lost-task"],
   ["ops: lost-task 2 3 4 5 6 7",
    "says: lost-task task t1, last captured by worker 0 at 0.012s with 1 capture of budget left, was set failed by worker 2 at 0.022s, and worker 1's capture of q0 at 0.032s returned 0 of 2 tasks"])
# A task the task table gives no budget, passed over once done again.
fx("lost-task-passed-over-without-budget", tasks(("t1", "q0")), srt(cap(10, 0, "q0", 1, ["t1"]), st(20, 0, "t1"), cap(30, 1, "q0", 1, [])),
   [], ["lost-task"],
   ["ops: lost-task 2 3 4 5 6 7", "says: lost-task task t1, last captured by worker 0 at 0.012s (the task table gives it no budget), was set done"])
# The last capture left t1 no budget (0): not capturable once done, so not lost.
fx("passed-over-without-budget-left", TB, srt(cap(10, 0, "q0", 1, [("t1", 0)]), st(20, 0, "t1"), cap(30, 1, "q0", 1, [])), [], [])
# The task table gives t1 a budget but the captures do not say what is left of it: not judged.
fx("passed-over-budget-unknown", TB, srt(cap(10, 0, "q0", 1, ["t1"]), st(20, 0, "t1"), cap(30, 1, "q0", 1, [])), [], [])
# A capture passes t1 over, but a later one takes it, and it is done with no capture after: not lost.
fx("passed-over-then-captured", TB, srt(cap(10, 0, "q0", 1, [("t1", 2)]), st(20, 0, "t1"), cap(30, 1, "q0", 1, []),
   cap(40, 2, "q0", 1, [("t1", 1)]), st(50, 2, "t1")), [], [])
# A capture of q0 of unknown outcome after the set-status may have taken t1, but its process crashed and nothing
# came after that could have freed t1: lost whether it took t1 or not.
fx("lost-task-passed-over-unknown-capture-crashed", TB, srt(cap(10, 0, "q0", 1, [("t1", 2)]), st(20, 0, "t1"), cap(30, 1, "q0", 1, [], typ="info"),
   cap(40, 4, "q0", 1, [])), [], ["lost-task"],
   ["ops: lost-task 2 3 4 5 8 9 6 7", "says: lost-task or a capture of unknown outcome took it: worker 1's, invoked at 0.030s, whose process crashed at 0.032s, with nothing after that could have freed the task"])
# The same, and a reaper pass of unknown outcome comes after: it may have freed t1 from the crashed capture, not lost.
fx("passed-over-unknown-capture-then-unknown-reap", TB, srt(cap(10, 0, "q0", 1, [("t1", 2)]), st(20, 0, "t1"), cap(30, 1, "q0", 1, [], typ="info"),
   cap(40, 4, "q0", 1, []), reap(600, [], typ="info")), [], [])
# A capture of q0 pending at the end may have taken t1: not lost.
fx("passed-over-pending-capture", TB, srt(cap(10, 0, "q0", 1, [("t1", 2)]), st(20, 0, "t1"), cap(30, 1, "q0", 1, []),
   cap(40, 2, "q0", 1, [], typ=None)), [], [])
# A capture of q0 of unknown outcome that returned while the set-status was under way may have taken t1
# before or after the status took effect; its process crashed and nothing came after its invoke that could have freed t1:
# lost whichever way.
fx("lost-task-passed-over-unknown-capture-during-status", TB, srt(cap(10, 0, "q0", 1, [("t1", 2)]), st(20, 0, "t1", dur=10), cap(22, 1, "q0", 1, [], typ="info", dur=4),
   cap(40, 4, "q0", 1, [])), [], ["lost-task"])
# The only short capture was invoked before the set-status returned: it may have run before the status took effect.
fx("passed-over-capture-before-status-returned", TB, srt(cap(10, 0, "q0", 1, [("t1", 2)]), st(20, 0, "t1", dur=10), cap(25, 1, "q0", 1, [], dur=10)), [], [])
# Two racing captures of t1 return its budget out of order (0, then 1, as the SQL seed's race does): the least, 0,
# is what is left, so t1 done again is not capturable: not lost (but a double capture).
fx("passed-over-budgets-out-of-order", TB, srt(cap(10, 0, "q0", 1, [("t1", 2)]), st(14, 0, "t1"), cap(20, 1, "q0", 1, [("t1", 0)], dur=10),
   cap(22, 2, "q0", 1, [("t1", 1)], dur=10), st(40, 1, "t1"), st(50, 2, "t1"), cap(60, 0, "q0", 1, [])), ["double-capture"], [])
# A reaper pass sets a task back at most once. A pass of unknown outcome is the only op that could end worker 0's hold
# of t1 before worker 1's capture of it; worker 0's set-status of t1 then returns ok while worker 1 still holds it.
# Had the pass set t1 back between the captures, worker 0's status was stale; had it not, worker 1's capture was a
# double capture: reported as the double capture, naming the pass.
T1 = tasks(("t1", "q0"))
fx("double-capture-or-stale-after-unknown-reap", T1, srt(cap(10, 0, "q0", 1, ["t1"]), reap(100, [], typ="info"), cap(110, 1, "q0", 1, ["t1"]),
   st(120, 0, "t1"), st(150, 1, "t1")), ["double-capture"], [],
   ["ops: double-capture 2 3 6 7 4 5", "says: double-capture worker 1 captured task t1 at 0.112s while worker 0 held it since its capture at 0.012s",
    "says: double-capture the one invoked at 0.100s, of unknown outcome, whether or not it took effect"])
# The same without worker 0's late set-status: the pass may have set t1 back between the captures, valid.
fx("unknown-reap-between-captures-holder-gone", T1, srt(cap(10, 0, "q0", 1, ["t1"]), reap(100, [], typ="info"), cap(110, 1, "q0", 1, ["t1"]),
   st(150, 1, "t1")), [], [])
# The same with worker 0's late set-status after worker 1 gave t1 up: no newer hold for it to overwrite, valid.
fx("unknown-reap-late-status-after-newer-hold-ended", T1, srt(cap(10, 0, "q0", 1, ["t1"]), reap(100, [], typ="info"), cap(110, 1, "q0", 1, ["t1"]),
   st(115, 1, "t1"), st(120, 0, "t1")), [], [])
# One reaper pass ok naming t1 once overlaps three captures of t1 by three workers: it set t1 back once, so whichever
# gap between two captures it fell in, the other is a double capture. The gaps up to the second cannot both be
# filled: the anomaly names the second.
fx("double-capture-one-reap-two-gaps", T1, srt(reap(10, ["t1"], dur=40), cap(20, 0, "q0", 1, ["t1"]), cap(30, 1, "q0", 1, ["t1"]),
   cap(40, 2, "q0", 1, ["t1"]), st(60, 2, "t1")), ["double-capture"], [],
   ["ops: double-capture 5 6 7 8 2 9", "says: double-capture worker 2 captured task t1 at 0.042s while worker 1 held it since its capture at 0.032s",
    "says: double-capture the one invoked at 0.010s, naming it once"])
# The same with a second reaper pass naming t1: one set-back for each gap, valid.
fx("two-reaps-two-gaps", T1, srt(reap(10, ["t1"], dur=40), reap(15, ["t1"], dur=40, p=8), cap(20, 0, "q0", 1, ["t1"]), cap(30, 1, "q0", 1, ["t1"]),
   cap(40, 2, "q0", 1, ["t1"]), st(60, 2, "t1")), [], [])
