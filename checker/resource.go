package checker

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// ResourceChecker is the checker "resource". It reads the protected
// resource's log out of the history (the write and read ops) and finds
// stale-write and lost-update anomalies.
//
// A write is accepted when its completion is ok, rejected when it is fail
// (a fenced resource refused a stale token), and unknown when it is info or
// never completed. Accepted writes are ordered by `applied`, the harness time
// at which the resource took them (the completion's time when absent).
//
// stale-write: the resource accepted a write from an older lease after it
// had accepted one from a newer lease, for the same key. Which lease is newer
// depends on what the key's writes carry:
//   - when every accepted write of the key carries a fencing token, the token
//     orders leases: an accepted write whose token is lower than the highest
//     token among the writes accepted before it is stale (an equal token is
//     the same lease: one holder may write twice);
//   - otherwise the acquire order does: a write's lease is its process's most
//     recent acquire ok of that key before the write's invoke, and a lease is
//     newer when that acquire ok comes later in the history. An accepted
//     write whose lease is older than the lease behind some write accepted
//     before it is stale. Writes without any such acquire are not judged.
//
// A stale write is reported against the write of the newest lease accepted
// before it; later stale writes against the same write are counted in that
// anomaly's message rather than listed, so one rogue write does not bury the
// report.
//
// lost-update: each write of the workload writes the value it read plus one,
// so after n acknowledged (ok) writes of a key the register must hold at
// least n. The register's final value is the value of the last accepted
// write, or that of the last ok read invoked after that write was applied.
// A write that is info or never completed may still have been applied after
// everything else, so its value is a possible final value too. The key has
// lost an update when every possible final value is below the number of ok
// writes. Rejected (fail) writes are not acknowledged increments.
type ResourceChecker struct{}

var _ Checker = ResourceChecker{}

// Name returns "resource".
func (ResourceChecker) Name() string { return "resource" }

// Check finds stale writes and lost updates in h.
func (c ResourceChecker) Check(ctx context.Context, h history.History) Result {
	return runValidated(ctx, c.Name(), h, c.checkValid)
}

type write struct {
	invoke, done int // op indexes; done is -1 when it never completed
	lease        int // index of the lease's acquire ok, -1 when none
	applied      time.Duration
	token        uint64
	value        int64
	hasValue     bool
}

type keyLog struct {
	accepted []write
	unknown  []write
	reads    [][2]int // ok reads: invoke and completion
}

func (c ResourceChecker) checkValid(ctx context.Context, h history.History) Result {
	start := time.Now()
	logs := map[string]*keyLog{}
	log := func(k string) *keyLog {
		l := logs[k]
		if l == nil {
			l = &keyLog{}
			logs[k] = l
		}
		return l
	}
	lastAcquire := map[procKey]int{}
	pending := map[int]int{} // process -> its outstanding invoke
	for i := range h {
		if i&0xffff == 0 && ctx.Err() != nil {
			return Result{Name: c.Name(), Verdict: Unknown, Elapsed: time.Since(start), Anomalies: []Anomaly{}, Note: "timed out: " + ctx.Err().Error()}
		}
		op := &h[i]
		if op.IsNemesis() {
			continue
		}
		if op.Type == history.Invoke {
			pending[op.Process] = i
		}
		switch op.F {
		case history.FAcquire:
			if op.Type == history.OK {
				lastAcquire[procKey{op.Process, op.Key}] = i
			}
		case history.FRead:
			if inv, ok := pending[op.Process]; ok && op.Type == history.OK {
				log(op.Key).reads = append(log(op.Key).reads, [2]int{inv, i})
			}
		case history.FWrite:
			if op.Type == history.Invoke {
				continue
			}
			inv, ok := pending[op.Process]
			if !ok {
				continue
			}
			w := write{invoke: inv, done: i, lease: -1, token: op.Token, applied: op.Applied}
			if a, ok := lastAcquire[procKey{op.Process, op.Key}]; ok {
				w.lease = a
			}
			if w.token == 0 {
				w.token = h[inv].Token
			}
			if w.applied == 0 {
				w.applied = op.Time
			}
			if v, ok := op.Int(); ok {
				w.value, w.hasValue = v, true
			} else if v, ok := h[inv].Int(); ok {
				w.value, w.hasValue = v, true
			}
			switch op.Type {
			case history.OK:
				log(op.Key).accepted = append(log(op.Key).accepted, w)
			case history.Info:
				log(op.Key).unknown = append(log(op.Key).unknown, w)
			}
		}
		if op.Type != history.Invoke {
			delete(pending, op.Process)
		}
	}
	for _, inv := range pending {
		if h[inv].F != history.FWrite {
			continue
		}
		w := write{invoke: inv, done: -1, lease: -1}
		if v, ok := h[inv].Int(); ok {
			w.value, w.hasValue = v, true
		}
		log(h[inv].Key).unknown = append(log(h[inv].Key).unknown, w)
	}
	var anomalies []Anomaly
	for key, l := range logs {
		slices.SortStableFunc(l.accepted, func(a, b write) int {
			return cmp.Or(cmp.Compare(a.applied, b.applied), cmp.Compare(a.done, b.done))
		})
		anomalies = append(anomalies, staleWrites(h, key, l.accepted)...)
		if a, ok := lostUpdate(h, key, l); ok {
			anomalies = append(anomalies, a)
		}
	}
	return finish(c.Name(), start, anomalies, "")
}

func staleWrites(h history.History, key string, ws []write) []Anomaly {
	fenced := len(ws) > 0
	for _, w := range ws {
		if w.token == 0 {
			fenced = false
			break
		}
	}
	var out []Anomaly
	group := map[int]int{} // newer write's op -> its anomaly in out
	var more []int         // per anomaly: later stale writes against the same newer write
	newest := -1           // position in ws of the write with the newest lease so far
	for i, w := range ws {
		if fenced {
			if newest >= 0 && w.token < ws[newest].token {
				n := ws[newest]
				if g, ok := group[n.done]; ok {
					more[g]++
					continue
				}
				group[n.done] = len(out)
				more = append(more, 0)
				out = append(out, Anomaly{Kind: StaleWrite, Key: key, Ops: []int{w.done, n.done},
					Message: fmt.Sprintf("the resource accepted %s's write to %s with token %d at %s, after it had accepted %s's write with token %d at %s",
						worker(h[w.done]), key, w.token, secs(w.applied), worker(h[n.done]), n.token, secs(n.applied))})
				continue
			}
			if newest < 0 || w.token > ws[newest].token {
				newest = i
			}
			continue
		}
		if w.lease < 0 {
			continue
		}
		if newest >= 0 && w.lease < ws[newest].lease {
			n := ws[newest]
			if g, ok := group[n.done]; ok {
				more[g]++
				continue
			}
			group[n.done] = len(out)
			more = append(more, 0)
			out = append(out, Anomaly{Kind: StaleWrite, Key: key, Ops: []int{w.done, n.done, w.lease, n.lease},
				Message: fmt.Sprintf("%s wrote %s at %s with the lease it took at %s, after %s (lease from %s) had written at %s",
					worker(h[w.done]), key, secs(w.applied), secs(h[w.lease].Time), worker(h[n.done]), secs(h[n.lease].Time), secs(n.applied))})
			continue
		}
		if newest < 0 || w.lease > ws[newest].lease {
			newest = i
		}
	}
	for i, n := range more {
		if n > 0 {
			out[i].Message += fmt.Sprintf("; %d later writes from older leases were accepted after it too", n)
		}
	}
	return out
}

func lostUpdate(h history.History, key string, l *keyLog) (Anomaly, bool) {
	n := int64(len(l.accepted))
	if n == 0 {
		return Anomaly{}, false
	}
	last := l.accepted[len(l.accepted)-1]
	if !last.hasValue {
		return Anomaly{}, false
	}
	final, finalOp, how := last.value, last.done, fmt.Sprintf("the last accepted write, %s's at %s, wrote %d", worker(h[last.done]), secs(last.applied), last.value)
	for _, rd := range l.reads {
		// reads are in history order; the last qualifying one wins
		inv, r := rd[0], rd[1]
		if h[inv].Time >= last.applied {
			if v, ok := h[r].Int(); ok {
				final, finalOp, how = v, r, fmt.Sprintf("%s read %d at %s, after the last accepted write", worker(h[r]), v, secs(h[r].Time))
			}
		}
	}
	possible := final
	for _, w := range l.unknown {
		if w.hasValue && w.value > possible {
			possible = w.value
		}
	}
	if possible >= n {
		return Anomaly{}, false
	}
	return Anomaly{Kind: LostUpdate, Key: key, Ops: []int{finalOp},
		Message: fmt.Sprintf("%s ended at %d after %d acknowledged increments (%s)", key, final, n, how)}, true
}
