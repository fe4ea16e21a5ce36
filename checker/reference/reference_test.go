package reference_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/checker/anomaly"
	"github.com/jepsen-lite/jepsen-lite/checker/reference"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// The unit tests write histories in milliseconds with at, one op a call,
// and fill in the indexes with build.

type mod func(*history.Op)

func ttl(ms int64) mod     { return func(o *history.Op) { o.TTL = dur(ms) } }
func lease(ms int64) mod   { return func(o *history.Op) { o.Lease = dur(ms) } }
func until(ms int64) mod   { return func(o *history.Op) { o.Until = dur(ms) } }
func applied(ms int64) mod { return func(o *history.Op) { o.Applied = dur(ms) } }
func token(n uint64) mod   { return func(o *history.Op) { o.Token = n } }
func value(n int64) mod    { return func(o *history.Op) { o.Value = history.IntValue(n) } }
func client(c int) mod     { return func(o *history.Op) { o.Client = c } }
func key(k string) mod     { return func(o *history.Op) { o.Key = k } }
func session() mod         { return func(o *history.Op) { o.Session = true } }
func dur(ms int64) time.Duration {
	if ms == -1 {
		return -1
	}
	return time.Duration(ms) * time.Millisecond
}

// at is an op of process p at ms on key "k" (client p unless a mod says
// otherwise).
func at(ms int64, p int, typ history.Type, f string, mods ...mod) history.Op {
	o := history.Op{Time: dur(ms), Process: p, Client: p, Type: typ, F: f, Key: "k"}
	for _, m := range mods {
		m(&o)
	}
	return o
}

func build(ops ...history.Op) history.History {
	h := history.History(ops)
	for i := range h {
		h[i].Index = i
	}
	return h
}

const (
	inv  = history.Invoke
	ok   = history.OK
	fail = history.Fail
	info = history.Info

	acq   = history.FAcquire
	rel   = history.FRelease
	renew = history.FRenew
	read  = history.FRead
	write = history.FWrite
	lost  = history.FLeaseLost
)

// expect checks the reference's kinds on h under drift d (all checkers
// together) and the verdict that goes with them.
func expect(t *testing.T, h history.History, d float64, kinds ...string) {
	t.Helper()
	res, err := reference.Check(h, d)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(kinds)
	want := checker.Valid
	if len(kinds) > 0 {
		want = checker.Invalid
	}
	if got := res.All(); !slices.Equal(got, kinds) || res.Verdict != want {
		t.Fatalf("got %s %v, want %s %v\n%s", res.Verdict, got, want, kinds, jsonl(h))
	}
}

func TestDoubleHold(t *testing.T) {
	// p1 is granted after p0's lease may have expired, but p0, with no until,
	// still believes it holds the lock
	expect(t, build(
		at(0, 0, inv, acq, ttl(100)), at(10, 0, ok, acq, lease(100)),
		at(200, 1, inv, acq, ttl(100)), at(210, 1, ok, acq, lease(100)),
		at(300, 0, inv, rel), at(310, 0, fail, rel),
	), 0, checker.DoubleHold)
}

func TestEarlyGrant(t *testing.T) {
	// p0's until ends its belief before p1's grant, but its lease could not
	// have expired yet
	expect(t, build(
		at(0, 0, inv, acq, ttl(1000)), at(10, 0, ok, acq, lease(1000), until(50)),
		at(100, 1, inv, acq, ttl(1000)), at(110, 1, ok, acq, lease(1000), until(1000)),
	), 0, checker.EarlyGrant)
}

func TestForeignRelease(t *testing.T) {
	expect(t, build(
		at(0, 0, inv, acq, ttl(1000)), at(10, 0, ok, acq, lease(1000), until(990)),
		at(20, 1, inv, rel), at(30, 1, ok, rel),
		at(40, 0, inv, rel), at(50, 0, ok, rel),
	), 0, checker.ForeignRelease)
}

func TestStaleWrite(t *testing.T) {
	// p0's lease ran out; p1 took the lock and wrote; then p0's write was
	// applied
	expect(t, build(
		at(0, 0, inv, acq, ttl(100)), at(10, 0, ok, acq, lease(100), until(99)),
		at(200, 1, inv, acq, ttl(100)), at(210, 1, ok, acq, lease(100), until(299)),
		at(215, 1, inv, write, value(1)), at(225, 1, ok, write, value(1), applied(220)),
		at(230, 0, inv, write, value(2)), at(240, 0, ok, write, value(2), applied(235)),
	), 0, checker.StaleWrite)
}

func TestLostUpdate(t *testing.T) {
	// two increments, each under its own lease, both wrote 1
	expect(t, build(
		at(0, 0, inv, acq, ttl(100)), at(10, 0, ok, acq, lease(100), until(99)),
		at(20, 0, inv, read), at(30, 0, ok, read, value(0)),
		at(40, 0, inv, write, value(1)), at(50, 0, ok, write, value(1), applied(45)),
		at(60, 0, inv, rel), at(70, 0, ok, rel),
		at(80, 1, inv, acq, ttl(100)), at(90, 1, ok, acq, lease(100), until(179)),
		at(100, 1, inv, write, value(1)), at(110, 1, ok, write, value(1), applied(105)),
	), 0, checker.LostUpdate)
}

func TestTokenReuse(t *testing.T) {
	expect(t, build(
		at(0, 0, inv, acq, ttl(100)), at(10, 0, ok, acq, lease(100), until(99), token(5)),
		at(20, 0, inv, rel), at(30, 0, ok, rel),
		at(40, 1, inv, acq, ttl(100)), at(50, 1, ok, acq, lease(100), until(139), token(5)),
	), 0, checker.TokenReuse)
}

func TestTokenRegression(t *testing.T) {
	expect(t, build(
		at(0, 0, inv, acq, ttl(100)), at(10, 0, ok, acq, lease(100), until(99), token(5)),
		at(20, 0, inv, rel), at(30, 0, ok, rel),
		at(40, 1, inv, acq, ttl(100)), at(50, 1, ok, acq, lease(100), until(139), token(3)),
	), 0, checker.TokenRegression)
	// a grant invoked before the higher one returned is no regression
	expect(t, build(
		at(0, 0, inv, acq, ttl(100)), at(5, 1, inv, acq, ttl(100)),
		at(10, 0, ok, acq, lease(100), until(99), token(5)),
		at(20, 0, inv, rel), at(30, 0, ok, rel),
		at(50, 1, ok, acq, lease(100), until(104), token(3)),
	), 0)
}

func TestHandoverAfterRelease(t *testing.T) {
	// p1's acquire overlaps p0's release: it may take effect after it
	expect(t, build(
		at(0, 0, inv, acq, ttl(1000)), at(10, 0, ok, acq, lease(1000), until(990), token(1)),
		at(20, 0, inv, write, value(1), token(1)), at(30, 0, ok, write, value(1), token(1), applied(25)),
		at(40, 0, inv, rel), at(45, 1, inv, acq, ttl(1000)), at(50, 0, ok, rel),
		at(55, 1, ok, acq, lease(1000), until(1035), token(2)),
		at(60, 1, inv, read), at(65, 1, ok, read, value(1)),
		at(70, 1, inv, write, value(2), token(2)), at(80, 1, ok, write, value(2), token(2), applied(75)),
	), 0)
	// a grant that returned before the release was called is early
	expect(t, build(
		at(0, 0, inv, acq, ttl(1000)), at(10, 0, ok, acq, lease(1000), until(990)),
		at(20, 1, inv, acq, ttl(1000)), at(30, 1, ok, acq, lease(1000), until(1020)),
		at(40, 0, inv, rel), at(50, 0, ok, rel),
	), 0, checker.DoubleHold, checker.EarlyGrant)
}

func TestGrantAfterLeaseExpiry(t *testing.T) {
	h := func(ret int64) history.History {
		return build(
			at(0, 0, inv, acq, ttl(100)), at(10, 0, ok, acq, lease(100), until(99)),
			at(50, 1, inv, acq, ttl(100)), at(ret, 1, ok, acq, lease(100), until(149)),
			at(200, 0, inv, rel), at(210, 0, fail, rel),
		)
	}
	// with drift 0.01, p0's lease could have expired at 99 ms
	expect(t, h(99), 0.01)
	expect(t, h(98), 0.01, checker.DoubleHold, checker.EarlyGrant) // p0 believes until 99
	expect(t, h(100), 0)
	expect(t, h(99), 0, checker.EarlyGrant)
	// a legacy grant: the invoke's ttl is the lease
	expect(t, build(
		at(0, 0, inv, acq, ttl(100)), at(10, 0, ok, acq),
		at(50, 1, inv, acq, ttl(100)), at(110, 1, ok, acq),
		at(200, 0, inv, lost), at(210, 0, ok, lost),
	), 0, checker.DoubleHold)
	// a lease of -1 never expires
	expect(t, build(
		at(0, 0, inv, acq), at(10, 0, ok, acq, lease(-1), until(100)),
		at(5000, 1, inv, acq), at(5010, 1, ok, acq, lease(-1)),
	), 0, checker.EarlyGrant)
}

func TestSessionLockFreedByCrash(t *testing.T) {
	// neither ttl nor lease: a session lock that never expires, freed by its
	// process's crash (an info completion of any op)
	crash := build(
		at(0, 0, inv, acq), at(10, 0, ok, acq),
		at(20, 0, inv, read), at(50, 0, info, read),
		at(60, 1, inv, acq), at(70, 1, ok, acq),
		at(80, 2, inv, acq, client(0)), at(90, 2, fail, acq, client(0)),
	)
	expect(t, crash, 0)
	// without the crash, p1's grant is early (and p0 still believes)
	expect(t, build(
		at(0, 0, inv, acq), at(10, 0, ok, acq),
		at(20, 0, inv, read), at(50, 0, ok, read, value(0)),
		at(60, 1, inv, acq), at(70, 1, ok, acq),
	), 0, checker.DoubleHold, checker.EarlyGrant)
	// a lock that is not a session lock is not freed by the crash
	expect(t, build(
		at(0, 0, inv, acq), at(10, 0, ok, acq, lease(1000)),
		at(20, 0, inv, read), at(50, 0, info, read),
		at(60, 1, inv, acq), at(70, 1, ok, acq, lease(1000)),
	), 0, checker.EarlyGrant)
}

func TestSessionTakeoverBase(t *testing.T) {
	// p1 takes over p0's session lock after p0's crash at 500. With its ttl
	// standing for its lease, the lease begins at p1's instant, no earlier
	// than the crash, so it could not have expired before 1500, and p2's
	// grant at 1300 is early; at 1500 it is not. With a recorded lease,
	// counted from p1's call at 30, it may have expired from 1030: p2's
	// grant at 1300 is possible.
	h := func(ret int64, recorded bool) history.History {
		l := ttl(1000)
		if recorded {
			l = lease(1000)
		}
		return build(
			at(0, 0, inv, acq), at(10, 0, ok, acq, lease(5000), session()),
			at(30, 1, inv, acq, ttl(1000)),
			at(400, 0, inv, read), at(500, 0, info, read),
			at(600, 1, ok, acq, l, until(100)),
			at(1200, 2, inv, acq), at(ret, 2, ok, acq, lease(1000)),
		)
	}
	expect(t, h(1499, false), 0, checker.EarlyGrant)
	expect(t, h(1500, false), 0)
	expect(t, h(1300, true), 0)
}

// TestLeaseBeginsAtItsInstant: p0's acquire of unknown outcome asks for a
// session lock and p0 crashes at 130 ms; it may take p1's lock over at p1's
// expiry (1090 ms under drift 0.01), and p2's grant may take it over from
// the crashed session at that same instant. When p2's ttl stands for its
// lease, the lease begins there, at its instant, not at its call or at p0's
// crash: it may end from 2080 ms, and p3's grant at 1610 ms is early. When
// p2's ok records its lease, that lease counts from p2's call at 140 ms and
// may end from 1130 ms: p3's grant is possible.
func TestLeaseBeginsAtItsInstant(t *testing.T) {
	h := func(recorded bool) history.History {
		l := mod(func(*history.Op) {})
		if recorded {
			l = lease(1000)
		}
		return build(
			at(100, 1, inv, acq, ttl(1000)), at(110, 1, ok, acq, lease(1000), until(1000)),
			at(120, 0, inv, acq), at(130, 0, info, acq),
			at(140, 2, inv, acq, ttl(1000)), at(1500, 2, ok, acq, l, until(1550)),
			at(1600, 3, inv, acq, ttl(1000)), at(1610, 3, ok, acq, lease(1000), until(2500)),
		)
	}
	expect(t, h(false), 0.01, checker.EarlyGrant)
	expect(t, h(true), 0.01)
}

func TestRenewalMakesGrantEarly(t *testing.T) {
	h := func(renewed bool) history.History {
		ops := []history.Op{at(0, 0, inv, acq, ttl(100)), at(10, 0, ok, acq, lease(100), until(99))}
		if renewed {
			ops = append(ops, at(50, 0, inv, renew, ttl(100)), at(60, 0, ok, renew, lease(100), until(149)))
		}
		ops = append(ops, at(120, 1, inv, acq, ttl(100)), at(130, 1, ok, acq, lease(100), until(219)))
		return build(ops...)
	}
	expect(t, h(false), 0)
	// the renewal moves p0's earliest expiry to 150 and its until to 149
	expect(t, h(true), 0, checker.DoubleHold, checker.EarlyGrant)
}

func TestUntilRule(t *testing.T) {
	// a renewal that returns after the until in force does not revive the
	// belief
	expect(t, build(
		at(0, 0, inv, acq, ttl(100)), at(10, 0, ok, acq, lease(100), until(99)),
		at(90, 0, inv, renew, ttl(100)), at(120, 0, ok, renew, lease(100), until(189)),
		at(150, 1, inv, acq, ttl(100)), at(160, 1, ok, acq, lease(100), until(249)),
	), 0, checker.EarlyGrant)
	// one that returns in time does
	expect(t, build(
		at(0, 0, inv, acq, ttl(100)), at(10, 0, ok, acq, lease(100), until(99)),
		at(90, 0, inv, renew, ttl(100)), at(95, 0, ok, renew, lease(100), until(189)),
		at(150, 1, inv, acq, ttl(100)), at(160, 1, ok, acq, lease(100), until(249)),
	), 0, checker.DoubleHold, checker.EarlyGrant)
	// beliefs are half-open: one that ends when the other starts does not
	// overlap it
	expect(t, build(
		at(0, 0, inv, acq, ttl(100)), at(10, 0, ok, acq, lease(100), until(100)),
		at(50, 1, inv, acq, ttl(100)), at(100, 1, ok, acq, lease(100), until(149)),
	), 0)
	// a renewal's until on a grant that had none sets one: p0's belief ends
	// at 80, before p1's grant
	expect(t, build(
		at(0, 0, inv, acq, ttl(100)), at(10, 0, ok, acq, lease(100)),
		at(50, 0, inv, renew, ttl(100)), at(60, 0, ok, renew, lease(100), until(80)),
		at(150, 1, inv, acq, ttl(100)), at(160, 1, ok, acq, lease(100)),
	), 0)
	// the same process's beliefs never make a double-hold
	expect(t, build(
		at(0, 0, inv, acq, ttl(100)), at(10, 0, ok, acq, lease(100)),
		at(20, 0, inv, acq, ttl(100)), at(30, 0, ok, acq, lease(100)),
	), 0)
}

func TestOpenBeliefAtTheEnd(t *testing.T) {
	// p0 never releases and has no until: its belief runs on past the end of
	// the history, over p1's grant on the last line
	expect(t, build(
		at(0, 0, inv, acq, ttl(100)), at(10, 0, ok, acq, lease(100)),
		at(200, 1, inv, acq, ttl(100)), at(210, 1, ok, acq, lease(100)),
	), 0, checker.DoubleHold)
	// with an until it runs to its until
	expect(t, build(
		at(0, 0, inv, acq, ttl(100)), at(10, 0, ok, acq, lease(100), until(99)),
		at(200, 1, inv, acq, ttl(100)), at(210, 1, ok, acq, lease(100)),
	), 0)
}

func TestGuardedWriteOrderedByRead(t *testing.T) {
	// the guarded register records no applied: p0's slow write may have
	// taken effect anywhere in [20, 300], but a read of its value invoked at
	// 310 proves it was applied after p1's write (applied by 260)
	h := func(withRead bool) history.History {
		ops := []history.Op{
			at(0, 0, inv, acq, ttl(100)), at(10, 0, ok, acq, lease(100), until(99)),
			at(20, 0, inv, write, value(2)),
			at(200, 1, inv, acq, ttl(100)), at(210, 1, ok, acq, lease(100), until(299)),
			at(250, 1, inv, write, value(1)), at(260, 1, ok, write, value(1)),
			at(300, 0, ok, write, value(2)),
		}
		if withRead {
			ops = append(ops, at(310, 1, inv, read), at(320, 1, ok, read, value(2)))
		}
		return build(ops...)
	}
	expect(t, h(false), 0)
	expect(t, h(true), 0, checker.StaleWrite)
}

func TestReadEvidence(t *testing.T) {
	// a value written twice (by writes that may have taken effect) is not
	// unique; a rejected write does not count
	h := func(otherType history.Type, readValue int64) history.History {
		return build(
			at(0, 0, inv, acq, ttl(100)), at(10, 0, ok, acq, lease(100), until(99)),
			at(20, 0, inv, write, value(2)),
			at(200, 1, inv, acq, ttl(100)), at(210, 1, ok, acq, lease(100), until(299)),
			at(250, 1, inv, write, value(1)), at(260, 1, ok, write, value(1)),
			at(265, 2, inv, write, value(2)), at(270, 2, otherType, write, value(2)),
			at(300, 0, ok, write, value(2)),
			at(310, 1, inv, read), at(320, 1, ok, read, value(readValue)),
		)
	}
	expect(t, h(fail, 2), 0, checker.StaleWrite)
	expect(t, h(info, 2), 0)
	// a read that disagrees with time is no evidence: w (value 2, applied
	// by 30) was followed by x (applied in [40, 50]) before the read was
	// invoked, yet the read returned w's value
	expect(t, build(
		at(0, 0, inv, acq, ttl(100)), at(5, 0, ok, acq, lease(100), until(99)),
		at(10, 0, inv, write, value(2)), at(30, 0, ok, write, value(2)),
		at(200, 1, inv, acq, ttl(100)), at(210, 1, ok, acq, lease(100), until(299)),
		at(240, 1, inv, write, value(1)), at(250, 1, ok, write, value(1), applied(245)),
		at(260, 1, inv, read), at(270, 1, ok, read, value(2)),
	), 0)
}

func TestEqualTokensTwoLeases(t *testing.T) {
	// two grants with the same token are two leases: the older one's late
	// write is stale
	expect(t, build(
		at(0, 0, inv, acq, ttl(100)), at(10, 0, ok, acq, lease(100), until(99), token(5)),
		at(200, 1, inv, acq, ttl(100)), at(210, 1, ok, acq, lease(100), until(299), token(5)),
		at(215, 1, inv, write, value(1), token(5)), at(225, 1, ok, write, value(1), token(5), applied(220)),
		at(230, 0, inv, write, value(2), token(5)), at(245, 0, ok, write, value(2), token(5), applied(240)),
	), 0, checker.StaleWrite, checker.TokenReuse)
}

func TestLostUpdateFinalValues(t *testing.T) {
	base := []history.Op{
		at(0, 0, inv, acq, ttl(100)), at(10, 0, ok, acq, lease(100), until(99)),
		at(40, 0, inv, write, value(1)), at(50, 0, ok, write, value(1), applied(45)),
		at(60, 0, inv, write, value(1)), at(70, 0, ok, write, value(1), applied(65)),
	}
	expect(t, build(base...), 0, checker.LostUpdate)
	// a write of unknown outcome may have been applied last
	expect(t, build(append(slices.Clone(base), at(80, 0, inv, write, value(2)), at(90, 0, info, write, value(2)))...), 0)
	// a read invoked after every accepted write shows the final value
	expect(t, build(append(slices.Clone(base), at(95, 1, inv, read), at(99, 1, ok, read, value(5)))...), 0)
	// the last such read to return, not the last invoked
	expect(t, build(append(slices.Clone(base),
		at(95, 1, inv, read), at(96, 2, inv, read), at(97, 2, ok, read, value(1)), at(99, 1, ok, read, value(2)),
	)...), 0)
	expect(t, build(append(slices.Clone(base),
		at(95, 1, inv, read), at(96, 2, inv, read), at(97, 1, ok, read, value(2)), at(99, 2, ok, read, value(1)),
	)...), 0, checker.LostUpdate)
	// reads that tie for the last return: each may have been last
	expect(t, build(append(slices.Clone(base),
		at(95, 1, inv, read), at(96, 2, inv, read), at(99, 2, ok, read, value(1)), at(99, 1, ok, read, value(2)),
	)...), 0)
	// a write without a value leaves the question open
	expect(t, build(append(slices.Clone(base), at(80, 0, inv, write), at(90, 0, info, write))...), 0)
}

func TestUnknownRelease(t *testing.T) {
	// a release of unknown outcome may have freed the lock
	expect(t, build(
		at(0, 0, inv, acq, ttl(1000)), at(10, 0, ok, acq, lease(1000), until(990)),
		at(20, 0, inv, rel), at(30, 0, info, rel),
		at(40, 1, inv, acq, ttl(1000)), at(50, 1, ok, acq, lease(1000), until(1030)),
	), 0)
	// a pending one too
	expect(t, build(
		at(0, 0, inv, acq, ttl(1000)), at(10, 0, ok, acq, lease(1000), until(990)),
		at(20, 0, inv, rel),
		at(40, 1, inv, acq, ttl(1000)), at(50, 1, ok, acq, lease(1000), until(1030)),
	), 0)
	// but not before its call
	expect(t, build(
		at(0, 0, inv, acq, ttl(1000)), at(10, 0, ok, acq, lease(1000), until(30)),
		at(40, 1, inv, acq, ttl(1000)), at(50, 1, ok, acq, lease(1000), until(1030)),
		at(60, 0, inv, rel), at(70, 0, info, rel),
	), 0, checker.EarlyGrant)
	// a failed release never took effect (but its invoke ended the belief)
	expect(t, build(
		at(0, 0, inv, acq, ttl(1000)), at(10, 0, ok, acq, lease(1000), until(990)),
		at(20, 0, inv, rel), at(30, 0, fail, rel),
		at(40, 1, inv, acq, ttl(1000)), at(50, 1, ok, acq, lease(1000), until(1030)),
	), 0, checker.EarlyGrant)
}

// TestOutstandingReleaseThatFails checks §4.1's culprit rule for a release
// still outstanding at a grant's return that fails later: ops that later
// fail are left out of every prefix, so the release does not let the grant
// through, and the grant is the culprit.
func TestOutstandingReleaseThatFails(t *testing.T) {
	expect(t, build(
		at(0, 0, inv, acq, ttl(1000)), at(10, 0, ok, acq, lease(1000), until(30)),
		at(20, 0, inv, rel),
		at(40, 1, inv, acq, ttl(1000)), at(50, 1, ok, acq, lease(1000), until(1040)),
		at(60, 0, fail, rel),
	), 0, checker.EarlyGrant)
}

func TestForeignReleaseAfterExpiry(t *testing.T) {
	// p0's lease may have expired, but nobody took the lock over, so p0
	// still holds it in the model: its release succeeds
	expect(t, build(
		at(0, 0, inv, acq, ttl(100)), at(10, 0, ok, acq, lease(100), until(99)),
		at(500, 0, inv, rel), at(510, 0, ok, rel),
	), 0)
	// once p1 took it over, p0's release is foreign
	expect(t, build(
		at(0, 0, inv, acq, ttl(100)), at(10, 0, ok, acq, lease(100), until(99)),
		at(200, 1, inv, acq, ttl(100)), at(210, 1, ok, acq, lease(100), until(299)),
		at(500, 0, inv, rel), at(510, 0, ok, rel),
	), 0, checker.ForeignRelease)
}

func TestResumeAtQuiescentPoint(t *testing.T) {
	early := func(t0 int64, p, q int) []history.Op {
		return []history.Op{
			at(t0, p, inv, acq, ttl(1000)), at(t0+10, p, ok, acq, lease(1000), until(t0+20)),
			at(t0+30, q, inv, acq, ttl(1000)), at(t0+40, q, ok, acq, lease(1000), until(t0+50)),
			at(t0+60, q, inv, rel), at(t0+70, q, ok, rel),
		}
	}
	// after the first early-grant, the lock is quiescent once every holder
	// has released: the second pair is judged from a free lock, and its
	// early-grant is reported too
	h := build(append(early(0, 0, 1), early(5000, 2, 3)...)...)
	res, err := reference.Check(h, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(res.Kinds[anomaly.CheckerLinearizability], " "); got != checker.EarlyGrant {
		t.Fatalf("got %s", got)
	}
	if n := reference.Culprits(h, 0); n != 2 {
		t.Fatalf("%d culprits, want 2\n%s", n, jsonl(h))
	}
	// p1 neither released nor crashed: no quiescent point follows, so one
	// culprit
	h = build(append(early(0, 0, 1)[:4], early(5000, 2, 3)...)...)
	if n := reference.Culprits(h, 0); n != 1 {
		t.Fatalf("%d culprits, want 1\n%s", n, jsonl(h))
	}
	// p1 crashed: its lease may have expired by 5000, but not if it never
	// expires
	crashed := func(l int64) history.History {
		ops := early(0, 0, 1)[:4]
		ops[3].Lease = dur(l)
		ops = append(ops, at(60, 1, inv, read), at(70, 1, info, read))
		return build(append(ops, early(5000, 2, 3)...)...)
	}
	if n := reference.Culprits(crashed(1000), 0); n != 2 {
		t.Fatalf("%d culprits, want 2\n%s", n, jsonl(crashed(1000)))
	}
	if n := reference.Culprits(crashed(-1), 0); n != 1 {
		t.Fatalf("%d culprits, want 1\n%s", n, jsonl(crashed(-1)))
	}
}

func TestRefusesMalformed(t *testing.T) {
	h := build(at(0, 0, ok, acq))
	if _, err := reference.Check(h, 0); err == nil {
		t.Fatal("accepted a malformed history")
	}
}

func TestHeaderAndNemesisIgnored(t *testing.T) {
	h := build(
		history.Header(),
		at(0, 0, inv, acq, ttl(1000)), at(10, 0, ok, acq, lease(1000), until(990)),
		history.Op{Time: dur(15), Process: -1, Type: history.Info, F: "partition", Key: "k"},
		at(20, 0, inv, rel), at(30, 0, ok, rel),
	)
	expect(t, h, 0)
}

func TestHistoryOrderSettlesTies(t *testing.T) {
	// p1's grant returns at 30 ms, the time p0's release is invoked: the
	// history's order says which came first
	h := func(releaseFirst bool) history.History {
		ops := []history.Op{
			at(0, 0, inv, acq, ttl(1000)), at(10, 0, ok, acq, lease(1000), until(990)),
			at(20, 1, inv, acq, ttl(1000)),
		}
		grant, release := at(30, 1, ok, acq, lease(1000), until(1000)), at(30, 0, inv, rel)
		if releaseFirst {
			ops = append(ops, release, grant)
		} else {
			ops = append(ops, grant, release)
		}
		return build(append(ops, at(40, 0, ok, rel))...)
	}
	expect(t, h(true), 0)
	expect(t, h(false), 0, checker.EarlyGrant)
	// the same for token-regression: p1's acquire, invoked at the time p0's
	// grant returned, came after it only when the history says so
	tok := func(okFirst bool) history.History {
		ops := []history.Op{at(0, 0, inv, acq, ttl(100))}
		grant, acquire := at(10, 0, ok, acq, lease(100), until(99), token(5)), at(10, 1, inv, acq, ttl(100))
		if okFirst {
			ops = append(ops, grant, acquire)
		} else {
			ops = append(ops, acquire, grant)
		}
		return build(append(ops,
			at(20, 0, inv, rel), at(30, 0, ok, rel),
			at(40, 1, ok, acq, lease(100), until(109), token(3)),
		)...)
	}
	expect(t, tok(true), 0, checker.TokenRegression)
	expect(t, tok(false), 0)
}

func TestCulpritByCompletionIndex(t *testing.T) {
	// p1's foreign release and p2's early grant both return at 50 ms: the
	// one completed first in the history is the culprit, and no quiescent
	// point follows
	h := func(releaseFirst bool) history.History {
		ops := []history.Op{
			at(0, 0, inv, acq, ttl(1000)), at(10, 0, ok, acq, lease(1000), until(990)),
			at(20, 1, inv, rel), at(25, 2, inv, acq, ttl(1000)),
		}
		release, grant := at(50, 1, ok, rel), at(50, 2, ok, acq, lease(1000), until(1000))
		if releaseFirst {
			return build(append(ops, release, grant)...)
		}
		return build(append(ops, grant, release)...)
	}
	expect(t, h(true), 0, checker.DoubleHold, checker.ForeignRelease)
	expect(t, h(false), 0, checker.DoubleHold, checker.EarlyGrant)
}

func TestUnknownAcquireMayTakeEffect(t *testing.T) {
	// p0 holds a lock that never expires and asks for it again with a
	// 100 ms lease; whether the acquire is pending or of unknown outcome, it
	// may have taken effect at 100 ms, so p0's hold may have ended at 200
	// ms, before p1's grant
	h := func(second ...history.Op) history.History {
		ops := []history.Op{at(0, 0, inv, acq), at(10, 0, ok, acq, lease(-1), until(50))}
		ops = append(ops, second...)
		return build(append(ops, at(300, 1, inv, acq, ttl(100)), at(310, 1, ok, acq, lease(100)))...)
	}
	expect(t, h(at(100, 0, inv, acq, ttl(100))), 0)
	expect(t, h(at(100, 0, inv, acq, ttl(100)), at(150, 0, info, acq)), 0)
	expect(t, h(), 0, checker.EarlyGrant)
	// a failed one never took effect
	expect(t, h(at(100, 0, inv, acq, ttl(100)), at(150, 0, fail, acq)), 0, checker.EarlyGrant)
}

func TestUnknownRenewalMayTakeEffect(t *testing.T) {
	// p0's renewal for 100 ms, pending or of unknown outcome, may have
	// shortened its 1000 ms lease from its call at 100 ms
	h := func(second ...history.Op) history.History {
		ops := []history.Op{at(0, 0, inv, acq, ttl(1000)), at(10, 0, ok, acq, lease(1000), until(50))}
		ops = append(ops, second...)
		return build(append(ops, at(300, 1, inv, acq, ttl(100)), at(310, 1, ok, acq, lease(100)))...)
	}
	expect(t, h(at(100, 0, inv, renew, ttl(100))), 0)
	expect(t, h(at(100, 0, inv, renew, ttl(100)), at(150, 0, info, renew)), 0)
	expect(t, h(), 0, checker.EarlyGrant)
	expect(t, h(at(100, 0, inv, renew, ttl(100)), at(150, 0, fail, renew)), 0, checker.EarlyGrant)
}

func TestUnknownAcquireAgainstLiveHolder(t *testing.T) {
	// p1's acquire of unknown outcome asks for a session lock; it cannot
	// take p0's session lock, which never expires and whose process is
	// alive, so it cannot free the lock for p2 by its crash either
	expect(t, build(
		at(0, 0, inv, acq), at(10, 0, ok, acq),
		at(20, 1, inv, acq), at(30, 1, info, acq),
		at(40, 2, inv, acq), at(50, 2, ok, acq),
	), 0, checker.DoubleHold, checker.EarlyGrant)
}

// TestUnknownSessionAcquireOfCrashedProcess: an acquire of unknown outcome
// that asks for a session lock, of a process that then crashed, may take
// p0's lock over only at or after p0's earliest expiry (1000 ms), its own
// return being unknown; every op after it in the order takes effect no
// earlier. So it cannot free the lock for p2 by its crash: p2's grant at
// 50 ms, under p0's lease, is early whether the acquire took effect or not.
func TestUnknownSessionAcquireOfCrashedProcess(t *testing.T) {
	expect(t, build(
		at(0, 0, inv, acq, ttl(1000)), at(10, 0, ok, acq, lease(1000), until(990)),
		at(20, 1, inv, acq), at(30, 1, info, acq),
		at(40, 2, inv, acq, ttl(1000)), at(50, 2, ok, acq, lease(1000)),
	), 0, checker.DoubleHold, checker.EarlyGrant)
	// once p0's lease may have expired, p2's grant is possible
	expect(t, build(
		at(0, 0, inv, acq, ttl(1000)), at(10, 0, ok, acq, lease(1000), until(990)),
		at(20, 1, inv, acq), at(30, 1, info, acq),
		at(1040, 2, inv, acq, ttl(1000)), at(1050, 2, ok, acq, lease(1000)),
	), 0)
}

// TestInstantsFollowTheOrder: p1's grant, returned at 200 ms, may take p0's
// lock over only at or after p0's expiry at 100 ms; p0's renewal, returned
// at 30 ms, cannot take effect after that instant, so it took effect before
// the takeover, while p0 held the lock, and moved its expiry to 1020 ms:
// p1's grant is early. Without the renewal it is not.
func TestInstantsFollowTheOrder(t *testing.T) {
	h := func(renewed bool) history.History {
		ops := []history.Op{at(0, 0, inv, acq, ttl(100)), at(10, 0, ok, acq, lease(100), until(15))}
		if renewed {
			ops = append(ops, at(20, 0, inv, renew, ttl(1000)), at(30, 0, ok, renew, lease(1000)))
		}
		return build(append(ops, at(50, 1, inv, acq, ttl(100)), at(200, 1, ok, acq, lease(100)))...)
	}
	expect(t, h(false), 0)
	expect(t, h(true), 0, checker.EarlyGrant)
}

func TestQuiescentPointAfterRenewal(t *testing.T) {
	// p1's early grant (lease 5000 ms) is renewed for 100 ms, called at 60
	// ms and returned at 250 ms, and p1 crashes: from 160 ms its lease may
	// have expired, so the invoke at 300 ms is a quiescent point and p3's
	// early grant is a second culprit; without the renewal it is not
	h := func(renewed bool) history.History {
		ops := []history.Op{
			at(0, 0, inv, acq, ttl(1000)), at(10, 0, ok, acq, lease(1000), until(20)),
			at(30, 1, inv, acq, ttl(5000)), at(40, 1, ok, acq, lease(5000), until(50)),
		}
		if renewed {
			ops = append(ops, at(60, 1, inv, renew, ttl(100)), at(250, 1, ok, renew, lease(100)))
		}
		return build(append(ops,
			at(260, 1, inv, read), at(270, 1, info, read),
			at(300, 2, inv, acq, ttl(1000)), at(310, 2, ok, acq, lease(1000), until(320)),
			at(330, 3, inv, acq, ttl(1000)), at(340, 3, ok, acq, lease(1000), until(350)),
		)...)
	}
	if n := reference.Culprits(h(true), 0); n != 2 {
		t.Fatalf("%d culprits, want 2\n%s", n, jsonl(h(true)))
	}
	if n := reference.Culprits(h(false), 0); n != 1 {
		t.Fatalf("%d culprits, want 1\n%s", n, jsonl(h(false)))
	}
}
