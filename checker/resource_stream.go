// resource_stream.go holds the streaming resource check (docs/history.md
// §4.2): its state, the op-by-op feed that dispatches each op to the key and
// grant it concerns, the compaction that bounds memory, and the result.

package checker

import (
	"context"
	"math"
	"slices"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// resourceStream is the resource check (docs/history.md §4.2) of a
// well-formed history fed to it op by op, in order (add), whose result comes
// once the history has ended (result). It gives the result the check over
// the whole history (Analyze) gives, and holds only what can still change a
// finding.
//
// It follows the grants of each worker process as Analyze does (the lease
// order, Facts.Older and Facts.HoldEnd: the process's latest grant of each
// key, the grants whose Later ops it still collects, the grants of a
// crashed process whose kept client is still open), and keeps, for each
// key:
//   - the frontier E: the earliest invoke of a read or write of the key
//     still outstanding, else the time of the last op. Every read or write
//     to come is invoked at or after E and every accepted write to come has
//     Lo and Hi at or after E;
//   - the live accepted writes, with the reads of each value written by
//     exactly one of them (reads of other values prove nothing) and the
//     reads of values no write has written yet;
//   - the live grants with an accepted write, the grant of largest invoke
//     among the grants retired, and the first write of each;
//   - the distinct values written (runs of consecutive values), the ok
//     reads that may still be the last to return after every accepted
//     write (each was invoked after every read kept that returned after
//     it), the largest value of a write of unknown outcome, and the stale
//     writes found.
//
// A write is sealed once an accepted write applied after it, by time alone,
// ended before E: no read to come agrees with time for it (§4.2), so hi and
// after are fixed, but for the uniqueness of its value, which a later write
// of that value still takes away (then hi and after fall back to its apply
// interval). A sealed write w retires, judged, when:
//   - two other accepted writes begin (Lo) after both w's Hi and the
//     largest after it may have, and another one's hi cannot fall to w's
//     Hi: w is then never among the possible final values, nor the largest
//     hi nor one of the two largest afters;
//   - its stale-write finding is the same whatever the writes whose hi is
//     not yet fixed turn out to be and whatever comes after E, in both
//     readings of its own value (unique or not; the finding of each is
//     kept until the end says which);
//   - it is not its grant's first write, whatever the hi of the others, or
//     it is in every reading, and it ended before the Lo of every live
//     write with a grant: the grant is then provably applied before every
//     write still to be judged.
//
// A grant retires, keeping only the one of largest invoke, when its writes
// have retired, it can get no more (its process crashed or took the key
// again), its hold provably ended (HoldEnd, from what is known, is at or
// before the last op) and no live grant whose acquire overlapped its own
// is older (Facts.Older).
//
// So its memory is bounded by what is open on each key: the writes and
// reads since shortly before E, the grants whose hold has not provably
// ended and the latest grant of each live process, plus the stale writes
// found and the runs of values written (one run in the workload, which
// writes the value it read plus one). Held back for good, it grows with the
// history's length (docs/history.md §6): a read or write outstanding to the
// end holds back every write of its key after it; a read of a value no
// write has written yet holds back every write applied after its return,
// until a write of that value comes; a write whose finding depends on
// another whose hi a read of its value lowered holds back itself and every
// write after it, to the end; a grant whose hold never ends keeps each
// grant whose acquire overlapped its own.
type resourceStream struct {
	drift float64
	// compactMin is the fewest events of a key between two compactions.
	compactMin int
	now        time.Duration // the time of the last op
	procs      procTable[resProc]
	keys       map[string]*resKey
	// collecting are the grants whose Later ops the Follower still
	// collects, by their number.
	collecting map[int]*resGrant
	// crashed are, by process, the grants of crashed processes whose
	// client the Follower has not said closed (docs/history.md §1).
	crashed map[int][]*resGrant
	sc      resScratch
}

// resScratch are the buffers a compaction, or the end, fills and leaves:
// one runs at a time.
type resScratch struct {
	byLo         []*resWrite
	minHi, seals []time.Duration
	grants       []*resGrant
	overlap      map[*resGrant][]*resGrant
	byMax, byMin grantIndex
	cands        []resCand
	firsts       []*resCand
	firstsMinLo  []time.Duration
}

// resInvoke is what the stream keeps of an outstanding invoke.
type resInvoke struct {
	index   int
	time    time.Duration
	client  int
	fn, key string
	ttl     time.Duration
	value   int64
	hasVal  bool
}

// newResourceStream starts the resource check under drift d in [0, 1), as
// ResourceChecker.Drift.
func newResourceStream(drift float64) *resourceStream {
	return &resourceStream{drift: drift, compactMin: 64, keys: map[string]*resKey{},
		collecting: map[int]*resGrant{}, crashed: map[int][]*resGrant{}}
}

// key returns the state of key k, made on first use.
func (s *resourceStream) key(k string) *resKey {
	rk := s.keys[k]
	if rk == nil {
		rk = newResKey(k, s.compactMin)
		s.keys[k] = rk
	}
	return rk
}

// add feeds the history's next op.
func (s *resourceStream) add(op *history.Op) {
	s.now = op.Time
	if op.IsNemesis() {
		return
	}
	p := s.procs.get(op.Process)
	if p == nil {
		p = &resProc{}
		s.procs.set(op.Process, p)
	}
	if op.Type == history.Invoke {
		s.invoke(p, op)
		return
	}
	if !p.pending {
		return
	}
	p.pending = false
	inv := p.inv
	var k *resKey
	if inv.fn == history.FRead || inv.fn == history.FWrite {
		k = s.key(inv.key)
		k.settle(op.Process)
	}
	switch {
	case inv.fn == history.FAcquire && op.Type == history.OK:
		k = s.key(inv.key) // its grant came with the Follower's events
	case inv.fn == history.FRead && op.Type == history.OK:
		k.read(&inv, op)
	case inv.fn == history.FWrite:
		s.write(p, k, &inv, op)
	}
	if op.Type == history.Info {
		s.procs.set(op.Process, nil) // it issues nothing more
	}
	if k != nil {
		k.budget--
		if k.budget <= 0 {
			s.compact(k)
		}
	}
}

// invoke takes an invoke of process p.
func (s *resourceStream) invoke(p *resProc, op *history.Op) {
	p.pending = true
	p.inv = resInvoke{index: op.Index, time: op.Time, client: op.Client, fn: op.F, key: op.Key, ttl: op.TTL}
	if op.F == history.FWrite {
		p.inv.value, p.inv.hasVal = op.Int()
	}
	if op.F == history.FRead || op.F == history.FWrite {
		k := s.key(op.Key)
		k.pending = append(k.pending, resPending{proc: op.Process, at: op.Time})
	}
}

// write takes the completion op of p's write invoked at inv, of key k.
func (s *resourceStream) write(p *resProc, k *resKey, inv *resInvoke, op *history.Op) {
	value, hasVal := inv.value, inv.hasVal
	if v, ok := op.Int(); ok {
		value, hasVal = v, true
	}
	switch op.Type {
	case history.Info:
		k.unknown(value, hasVal, inv.index, inv.client)
	case history.OK:
		w := &resWrite{order: op.Index, done: op.Index, client: op.Client, lo: inv.time, hi: op.Time,
			value: value, hasVal: hasVal, grant: p.latestOf(op.Key)}
		if op.Applied != 0 {
			w.lo, w.hi, w.exact = op.Applied, op.Applied, true
		}
		k.accept(w)
	}
}

// result ends the history (the Follower's events of the end were fed):
// the ops still outstanding are of unknown outcome. It judges what is left of every key and returns the check's
// result.
func (s *resourceStream) result(ctx context.Context, name string) Result {
	start := time.Now()
	var writes []resInvoke
	s.procs.each(func(_ int, p *resProc) {
		if !p.pending {
			return
		}
		if p.inv.fn == history.FWrite {
			writes = append(writes, p.inv)
		}
	})
	slices.SortFunc(writes, func(a, b resInvoke) int { return a.index - b.index })
	for _, w := range writes {
		s.key(w.key).unknown(w.value, w.hasVal, w.index, w.client)
	}
	names := make([]string, 0, len(s.keys))
	written := false // a key has a write that was not rejected
	for k, rk := range s.keys {
		if rk.accepted > 0 {
			names = append(names, k)
		}
		written = written || rk.accepted > 0 || rk.unknownWrites.has || rk.unknownWrites.noValue
	}
	if ctx.Err() != nil && written {
		return Result{Name: name, Verdict: Unknown, Elapsed: time.Since(start), Anomalies: []Anomaly{}, Note: stopNote(ctx)}
	}
	slices.Sort(names)
	var anomalies []Anomaly
	for _, k := range names {
		anomalies = append(anomalies, s.keys[k].judge(s)...)
	}
	return finish(name, start, anomalies, "")
}

// compact seals, judges and retires what it can of key k.
func (s *resourceStream) compact(k *resKey) {
	e := k.frontier(s.now)
	k.seal(e, &s.sc)
	k.compress(e)
	v := k.view(s, e, k.orphanMin(), false)
	k.retire(v, v.plan())
	k.merge(v, s.now)
	k.budget = max(s.compactMin, k.size())
}

// never is the earliest time: below every time of a history.
const never = time.Duration(math.MinInt64)
