# make_fixtures.py writes the hand-made fixture histories of this directory
# (<name>.jsonl) and what the checkers must conclude about each
# (<name>.expect: the verdict and exactly the anomaly kinds found, and
# where given, claims about what the anomalies name and say: see
# fixtures_test.go).
# Regenerate with: python3 checker/testdata/make_fixtures.py
import json, os
MS = 1_000_000
TTL = 5000*MS
def until(inv_ms): return inv_ms*MS + int(TTL*0.99)
files = {}
os.chdir(os.path.dirname(os.path.abspath(__file__)))
def fx(name, verdict, kinds, rows, claims=()):
    lines = []
    rows = sorted(rows, key=lambda r: r[0])
    for i, r in enumerate(rows):
        t, p, typ, f = r[:4]
        extra = r[4] if len(r) > 4 else {}
        o = {"index": i, "time": int(round(t*MS)), "process": p}
        if p != -1: o["client"] = extra.pop("client", p % 2 if p >= 0 else 0)
        o["type"] = typ; o["f"] = f
        for k in ["key","ttl","token","until","lease","session","value","applied","node","error"]:
            if k in extra: o[k] = extra[k]
        lines.append(json.dumps(o, separators=(",",":")))
    open(name+".jsonl","w").write("\n".join(lines)+"\n")
    open(name+".expect","w").write("verdict: %s\nanomalies: %s\n" % (verdict, " ".join(sorted(kinds))) + "".join(c+"\n" for c in claims))
K = {"key":"k"}
def acq(t, p, typ, **kw):
    d = dict(K); d.update(kw)
    if typ == "invoke" and "ttl" not in d and not kw.get("session"): d["ttl"] = TTL
    d.pop("session", None)
    if kw.get("zk"):  # a version 2 session lock with a lease, as ZooKeeper's
        d.pop("zk"); d.pop("ttl", None)
        if typ == "ok": d["lease"] = 2000*MS; d["session"] = True
    return (t, p, typ, "acquire", d)
def op(t, p, typ, f, **kw):
    d = dict(K); d.update(kw); return (t, p, typ, f, d)

# a plain valid run: two holders one after the other, fenced writes
fx("valid-handover", "valid", [], [
    acq(900, 0, "invoke"), acq(1000, 0, "ok", token=1, until=until(900)),
    op(1010, 0, "invoke", "read"), op(1020, 0, "ok", "read", value=0),
    op(1030, 0, "invoke", "write", token=1, value=1), op(1050, 0, "ok", "write", token=1, value=1, applied=1040*MS),
    (1055, -1, "info", "partition", {"value": {"isolate": ["n1"]}}),
    op(1060, 0, "invoke", "release", token=1), op(1070, 0, "ok", "release", token=1),
    acq(1065, 1, "invoke"), acq(1080, 1, "ok", token=2, until=until(1065)),
    op(1090, 1, "invoke", "read"), op(1100, 1, "ok", "read", value=1),
    op(1110, 1, "invoke", "write", token=2, value=2), op(1130, 1, "ok", "write", token=2, value=2, applied=1120*MS),
    op(1140, 1, "invoke", "release", token=2), op(1150, 1, "ok", "release", token=2),
    (1160, -1, "info", "heal", {}),
])
# the next holder is granted exactly at the earliest expiry of the previous lease
fx("grant-at-earliest-expiry", "valid", [], [
    acq(1000, 0, "invoke"), acq(1010, 0, "ok", token=1, until=until(1000)),
    acq(5800, 1, "invoke"), acq(1000 + 4950, 1, "ok", token=2, until=until(5800)),
    op(7000, 0, "invoke", "release", token=1), op(7010, 0, "fail", "release", token=1, error="not held"),
])
# one millisecond earlier: the service granted before the lease could have expired
fx("grant-1ms-early", "invalid", ["double-hold", "early-grant"], [
    acq(1000, 0, "invoke"), acq(1010, 0, "ok", token=1, until=until(1000)),
    acq(5800, 1, "invoke"), acq(1000 + 4949, 1, "ok", token=2, until=until(5800)),
    op(7000, 0, "invoke", "release", token=1), op(7010, 0, "fail", "release", token=1, error="not held"),
])
# two holders at once, well inside the first lease
fx("double-grant", "invalid", ["double-hold", "early-grant"], [
    acq(900, 0, "invoke"), acq(1000, 0, "ok", until=until(900)),
    acq(2900, 1, "invoke"), acq(3000, 1, "ok", until=until(2900)),
    op(3100, 1, "invoke", "release"), op(3200, 1, "ok", "release"),
    op(6000, 0, "invoke", "release"), op(6010, 0, "fail", "release", error="not held"),
])
# an acquire with unknown outcome, then another worker's acquire: fine
fx("info-acquire-then-other", "valid", [], [
    acq(1000, 0, "invoke"), acq(1500, 1, "invoke"), acq(1600, 1, "ok", token=2, until=until(1500)),
    acq(2000, 0, "info", error="timeout"),
    op(2100, 1, "invoke", "release", token=2), op(2200, 1, "ok", "release", token=2),
    acq(2300, 2, "invoke", client=0), acq(2400, 2, "ok", token=3, until=until(2300), client=0),
])
# a release with unknown outcome may have freed the lock
fx("info-release-then-other", "valid", [], [
    acq(900, 0, "invoke"), acq(1000, 0, "ok", token=1, until=until(900)),
    op(1900, 0, "invoke", "release", token=1), op(2000, 0, "info", "release", token=1, error="timeout"),
    acq(2400, 1, "invoke"), acq(2500, 1, "ok", token=2, until=until(2400)),
])
# a former holder's release fails after its lease expired and another took it
fx("failed-release-by-former-holder", "valid", [], [
    acq(900, 0, "invoke"), acq(1000, 0, "ok", token=1, until=until(900)),
    acq(6900, 1, "invoke"), acq(7000, 1, "ok", token=2, until=until(6900)),
    op(8000, 0, "invoke", "release", token=1), op(8010, 0, "fail", "release", token=1, error="not held"),
    op(8100, 1, "invoke", "release", token=2), op(8110, 1, "ok", "release", token=2),
])
# a release succeeds for a process that does not hold the lock
fx("foreign-release", "invalid", ["foreign-release"], [
    acq(900, 0, "invoke"), acq(1000, 0, "ok", until=until(900)),
    op(2000, 1, "invoke", "release"), op(2100, 1, "ok", "release"),
    op(3000, 0, "invoke", "release"), op(3100, 0, "ok", "release"),
])
# a crashed process's worker goes on under a new process id
fx("crash-then-new-process", "valid", [], [
    acq(900, 0, "invoke"), acq(1000, 0, "ok", token=1, until=until(900)),
    op(1100, 0, "invoke", "read"), op(1110, 0, "ok", "read", value=0),
    op(1400, 0, "invoke", "write", token=1, value=1), op(1500, 0, "info", "write", token=1, value=1, error="timeout"),
    acq(5900, 1, "invoke"), acq(6000, 1, "ok", token=2, until=until(5900)),
    op(6100, 1, "invoke", "read"), op(6110, 1, "ok", "read", value=1),
    op(6200, 1, "invoke", "write", token=2, value=2), op(6220, 1, "ok", "write", token=2, value=2, applied=6210*MS),
    op(6300, 1, "invoke", "release", token=2), op(6310, 1, "ok", "release", token=2),
    acq(7000, 2, "invoke", client=0), acq(7010, 2, "ok", token=3, until=until(7000), client=0),
    op(7100, 2, "invoke", "read", client=0), op(7110, 2, "ok", "read", value=2, client=0),
    op(7200, 2, "invoke", "write", token=3, value=3, client=0), op(7220, 2, "ok", "write", token=3, value=3, applied=7210*MS, client=0),
    op(7300, 2, "invoke", "release", token=3, client=0), op(7310, 2, "ok", "release", token=3, client=0),
])
# one holder writes twice with the same token
fx("same-token-twice", "valid", [], [
    acq(900, 0, "invoke"), acq(1000, 0, "ok", token=5, until=until(900)),
    op(1100, 0, "invoke", "write", token=5, value=1), op(1120, 0, "ok", "write", token=5, value=1, applied=1110*MS),
    op(1200, 0, "invoke", "write", token=5, value=2), op(1220, 0, "ok", "write", token=5, value=2, applied=1210*MS),
    op(1300, 0, "invoke", "release", token=5), op(1310, 0, "ok", "release", token=5),
])
def kleppmann(tokens, fenced):
    tk = (lambda n: {"token": n}) if tokens else (lambda n: {})
    rows = [
        acq(900, 0, "invoke"), acq(1000, 0, "ok", until=until(900), **tk(1)),
        op(1100, 0, "invoke", "read"), op(1110, 0, "ok", "read", value=0),
        acq(6900, 1, "invoke"), acq(7000, 1, "ok", until=until(6900), **tk(2)),
        op(7100, 1, "invoke", "read"), op(7110, 1, "ok", "read", value=0),
        op(7200, 1, "invoke", "write", value=1, **tk(2)), op(7220, 1, "ok", "write", value=1, applied=7210*MS, **tk(2)),
        op(7400, 0, "invoke", "write", value=1, **tk(1)),
    ]
    if fenced:
        rows.append(op(7520, 0, "fail", "write", value=1, applied=7510*MS, error="stale token", **tk(1)))
    else:
        rows.append(op(7520, 0, "ok", "write", value=1, applied=7510*MS, **tk(1)))
    rows += [op(7600, 1, "invoke", "release", **tk(2)), op(7610, 1, "ok", "release", **tk(2)),
             op(7700, 0, "invoke", "release", **tk(1)), op(7710, 0, "fail", "release", error="not held", **tk(1))]
    return rows
# Kleppmann's pause: the old holder writes after the new holder did
fx("stale-write-tokens", "invalid", ["stale-write", "lost-update"], kleppmann(True, False))
fx("stale-write-lease-order", "invalid", ["stale-write", "lost-update"], kleppmann(False, False))
fx("stale-write-rejected-by-fence", "valid", [], kleppmann(True, True))
# three acknowledged increments, the register ends at 2
fx("lost-update", "invalid", ["lost-update"], [
    acq(900, 0, "invoke"), acq(1000, 0, "ok", until=until(900)),
    op(1100, 0, "invoke", "read"), op(1110, 0, "ok", "read", value=0),
    op(1200, 0, "invoke", "write", value=1), op(1220, 0, "ok", "write", value=1, applied=1210*MS),
    op(1300, 0, "invoke", "release"), op(1310, 0, "ok", "release"),
    acq(1400, 1, "invoke"), acq(1500, 1, "ok", until=until(1400)),
    op(1600, 1, "invoke", "read"), op(1610, 1, "ok", "read", value=1),
    op(1700, 1, "invoke", "write", value=2), op(1720, 1, "ok", "write", value=2, applied=1710*MS),
    op(1800, 1, "invoke", "release"), op(1810, 1, "ok", "release"),
    acq(1900, 0, "invoke"), acq(2000, 0, "ok", until=until(1900)),
    op(2100, 0, "invoke", "read"), op(2110, 0, "ok", "read", value=1),
    op(2200, 0, "invoke", "write", value=2), op(2220, 0, "ok", "write", value=2, applied=2210*MS),
    op(2300, 0, "invoke", "release"), op(2310, 0, "ok", "release"),
])
# an unknown write that applied, then two acknowledged ones: no update lost
fx("info-write-applied", "valid", [], [
    acq(900, 0, "invoke"), acq(1000, 0, "ok", until=until(900)),
    op(1100, 0, "invoke", "read"), op(1110, 0, "ok", "read", value=0),
    op(1200, 0, "invoke", "write", value=1), op(1300, 0, "info", "write", value=1, error="timeout"),
    acq(6000, 1, "invoke"), acq(6100, 1, "ok", until=until(6000)),
    op(6200, 1, "invoke", "read"), op(6210, 1, "ok", "read", value=1),
    op(6300, 1, "invoke", "write", value=2), op(6320, 1, "ok", "write", value=2, applied=6310*MS),
    op(6400, 1, "invoke", "release"), op(6410, 1, "ok", "release"),
    acq(6500, 2, "invoke", client=0), acq(6600, 2, "ok", until=until(6500), client=0),
    op(6700, 2, "invoke", "read", client=0), op(6710, 2, "ok", "read", value=2, client=0),
    op(6800, 2, "invoke", "write", value=3, client=0), op(6820, 2, "ok", "write", value=3, applied=6810*MS, client=0),
    op(6900, 2, "invoke", "release", client=0), op(6910, 2, "ok", "release", client=0),
])
fx("token-reuse", "invalid", ["token-reuse"], [
    acq(900, 0, "invoke"), acq(1000, 0, "ok", token=3, until=until(900)),
    op(1100, 0, "invoke", "release", token=3), op(1110, 0, "ok", "release", token=3),
    acq(1200, 1, "invoke"), acq(1300, 1, "ok", token=3, until=until(1200)),
    op(1400, 1, "invoke", "release", token=3), op(1410, 1, "ok", "release", token=3),
])
fx("token-regression", "invalid", ["token-regression"], [
    acq(900, 0, "invoke"), acq(1000, 0, "ok", token=5, until=until(900)),
    op(1100, 0, "invoke", "release", token=5), op(1110, 0, "ok", "release", token=5),
    acq(1200, 1, "invoke"), acq(1300, 1, "ok", token=4, until=until(1200)),
    op(1400, 1, "invoke", "release", token=4), op(1410, 1, "ok", "release", token=4),
])
# the handover overlaps in time: the release returns after the next acquire
fx("concurrent-handover", "valid", [], [
    acq(1000, 0, "invoke"), acq(1100, 0, "ok", token=1, until=until(1000)),
    acq(1050, 1, "invoke"),
    op(2000, 0, "invoke", "release", token=1),
    acq(2050, 1, "ok", token=2, until=until(1050)),
    op(2100, 0, "ok", "release", token=1),
])
# session locks: no ttl, no until
fx("session-crash-then-other", "valid", [], [
    acq(900, 0, "invoke", session=True), acq(1000, 0, "ok", token=10),
    op(1100, 0, "invoke", "write", token=10, value=1), op(2000, 0, "info", "write", token=10, value=1, error="connection lost"),
    acq(9000, 1, "invoke", session=True), acq(10000, 1, "ok", token=11),
])
# a ZooKeeper-style session lock (lease: the 2 s session timeout): its holder
# learns at 3 s that it lost the lock; another worker is granted it at 4 s,
# after the session could have expired
fx("session-lease-lost-then-other", "valid", [], [
    acq(900, 0, "invoke", zk=True), acq(1000, 0, "ok", token=10, zk=True),
    op(3000, 0, "invoke", "lease-lost", token=10), op(3000, 0, "ok", "lease-lost", token=10),
    acq(3900, 1, "invoke", zk=True), acq(4000, 1, "ok", token=11, zk=True),
    op(5000, 0, "invoke", "release", token=10), op(5010, 0, "fail", "release", token=10, error="not held"),
])
# the same with a session lock that, as recorded, never expires on its own
# (no lease, no ttl) and whose holder never crashed: a lease-lost is the
# client's own doubt, not the service freeing the lock (docs/history.md
# §4.1), so the grant at 4 s is early by the history's own account
fx("session-lease-lost-never-expires", "invalid", ["early-grant"], [
    acq(900, 0, "invoke", session=True), acq(1000, 0, "ok", token=10),
    op(3000, 0, "invoke", "lease-lost", token=10), op(3000, 0, "ok", "lease-lost", token=10),
    acq(3900, 1, "invoke", session=True), acq(4000, 1, "ok", token=11),
    op(5000, 0, "invoke", "release", token=10), op(5010, 0, "fail", "release", token=10, error="not held"),
])
fx("session-double-grant", "invalid", ["double-hold", "early-grant"], [
    acq(900, 0, "invoke", session=True), acq(1000, 0, "ok", token=10),
    acq(3900, 1, "invoke", session=True), acq(4000, 1, "ok", token=11),
    op(5000, 0, "invoke", "release", token=10), op(5010, 0, "fail", "release", token=10, error="not held"),
])
# a blocking acquire (ZooKeeper-style) returns when the previous holder
# releases; its lease is counted from that release, not from its call
def blocking(r_ok):
    return [
        acq(500, 0, "invoke"), acq(600, 0, "ok", token=1),
        acq(1000, 1, "invoke"),
        op(29900, 0, "invoke", "release", token=1), op(29950, 0, "ok", "release", token=1),
        acq(30000, 1, "ok", token=2),
        op(31000, 1, "invoke", "write", token=2, value=1), op(32000, 1, "info", "write", token=2, value=1, error="connection lost"),
        acq(r_ok - 100, 2, "invoke", client=0), acq(r_ok, 2, "ok", token=3, client=0),
    ]
fx("blocking-acquire-early-grant", "invalid", ["early-grant"], blocking(33000))
fx("blocking-acquire-after-expiry", "valid", [], blocking(35000))
# tokens are per key: the same or a lower token on another key is no anomaly
fx("tokens-per-key", "valid", [], [
    acq(900, 0, "invoke", key="a"), acq(1000, 0, "ok", key="a", token=5, until=until(900)),
    op(1100, 0, "invoke", "release", key="a", token=5), op(1110, 0, "ok", "release", key="a", token=5),
    acq(1200, 1, "invoke", key="b"), acq(1300, 1, "ok", key="b", token=5, until=until(1200)),
    op(1400, 1, "invoke", "release", key="b", token=5), op(1410, 1, "ok", "release", key="b", token=5),
    acq(1500, 0, "invoke", key="c"), acq(1600, 0, "ok", key="c", token=1, until=until(1500)),
    op(1700, 0, "invoke", "release", key="c", token=1), op(1710, 0, "ok", "release", key="c", token=1),
])

# ---- Defects of the checkers before docs/history.md (format version 2) ----
# Each history below was judged wrongly by the earlier checkers; the .expect
# is what docs/history.md's definitions give.

# Token order is not lease age: pg-unique-row's bigserial is drawn when the
# insert starts, so an exclusive handover can regress the token. Only the
# token anomaly is real; the writes were applied in grant order.
fx("token-order-is-not-lease-age", "invalid", ["token-regression"], [
    acq(900, 0, "invoke"), acq(1000, 0, "ok", token=5, until=until(900)),
    op(1100, 0, "invoke", "write", token=5, value=1), op(1120, 0, "ok", "write", token=5, value=1, applied=1110*MS),
    op(1200, 0, "invoke", "release", token=5), op(1210, 0, "ok", "release", token=5),
    acq(1300, 1, "invoke"), acq(1400, 1, "ok", token=3, until=until(1300)),
    op(1500, 1, "invoke", "write", token=3, value=2), op(1520, 1, "ok", "write", token=3, value=2, applied=1510*MS),
    op(1600, 1, "invoke", "release", token=3), op(1610, 1, "ok", "release", token=3),
])
# A real stale write whose token happens to be higher: worker 0's lease
# (token 9) ran out, worker 1 took the lock with token 4 and wrote, and worker
# 0's late write landed after it and set the counter back.
fx("stale-write-with-higher-token", "invalid", ["lost-update", "stale-write", "token-regression"], [
    acq(900, 0, "invoke"), acq(1000, 0, "ok", token=9, until=until(900)),
    op(1100, 0, "invoke", "read"), op(1110, 0, "ok", "read", value=0),
    acq(6900, 1, "invoke"), acq(7000, 1, "ok", token=4, until=until(6900)),
    op(7100, 1, "invoke", "read"), op(7110, 1, "ok", "read", value=0),
    op(7200, 1, "invoke", "write", token=4, value=1), op(7220, 1, "ok", "write", token=4, value=1, applied=7210*MS),
    op(7400, 0, "invoke", "write", token=9, value=1), op(7520, 0, "ok", "write", token=9, value=1, applied=7510*MS),
])
# Equal tokens are two leases: a failover rewound the counter, both grants got
# token 7, and the older lease's late write is stale.
fx("equal-tokens-two-leases", "invalid", ["lost-update", "stale-write", "token-reuse"], [
    acq(900, 0, "invoke"), acq(1000, 0, "ok", token=7, until=until(900)),
    op(1100, 0, "invoke", "read"), op(1110, 0, "ok", "read", value=0),
    acq(6900, 1, "invoke"), acq(7000, 1, "ok", token=7, until=until(6900)),
    op(7100, 1, "invoke", "read"), op(7110, 1, "ok", "read", value=0),
    op(7200, 1, "invoke", "write", token=7, value=1), op(7220, 1, "ok", "write", token=7, value=1, applied=7210*MS),
    op(7400, 0, "invoke", "write", token=7, value=1), op(7520, 0, "ok", "write", token=7, value=1, applied=7510*MS),
])
# One definition of token-regression: worker 1 asked before worker 0's grant
# returned, so its lower token is no regression, although the only order of
# the grants puts worker 0's first.
fx("token-drawn-before-the-other-returned", "valid", [], [
    acq(1000, 0, "invoke"), acq(1100, 1, "invoke"),
    acq(1200, 0, "ok", token=6, until=until(1000)),
    op(1300, 0, "invoke", "release", token=6), op(1350, 0, "ok", "release", token=6),
    acq(1400, 1, "ok", token=5, until=until(1100)),
    op(1500, 1, "invoke", "release", token=5), op(1510, 1, "ok", "release", token=5),
])
# A history whose only fault is a token: the grants overlap in time but can be
# ordered; the lock model says nothing about tokens.
fx("token-fault-only", "invalid", ["token-regression"], [
    acq(1000, 0, "invoke"), acq(1100, 0, "ok", token=5, until=until(1000)),
    op(1200, 0, "invoke", "release", token=5),
    acq(1220, 1, "invoke"),
    op(1250, 0, "ok", "release", token=5),
    acq(1400, 1, "ok", token=3, until=until(1220)),
    op(1500, 1, "invoke", "release", token=3), op(1510, 1, "ok", "release", token=3),
])
# A register kept in the locked system (no `applied`): worker 0's write was
# applied before its lease ended, but its reply came back late (at 7.5 s,
# after worker 1's write). Worker 1's read at 7.6 s returns worker 1's value:
# the writes were applied in grant order and nothing was lost.
fx("guarded-late-reply-read-proves-order", "valid", [], [
    acq(900, 0, "invoke"), acq(1000, 0, "ok", until=until(900)),
    op(1100, 0, "invoke", "read"), op(1110, 0, "ok", "read", value=0),
    op(1200, 0, "invoke", "write", value=1), op(7500, 0, "ok", "write", value=1),
    acq(6900, 1, "invoke"), acq(7000, 1, "ok", until=until(6900)),
    op(7020, 1, "invoke", "read"), op(7030, 1, "ok", "read", value=1),
    op(7100, 1, "invoke", "write", value=2), op(7200, 1, "ok", "write", value=2),
    op(7600, 1, "invoke", "read"), op(7650, 1, "ok", "read", value=2),
    op(7700, 1, "invoke", "release"), op(7710, 1, "ok", "release"),
])
# A renewal extends the lease: worker 0 renewed at 2.5 s for 2 s, so the grant
# to worker 1 at 3.5 s is early (and both believed they held the lock).
fx("renewed-lease-early-grant", "invalid", ["double-hold", "early-grant"], [
    acq(1000, 0, "invoke", ttl=2000*MS), acq(1100, 0, "ok", lease=2000*MS, until=1000*MS+int(2000*MS*0.99)),
    op(2500, 0, "invoke", "renew", ttl=2000*MS), op(2600, 0, "ok", "renew", lease=2000*MS, until=2500*MS+int(2000*MS*0.99)),
    acq(3000, 1, "invoke", ttl=2000*MS), acq(3500, 1, "ok", lease=2000*MS, until=3000*MS+int(2000*MS*0.99)),
], claims=["ops: early-grant 5 1",
           "says: early-grant worker 0 held it since 1.100s (asked at 1.000s), and worker 0's hold, renewed since, could not have ended before 4.480s"])
# A belief still open at the end of the history runs to its until: the double
# hold whose second grant is the last line is found.
fx("open-belief-last-line", "invalid", ["double-hold", "early-grant"], [
    acq(900, 0, "invoke"), acq(1000, 0, "ok", token=1, until=until(900)),
    acq(1900, 1, "invoke"), acq(2000, 1, "ok", token=2, until=until(1900)),
])
