// Package reference is a slow, obviously-correct implementation of the
// anomaly definitions of docs/history.md, used to test the fast checkers of
// package checker (see differential_test.go).
//
// Every rule is written as directly as the specification states it: beliefs
// are computed per grant and compared pairwise; the lease model of §4.1 is
// decided by enumerating every order of a key's lock ops that the history's
// order allows (with every op of unknown outcome placed anywhere after its
// invoke, or left out), each op at an instant no earlier than the one
// before it, for the prefix at every completion, in each piece between the
// key's quiescent points, with no cuts other than the specification's own;
// the resource rules of §4.2 compare every pair of writes, ordering their
// grants by §3's lease order read off every lock op of the newer grant's
// process (older); the token rules of §4.3 compare every pair of grants of
// tokens (acquires, and renewals that hand out a new token); the liveness
// rules of §4.5 and §4.6 (Liveness) compute each excuse from its rule by
// scanning the whole history and decide coverage moment by moment at every
// moment where it can change; the queue rules of §4.7 (queue.go) find each
// hold's end by scanning every call and compare every pair of holds.
// Nothing is cached and nothing is pruned,
// so the running time is exponential in the number of overlapping lock ops:
// use it on tiny histories only (a dozen client ops or so).
//
// Times are exact integer nanoseconds; a lease L under drift d lasts
// int64(float64(L) * (1 - d)).
//
// Order is the history's: an op returned before another was invoked when its
// completion comes before the other's invoke in the history (indexes), so
// ops stamped with the same time are still in history order. Lease
// arithmetic (expiries compared with returns, beliefs, apply intervals)
// uses the times.
//
// Where the specification leaves a choice open, the reference takes the most
// literal reading and says so where the choice is made:
//   - an op of unknown outcome has no ok to take its lease from: an
//     acquire's lease is its invoke's ttl (a session lock without one), a
//     renewal's its invoke's ttl, else its grant's lease;
//   - an acquire of unknown outcome takes over a session lock when the
//     holder crashed at all (its own return, "r", is unknown: +∞), at or
//     after the crash;
//   - when several reads tie for the last to return, each one's value is a
//     possible final value.
package reference

import (
	"fmt"
	"math"
	"slices"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/checker/anomaly"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// Names lists the checkers (package anomaly's names) whose anomalies the
// reference computes, the keys of Result.Kinds, in checker.Check's order.
var Names = []string{anomaly.CheckerDoubleHold, anomaly.CheckerLinearizability, anomaly.CheckerResource, anomaly.CheckerFencingTokens, anomaly.CheckerQueue}

// never is a time (or a history index) that never comes: an expiry that
// never happens, the return of an op whose outcome is unknown, the crash of
// a process that never crashed.
const never = int64(math.MaxInt64)

// Result is the reference's conclusion about a history.
type Result struct {
	// Verdict is invalid when any anomaly was found, valid otherwise.
	Verdict checker.Verdict
	// Kinds holds, for each name of Names, the sorted, distinct anomaly
	// kinds found by that checker (nil for none).
	Kinds map[string][]string
}

// All returns the sorted, distinct anomaly kinds found by every checker.
func (r Result) All() []string {
	var all []string
	for _, n := range Names {
		for _, k := range r.Kinds[n] {
			if !slices.Contains(all, k) {
				all = append(all, k)
			}
		}
	}
	slices.Sort(all)
	return all
}

// VerdictOf returns the verdict of one checker: invalid when it found an
// anomaly.
func (r Result) VerdictOf(name string) checker.Verdict {
	if len(r.Kinds[name]) > 0 {
		return checker.Invalid
	}
	return checker.Valid
}

// Check judges h by docs/history.md with drift d in [0, 1) (0 for none). It
// refuses a history that is not well-formed, returning history.Validate's
// error.
func Check(h history.History, d float64) (Result, error) {
	if err := history.Validate(h); err != nil {
		return Result{}, err
	}
	if d < 0 || d >= 1 {
		return Result{}, fmt.Errorf("reference: drift %v is outside [0, 1)", d)
	}
	x := parse(h)
	res := Result{Verdict: checker.Valid, Kinds: map[string][]string{}}
	add := func(name string, kinds []string) {
		slices.Sort(kinds)
		kinds = slices.Compact(kinds)
		if len(kinds) > 0 {
			res.Kinds[name] = kinds
			res.Verdict = checker.Invalid
		}
	}
	add(anomaly.CheckerDoubleHold, doubleHolds(x))
	add(anomaly.CheckerLinearizability, leaseModel(x, d))
	add(anomaly.CheckerResource, resourceAnomalies(x, d))
	add(anomaly.CheckerFencingTokens, tokenAnomalies(x))
	add(anomaly.CheckerQueue, queueAnomalies(x))
	return res, nil
}

// opCall is one worker op: its invoke and its completion, if any.
type opCall struct {
	inv     int          // index of the invoke
	done    int          // index of the completion, -1 when pending
	typ     history.Type // the completion's type; "" when pending
	proc    int
	f, key  string
	call    int64 // the invoke's time
	ret     int64 // the completion's time; never when pending
	invOp   history.Op
	doneOp  history.Op // zero when pending
	unknown bool       // info or pending: the outcome is unknown
}

// grant is an acquire ok with the §3 definitions applied.
type grant struct {
	*opCall
	lease   int64 // L: -1 for a lease that never expires
	session bool
	until   int64 // 0: none
	token   uint64
}

// parsed is a history split into calls, with each process's crash.
type parsed struct {
	h        history.History
	calls    []*opCall     // in invoke order
	crash    map[int]int64 // the time of each process's crash
	crashIdx map[int]int64 // the history index of each process's crash
	freed    map[int]int64 // when each process's client was closed: its crash, or for a kept crash the next one of its worker that closed the client
	freedIdx map[int]int64 // the history index of that close
	grants   []*grant      // in invoke order
}

func parse(h history.History) *parsed {
	x := &parsed{h: h, crash: map[int]int64{}, crashIdx: map[int]int64{}, freed: map[int]int64{}, freedIdx: map[int]int64{}}
	outstanding := map[int]*opCall{}
	kept := map[int][]int{} // by worker: crashed processes whose client lives on
	for i, op := range h {
		if op.IsNemesis() {
			continue
		}
		if op.Type == history.Invoke {
			c := &opCall{inv: i, done: -1, proc: op.Process, f: op.F, key: op.Key, call: int64(op.Time), ret: never, invOp: op, unknown: true}
			outstanding[op.Process] = c
			x.calls = append(x.calls, c)
			continue
		}
		c := outstanding[op.Process]
		delete(outstanding, op.Process)
		c.done, c.typ, c.ret, c.doneOp = i, op.Type, int64(op.Time), op
		c.unknown = op.Type == history.Info
		if op.Type == history.Info {
			if _, crashed := x.crash[op.Process]; !crashed {
				x.crash[op.Process] = int64(op.Time)
				x.crashIdx[op.Process] = int64(i)
				// §1: a kept crash leaves the client and its sessions
				// open until a later crash of the worker closes it.
				if op.Kept {
					kept[op.Client] = append(kept[op.Client], op.Process)
				} else {
					for _, p := range append(kept[op.Client], op.Process) {
						x.freed[p], x.freedIdx[p] = int64(op.Time), int64(i)
					}
					delete(kept, op.Client)
				}
			}
		}
	}
	for _, c := range x.calls {
		if c.f != history.FAcquire || c.typ != history.OK {
			continue
		}
		g := &grant{opCall: c, until: int64(c.doneOp.Until), token: c.doneOp.Token}
		g.lease, g.session = acquireLease(c)
		x.grants = append(x.grants, g)
	}
	return x
}

// acquireLease is the lease L and session flag of an acquire (§3): the ok's
// lease, else the invoke's ttl; a session lock that never expires when both
// are absent. An acquire of unknown outcome has no ok: its invoke's ttl,
// else a session lock.
func acquireLease(c *opCall) (int64, bool) {
	var okOp history.Op
	if c.typ == history.OK {
		okOp = c.doneOp
	}
	switch {
	case okOp.Lease != 0:
		return int64(okOp.Lease), okOp.Session
	case c.invOp.TTL != 0:
		return int64(c.invOp.TTL), okOp.Session
	}
	return -1, true
}

// crashOf is the time process p crashed: its first info completion, or
// never.
func (x *parsed) crashOf(p int) int64 { return orNever(x.crash, p) }

// crashIdxOf is the history index of process p's crash: its first info
// completion, or never.
func (x *parsed) crashIdxOf(p int) int64 { return orNever(x.crashIdx, p) }

// freedOf is the time process p's client was closed, ending its sessions:
// its crash, or for a kept crash the next crash of its worker that closed
// the client; never when the client stayed open.
func (x *parsed) freedOf(p int) int64 { return orNever(x.freed, p) }

// freedIdxOf is the history index of freedOf's close, or never.
func (x *parsed) freedIdxOf(p int) int64 { return orNever(x.freedIdx, p) }

// orNever is process p's entry in m, or never when it has none.
func orNever(m map[int]int64, p int) int64 {
	if v, ok := m[p]; ok {
		return v
	}
	return never
}

// grantOf is the grant a call of process p on key belongs to: p's latest
// grant of key that returned before the call was invoked (§3's renewal and
// "a write's lease"). A process's ops are sequential, so "returned before"
// is "completed earlier in the history"; nil when there is none.
func (x *parsed) grantOf(c *opCall) *grant {
	var best *grant
	for _, g := range x.grants {
		if g.proc == c.proc && g.key == c.key && g.done < c.inv {
			best = g
		}
	}
	return best
}

// renewLease is the lease of a renewal (§3): its own lease (an ok's), else
// its invoke's ttl, else its grant's lease (-1 when it has no grant either:
// its process then holds nothing it could renew).
func (x *parsed) renewLease(c *opCall) int64 {
	switch {
	case c.typ == history.OK && c.doneOp.Lease != 0:
		return int64(c.doneOp.Lease)
	case c.invOp.TTL != 0:
		return int64(c.invOp.TTL)
	}
	if g := x.grantOf(c); g != nil {
		return g.lease
	}
	return -1
}

// scaled is L × (1 − d) as an end offset: never for L = -1.
func scaled(base, lease int64, d float64) int64 {
	if lease == -1 {
		return never
	}
	return base + int64(float64(lease)*(1-d))
}

// older is §3's lease order: grant a is older than grant b when no reading
// of the ops lets b's grant take effect before a's. When a returned before
// b was invoked (history order), b cannot come first; when b returned
// before a was invoked, it can (a's grant is then judged by §4.1). When
// neither returned before the other was invoked, b's grant taking effect
// first means a's takes effect after b's hold may have ended, and no later
// than a's return: so a is older when a's return comes before every moment
// at which b's hold may have ended, as seen by a's return:
//   - b's call plus its lease (× (1 − d); never for -1): the earliest the
//     lease can end, b taking effect at its call;
//   - the call of each release of b's key by b's process invoked after b
//     returned and before a returned (ok or of unknown outcome);
//   - the call plus lease of each renewal or acquire of b's key by b's
//     process invoked in that same stretch (ok or of unknown outcome);
//   - when b or one of those acquires is a session lock, the close of b's
//     process's client, when it comes before a's return.
func (x *parsed) older(a, b *grant, d float64) bool {
	switch {
	case a == b:
		return false
	case a.done < b.inv:
		return true
	case b.done < a.inv:
		return false
	}
	end := scaled(b.call, b.lease, d)
	session := b.session
	for _, c := range x.calls {
		if c.proc != b.proc || c.key != b.key || c.inv <= b.done || c.inv >= a.done || c.typ == history.Fail {
			continue
		}
		switch c.f {
		case history.FRelease:
			end = min(end, c.call)
		case history.FRenew:
			end = min(end, scaled(c.call, x.renewLease(c), d))
		case history.FAcquire:
			l, s := acquireLease(c)
			end = min(end, scaled(c.call, l, d))
			session = session || s
		}
	}
	if session && x.freedIdxOf(b.proc) < int64(a.done) {
		end = min(end, x.freedOf(b.proc))
	}
	return a.ret < end
}
