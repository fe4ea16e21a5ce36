package checker

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
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
	// kept are, by worker, the grants of crashed processes whose client
	// lives on: the next crash of the worker that does not keep it closes
	// it (docs/history.md §1).
	kept map[int][]*resGrant
	sc   resScratch
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
	rf           []*resCand
	lo           []time.Duration
}

// resInvoke is what the stream keeps of an outstanding invoke.
type resInvoke struct {
	index  int
	time   time.Duration
	client int
	f, key string
	ttl    time.Duration
	value  int64
	hasVal bool
}

// resProc is what the stream keeps of one live worker process.
type resProc struct {
	pending bool
	inv     resInvoke
	keys    []resProcKey
	// grants are its grants still kept somewhere, for its client's close.
	grants []*resGrant
	pruned int // len(grants) after the last pruning
}

// resProcKey is a process's state of one key it locked: its latest grant
// and the grants whose Later ops are still collected (Analyze's).
type resProcKey struct {
	key    *resKey
	latest *resGrant
	later  []resCollect
}

// resCollect is a grant whose Later ops are collected, with the earliest
// its hold may end with no drift as far as seen.
type resCollect struct {
	g     *resGrant
	bound time.Duration
}

// resGrant is one grant (Facts.Grants' entry) as the stream keeps it.
type resGrant struct {
	owner      *resProc // nil once its process crashed
	key        *resKey
	invoke, ok int
	call, ret  time.Duration
	lease      time.Duration
	session    bool
	// steps are HoldEnd's state after each Later op that changed it, in
	// invoke order.
	steps    []holdStep
	closed   int
	closedAt time.Duration
	// collecting is set while its Later ops are collected; latestLive
	// while it is the latest grant of a live process (it may get writes).
	collecting, latestLive bool
	// resource is set once it has an accepted write: it is then among its
	// key's live grants until it retires (dropped).
	resource bool
	// dropped is set once nothing needs its Later ops any more.
	dropped bool
	writes  []*resWrite // its live accepted writes
	// retFirst is its first write (smallest hi, then order) once retired.
	retFirst *resWrite
	// Its live writes of the two smallest (hiMax, order) and of the two
	// smallest (hiMin, order) in the current view (nil: none), and the
	// smallest hi it surely has and may have.
	mx1, mx2, mn1, mn2 *resWrite
	minMax, minMin     time.Duration
}

// holdStep is HoldEnd of a grant for the ops invoked after invoke: the
// earliest end and whether a client close may end the hold.
type holdStep struct {
	invoke  int
	end     time.Duration
	session bool
}

// newResourceStream starts the resource check under drift d in [0, 1), as
// ResourceChecker.Drift.
func newResourceStream(drift float64) *resourceStream {
	return &resourceStream{drift: drift, compactMin: 64, keys: map[string]*resKey{}, kept: map[int][]*resGrant{}}
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
	if inv.f == history.FRead || inv.f == history.FWrite {
		k = s.key(inv.key)
		k.settle(op.Process)
	}
	if op.Type != history.Fail {
		s.addLater(p, &inv, op)
	}
	switch {
	case inv.f == history.FAcquire && op.Type == history.OK:
		k = s.grant(p, &inv, op)
	case inv.f == history.FRead && op.Type == history.OK:
		k.read(&inv, op)
	case inv.f == history.FWrite:
		s.write(p, k, &inv, op)
	}
	if op.Type == history.Info {
		s.crash(p, op)
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
	p.inv = resInvoke{index: op.Index, time: op.Time, client: op.Client, f: op.F, key: op.Key, ttl: op.TTL}
	if op.F == history.FWrite {
		p.inv.value, p.inv.hasVal = op.Int()
	}
	if op.F == history.FRead || op.F == history.FWrite {
		k := s.key(op.Key)
		k.pending = append(k.pending, resPending{proc: op.Process, at: op.Time})
	}
}

// keyOf returns p's state of key k, made on first use.
func (p *resProc) keyOf(s *resourceStream, k string) *resProcKey {
	for i := range p.keys {
		if p.keys[i].key.name == k {
			return &p.keys[i]
		}
	}
	p.keys = append(p.keys, resProcKey{key: s.key(k)})
	return &p.keys[len(p.keys)-1]
}

// latestOf returns p's latest grant of key k, nil when none.
func (p *resProc) latestOf(k string) *resGrant {
	for i := range p.keys {
		if p.keys[i].key.name == k {
			return p.keys[i].latest
		}
	}
	return nil
}

// pendingLock reports whether p has an acquire, release or renewal of key
// k outstanding that was invoked before op index before.
func (p *resProc) pendingLock(k string, before int) bool {
	if !p.pending || p.inv.key != k || p.inv.index >= before {
		return false
	}
	switch p.inv.f {
	case history.FAcquire, history.FRelease, history.FRenew:
		return true
	}
	return false
}

// grant takes the acquire ok op of p, invoked at inv, and returns its key.
func (s *resourceStream) grant(p *resProc, inv *resInvoke, op *history.Op) *resKey {
	pk := p.keyOf(s, op.Key)
	lease, session := grantLease(&history.Op{TTL: inv.ttl}, op)
	g := &resGrant{owner: p, key: pk.key, invoke: inv.index, ok: op.Index, call: inv.time, ret: op.Time,
		lease: lease, session: session, closed: -1, collecting: true, latestLive: true}
	if old := pk.latest; old != nil {
		old.latestLive = false
		old.dropped = old.dropped || !old.resource
	}
	pk.latest = g
	pk.key.latest[op.Process] = g
	pk.later = append(pk.later, resCollect{g: g, bound: leaseEnd(inv.time, lease, 0)})
	if len(p.grants) >= 2*p.pruned+16 {
		p.grants = slices.DeleteFunc(p.grants, func(g *resGrant) bool { return g.dropped })
		p.pruned = len(p.grants)
	}
	p.grants = append(p.grants, g)
	return pk.key
}

// addLater adds the lock op of p invoked at inv and completed by done (a
// zero op: never) to the Later ops of each grant of its process and key
// still collected, as Analyze does; a grant nothing needs any more leaves
// the collection.
func (s *resourceStream) addLater(p *resProc, inv *resInvoke, done *history.Op) {
	if inv.f != history.FAcquire && inv.f != history.FRelease && inv.f != history.FRenew {
		return
	}
	pk := p.keyOf(s, inv.key)
	if len(pk.later) == 0 {
		return
	}
	x := LaterOp{Invoke: inv.index, Call: inv.time}
	in := history.Op{TTL: inv.ttl}
	switch inv.f {
	case history.FRelease:
		x.Release = true
	case history.FRenew:
		x.Lease = renewLease(&in, done, pk.latest.lease)
	case history.FAcquire:
		var ok history.Op // an acquire of unknown outcome has no ok to take its lease from
		if done.Type == history.OK {
			ok = history.Op{Lease: done.Lease, Session: done.Session}
		}
		x.Lease, x.Session = grantLease(&in, &ok)
	}
	kept := pk.later[:0]
	for _, c := range pk.later {
		if x.Call >= c.bound || c.g.dropped {
			c.g.collecting = false
			continue // nothing from here on ends its hold any earlier, or nothing asks
		}
		c.g.addLater(x, s.drift)
		if x.Release {
			c.g.collecting = false
			continue
		}
		c.bound = min(c.bound, leaseEnd(x.Call, x.Lease, 0))
		kept = append(kept, c)
	}
	clear(pk.later[len(kept):])
	pk.later = kept
}

// addLater adds the Later op x to g's HoldEnd steps under drift d.
func (g *resGrant) addLater(x LaterOp, d float64) {
	end, session := leaseEnd(g.call, g.lease, d), g.session
	if n := len(g.steps); n > 0 {
		end, session = g.steps[n-1].end, g.steps[n-1].session
	}
	e := x.Call
	if !x.Release {
		e = leaseEnd(x.Call, x.Lease, d)
	}
	if ne, ns := min(end, e), session || x.Session; ne != end || ns != session {
		g.steps = append(g.steps, holdStep{invoke: x.Invoke, end: ne, session: ns})
	}
}

// holdEnd is Facts.HoldEnd of g as seen by an op that returned at index
// before, under drift d, from the Later ops and the close known so far.
func (g *resGrant) holdEnd(before int, d float64) time.Duration {
	end, session := leaseEnd(g.call, g.lease, d), g.session
	if i := sort.Search(len(g.steps), func(i int) bool { return g.steps[i].invoke >= before }); i > 0 {
		end, session = g.steps[i-1].end, g.steps[i-1].session
	}
	if session && g.closed >= 0 && g.closed < before {
		end = min(end, g.closedAt)
	}
	return end
}

// laterKnown reports whether every Later op of g invoked before op index
// before is known: none of its process's lock ops of its key invoked
// before then is still outstanding (the close before then is known).
func (g *resGrant) laterKnown(before int) bool {
	return !g.collecting || g.owner == nil || !g.owner.pendingLock(g.key.name, before)
}

// crash takes the info op of p: its latest grants get no more writes, and
// its client closes now or, kept, at its worker's next crash that does not
// keep it.
func (s *resourceStream) crash(p *resProc, op *history.Op) {
	for _, pk := range p.keys {
		if g := pk.latest; g != nil {
			g.latestLive = false
			g.dropped = g.dropped || !g.resource
			delete(pk.key.latest, op.Process)
		}
	}
	gs := slices.DeleteFunc(p.grants, func(g *resGrant) bool { return g.dropped })
	for _, g := range gs {
		g.owner = nil
	}
	if op.Kept {
		s.kept[op.Client] = append(s.kept[op.Client], gs...)
		return
	}
	for _, g := range append(s.kept[op.Client], gs...) {
		g.closed, g.closedAt = op.Index, op.Time
	}
	delete(s.kept, op.Client)
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

// result ends the history: the ops still outstanding are of unknown
// outcome. It judges what is left of every key and returns the check's
// result.
func (s *resourceStream) result(ctx context.Context, name string) Result {
	start := time.Now()
	var writes []resInvoke
	s.procs.each(func(_ int, p *resProc) {
		if !p.pending {
			return
		}
		if p.inv.f == history.FWrite {
			writes = append(writes, p.inv)
		} else {
			s.addLater(p, &p.inv, &history.Op{})
		}
	})
	slices.SortFunc(writes, func(a, b resInvoke) int { return a.index - b.index })
	for _, w := range writes {
		s.key(w.key).unknown(w.value, w.hasVal, w.index, w.client)
	}
	names := make([]string, 0, len(s.keys))
	written := false // a key has a write that was not rejected
	for k, rk := range s.keys {
		if rk.n > 0 {
			names = append(names, k)
		}
		written = written || rk.n > 0 || rk.unk.has || rk.unk.noValue
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

// resKey is what the stream keeps of one key.
type resKey struct {
	name string
	n    int64 // its accepted writes, retired ones included
	// writes are its live accepted writes, in the order of their
	// completions.
	writes []*resWrite
	// grants are its live grants with an accepted write; oldBest is the
	// retired one of largest invoke.
	grants  []*resGrant
	oldBest *resGrant
	// latest are the latest grants of its key of the live processes, by
	// process.
	latest map[int]*resGrant
	// vals are the reads of each value that one live write, or none yet,
	// has written; orphans counts those of no write.
	vals    map[int64]*resVal
	orphans int
	// written are the values of the retired writes and of the writes of
	// unknown outcome.
	written valueSet
	// watched are the stale-write findings of retired writes whose value
	// was unique when they retired, by that value.
	watched  map[int64][]*resFinding
	findings []*resFinding
	pending  []resPending
	// lasts are the ok reads that may be the last to return among those
	// invoked after every accepted write, in the order of their returns.
	lasts []resRead
	unk   resUnknown
	// budget is how many more events come before the next compaction;
	// reads counts the reads kept in vals.
	budget, reads int
}

// resPending is an outstanding read or write of a key.
type resPending struct {
	proc int
	at   time.Duration
}

// resRead is an ok read.
type resRead struct {
	call, ret    time.Duration
	done, client int
	value        int64
	hasVal       bool
}

// resUnknown sums up the writes of unknown outcome of a key, in their
// order: whether one had no value, and the first of the largest value.
type resUnknown struct {
	noValue, has   bool
	best           int64
	invoke, client int
}

// resVal is one value of a key as the reads of it tighten its write's
// bounds (§4.2, "By reads").
type resVal struct {
	writers int // its live accepted writes
	// dead is set once the value is not unique to one write; sealed once
	// its write is sealed: reads of it then prove nothing more.
	dead, sealed bool
	// orphanMin is the earliest return of the reads of it that returned
	// before E, while no write had written it: they agree with time for
	// any write of it to come and only their return counts.
	orphanMin time.Duration
	// aggRet and aggCall are the earliest return and latest call of the
	// reads of it that agree with time for its write whatever comes; recent
	// are the others.
	aggRet, aggCall time.Duration
	recent          []resSpan
}

// resSpan is a read's call and return.
type resSpan struct{ call, ret time.Duration }

// resFinding is the stale-write finding of a retired write: the anomaly
// and the write's after under each reading of its value (u: unique, n:
// not), nil where there is none; uniq says which reading holds so far.
type resFinding struct {
	order, cause   int
	uniq           bool
	afterU, afterN time.Duration
	u, n           *Anomaly
}

// newResKey starts the state of key name, compacted after budget events.
func newResKey(name string, budget int) *resKey {
	return &resKey{name: name, latest: map[int]*resGrant{}, vals: map[int64]*resVal{}, watched: map[int64][]*resFinding{}, budget: budget}
}

// size is how much the key holds, roughly in entries.
func (k *resKey) size() int {
	return len(k.writes) + len(k.grants) + len(k.latest) + len(k.vals) + k.reads + len(k.lasts) + len(k.pending)
}

// settle takes the completion of proc's outstanding read or write.
func (k *resKey) settle(proc int) {
	for i, p := range k.pending {
		if p.proc == proc {
			k.pending = slices.Delete(k.pending, i, i+1)
			return
		}
	}
}

// frontier is E: the earliest invoke of an outstanding read or write of
// the key, else now.
func (k *resKey) frontier(now time.Duration) time.Duration {
	e := now
	for _, p := range k.pending {
		e = min(e, p.at)
	}
	return e
}

// read takes the ok read op invoked at inv.
func (k *resKey) read(inv *resInvoke, op *history.Op) {
	r := resRead{call: inv.time, ret: op.Time, done: op.Index, client: op.Client}
	r.value, r.hasVal = op.Int()
	// a read that returned before r and was invoked no later can no longer
	// be the last to return after every accepted write
	k.lasts = slices.DeleteFunc(k.lasts, func(q resRead) bool { return q.ret < r.ret && q.call <= r.call })
	k.lasts = append(k.lasts, r)
	if !r.hasVal || r.value == 0 || k.written.has(r.value) {
		return // it proves nothing: a write of its value is retired, or of unknown outcome
	}
	e := k.vals[r.value]
	if e == nil {
		e = newResVal()
		k.vals[r.value] = e
		k.orphans++
	}
	if !e.dead && !e.sealed {
		e.recent = append(e.recent, resSpan{call: r.call, ret: r.ret})
		k.reads++
	}
}

// newResVal starts the state of a value with no read of it.
func newResVal() *resVal {
	return &resVal{orphanMin: Forever, aggRet: Forever, aggCall: never}
}

// kill makes e's value not unique: its reads prove nothing any more.
func (k *resKey) kill(e *resVal) {
	e.dead = true
	k.reads -= len(e.recent)
	e.recent = nil
}

// unknown takes a write of unknown outcome (info, or outstanding at the
// end) invoked at op index invoke by worker client.
func (k *resKey) unknown(value int64, hasVal bool, invoke, client int) {
	switch {
	case !hasVal:
		k.unk.noValue = true
	case !k.unk.has || value > k.unk.best:
		k.unk.has, k.unk.best, k.unk.invoke, k.unk.client = true, value, invoke, client
	}
	if !hasVal || value == 0 {
		return
	}
	k.written.add(value)
	if e := k.vals[value]; e != nil {
		if e.writers == 0 {
			delete(k.vals, value) // its reads prove nothing now
			k.orphans--
			k.reads -= len(e.recent)
		} else {
			k.kill(e)
		}
	}
	k.unwatch(value)
}

// unwatch takes a new write of value: the findings of the retired write of
// that value read it as not unique.
func (k *resKey) unwatch(value int64) {
	for _, f := range k.watched[value] {
		f.uniq = false
	}
	delete(k.watched, value)
}

// accept takes the accepted write w.
func (k *resKey) accept(w *resWrite) {
	k.n++
	k.writes = append(k.writes, w)
	if g := w.grant; g != nil {
		if !g.resource {
			g.resource = true
			k.grants = append(k.grants, g)
		}
		g.writes = append(g.writes, w)
	}
	if !w.hasVal || w.value == 0 {
		return
	}
	e := k.vals[w.value]
	switch {
	case e == nil:
		e = newResVal()
		k.vals[w.value] = e
	case e.writers == 0:
		k.orphans--
		// the reads that returned before E while no write had written it
		// count for w, through their return only
		e.aggRet = min(e.aggRet, e.orphanMin)
	}
	e.orphanMin = Forever
	if e.writers > 0 || k.written.has(w.value) {
		k.kill(e)
	}
	e.writers++
	w.val = e
	k.unwatch(w.value)
}

// compress sums up the reads kept of each value that no longer need to be
// told apart: for a value of no write, those that returned before e; for
// the value of one unsealed write, those invoked at or before e (they agree
// with time for it: nothing applied after it ended before e).
func (k *resKey) compress(e time.Duration) {
	for _, v := range k.vals {
		if v.dead || v.sealed {
			continue
		}
		kept := v.recent[:0]
		for _, r := range v.recent {
			switch {
			case v.writers == 0 && r.ret < e:
				v.orphanMin = min(v.orphanMin, r.ret)
			case v.writers > 0 && r.call <= e:
				v.aggRet, v.aggCall = min(v.aggRet, r.ret), max(v.aggCall, r.call)
			default:
				kept = append(kept, r)
				continue
			}
			k.reads--
		}
		clear(v.recent[len(kept):])
		v.recent = kept
	}
}

// orphanMin is the earliest return of a read of a value that no write has
// written yet (Forever when none): a write of that value to come may be
// applied, by the reads, before it.
func (k *resKey) orphanMin() time.Duration {
	m := Forever
	if k.orphans == 0 {
		return m
	}
	for _, v := range k.vals {
		if v.writers == 0 {
			m = min(m, v.orphanMin)
			for _, r := range v.recent {
				m = min(m, r.ret)
			}
		}
	}
	return m
}

// valueSet is a set of values, kept as sorted runs of consecutive values.
type valueSet struct{ runs []valueRun }

// valueRun is the values from lo to hi, both included.
type valueRun struct{ lo, hi int64 }

// find returns the first run that ends at or after v.
func (s *valueSet) find(v int64) int {
	return sort.Search(len(s.runs), func(i int) bool { return s.runs[i].hi >= v })
}

// has reports whether v is in the set.
func (s *valueSet) has(v int64) bool {
	i := s.find(v)
	return i < len(s.runs) && s.runs[i].lo <= v
}

// add puts v in the set, joining the runs it touches.
func (s *valueSet) add(v int64) {
	i := s.find(v)
	if i < len(s.runs) && s.runs[i].lo <= v {
		return
	}
	// runs[i-1].hi < v < runs[i].lo: neither v-1 nor v+1 overflows where
	// it is compared
	left := i > 0 && s.runs[i-1].hi == v-1
	right := i < len(s.runs) && s.runs[i].lo == v+1
	switch {
	case left && right:
		s.runs[i-1].hi = s.runs[i].hi
		s.runs = slices.Delete(s.runs, i, i+1)
	case left:
		s.runs[i-1].hi = v
	case right:
		s.runs[i].lo = v
	default:
		s.runs = slices.Insert(s.runs, i, valueRun{v, v})
	}
}

// resWrite is an accepted write as the stream keeps it.
type resWrite struct {
	order, done, client int
	lo, hi              time.Duration
	exact               bool
	value               int64
	hasVal              bool
	grant               *resGrant // nil when none
	val                 *resVal   // its value's reads, nil without a value or once retired
	// sealed is set once no read to come agrees with time for it; hiT and
	// afterT are then its bounds when its value is unique.
	sealed      bool
	hiT, afterT time.Duration
	// hiMin and hiMax bound the hi it may end with, and afterMax the after
	// (Forever: not known yet), in the current view; at the end hiMin and
	// hiMax are its hi, afterMax its after.
	hiMin, hiMax, afterMax time.Duration
	cand, retired          bool
}

// unique reports whether w's value may be unique to it: no other write of
// it so far.
func (w *resWrite) unique() bool { return w.val != nil && !w.val.dead }

// before reports whether hi a, then order oa, comes before hi b, then
// order ob: the order of a grant's writes (smallest hi first).
func before(a time.Duration, oa int, b time.Duration, ob int) bool {
	return a < b || a == b && oa < ob
}

// maxBefore and minBefore order writes by hiMax and by hiMin (nil: last).
func maxBefore(a, b *resWrite) bool {
	return a != nil && (b == nil || before(a.hiMax, a.order, b.hiMax, b.order))
}

func minBefore(a, b *resWrite) bool {
	return a != nil && (b == nil || before(a.hiMin, a.order, b.hiMin, b.order))
}

// hiMaxOf and hiMinOf are w's hiMax and hiMin, Forever for nil.
func hiMaxOf(w *resWrite) time.Duration {
	if w == nil {
		return Forever
	}
	return w.hiMax
}

func hiMinOf(w *resWrite) time.Duration {
	if w == nil {
		return Forever
	}
	return w.hiMin
}

// sealTimes returns, for each write of ws, S: the earliest hi of an
// accepted write of ws whose Lo is after its Hi (Forever when none). A read
// of its value agrees with time when it was invoked at or before S.
func sealTimes(ws []*resWrite, sc *resScratch) []time.Duration {
	byLo := append(sc.byLo[:0], ws...)
	slices.SortFunc(byLo, func(a, b *resWrite) int { return cmp.Compare(a.lo, b.lo) })
	minHiFrom := slices.Grow(sc.minHi[:0], len(byLo)+1)[:len(byLo)+1]
	minHiFrom[len(byLo)] = Forever
	for i := len(byLo) - 1; i >= 0; i-- {
		minHiFrom[i] = min(minHiFrom[i+1], byLo[i].hi)
	}
	out := slices.Grow(sc.seals[:0], len(ws))[:len(ws)]
	sc.byLo, sc.minHi, sc.seals = byLo, minHiFrom, out
	for i, w := range ws {
		j := sort.Search(len(byLo), func(j int) bool { return byLo[j].lo > w.hi })
		out[i] = minHiFrom[j]
	}
	return out
}

// tighten returns w's hi and after by the reads of its value (unique to
// it) that agree with time, those invoked at or before s.
func (w *resWrite) tighten(s time.Duration) (time.Duration, time.Duration) {
	e := w.val
	hi, after := min(w.hi, e.aggRet), max(w.lo, e.aggCall)
	for _, r := range e.recent {
		if r.call <= s {
			hi, after = min(hi, r.ret), max(after, r.call)
		}
	}
	return hi, after
}

// seal seals each live write that an accepted write applied after it
// ended before e.
func (k *resKey) seal(e time.Duration, sc *resScratch) {
	for i, s := range sealTimes(k.writes, sc) {
		w := k.writes[i]
		if w.sealed || s >= e {
			continue
		}
		w.sealed = true
		w.hiT, w.afterT = w.hi, w.lo
		if w.unique() {
			w.hiT, w.afterT = w.tighten(s)
			w.val.sealed = true
			k.reads -= len(w.val.recent)
			w.val.recent = nil
		}
	}
}

// bounds sets the hi and after each live write may still end with.
func (k *resKey) bounds() {
	for _, w := range k.writes {
		u := w.unique()
		w.hiMin, w.hiMax, w.afterMax = w.hi, w.hi, w.lo
		switch {
		case w.sealed && u:
			w.hiMin, w.afterMax = w.hiT, w.afterT
		case !w.sealed:
			w.afterMax = Forever
			if u {
				w.hiMin = min(w.hi, w.val.aggRet)
				for _, r := range w.val.recent {
					w.hiMin = min(w.hiMin, r.ret)
				}
			}
		}
	}
}

// finalBounds sets the hi and after of each live write at the end.
func (k *resKey) finalBounds(sc *resScratch) {
	seals := sealTimes(k.writes, sc)
	for i, w := range k.writes {
		hi, after := w.hi, w.lo
		switch {
		case !w.unique():
		case w.sealed:
			hi, after = w.hiT, w.afterT
		default:
			hi, after = w.tighten(seals[i])
		}
		w.hiMin, w.hiMax, w.afterMax = hi, hi, after
	}
}

// resView is a key's live writes and grants as one compaction, or the
// end, judges them.
type resView struct {
	s     *resourceStream
	k     *resKey
	final bool
	// e is the frontier; orphanMin the earliest return of a read of a
	// value no write has written.
	e, orphanMin time.Duration
	overlap      map[*resGrant][]*resGrant
	byMax, byMin *grantIndex
	lo           [3]*resWrite // the live writes of largest lo
	dom          [2]*resWrite // the live writes of largest hiMin
}

// view builds the key's view: at the end (final) from the writes' hi and
// after, else from the bounds they may still take.
func (k *resKey) view(s *resourceStream, e, orphanMin time.Duration, final bool) *resView {
	sc := &s.sc
	if final {
		k.finalBounds(sc)
	} else {
		k.bounds()
	}
	v := &resView{s: s, k: k, final: final, e: e, orphanMin: orphanMin}
	for _, g := range k.grants {
		g.rank()
	}
	sc.byMax.build(k.grants, func(g *resGrant) time.Duration { return g.minMax })
	sc.byMin.build(k.grants, func(g *resGrant) time.Duration { return g.minMin })
	v.byMax, v.byMin = &sc.byMax, &sc.byMin
	all := append(sc.grants[:0], k.grants...)
	for _, g := range k.latest {
		if !g.resource {
			all = append(all, g)
		}
	}
	sc.grants = all
	if sc.overlap == nil {
		sc.overlap = map[*resGrant][]*resGrant{}
	}
	clear(sc.overlap)
	v.overlap = overlappingGrants(all, sc.overlap)
	for _, w := range k.writes {
		top(v.lo[:], w, func(x *resWrite) time.Duration { return x.lo })
		top(v.dom[:], w, func(x *resWrite) time.Duration { return x.hiMin })
	}
	return v
}

// top keeps in ws (largest first) the writes of largest by(w).
func top(ws []*resWrite, w *resWrite, by func(*resWrite) time.Duration) {
	for i := range ws {
		if ws[i] == nil || by(w) > by(ws[i]) {
			copy(ws[i+1:], ws[i:])
			ws[i] = w
			return
		}
	}
}

// rank sets g's two smallest (hiMax, order) and (hiMin, order) among its
// live writes, and the smallest hi it surely has (minMax) and may have
// (minMin), its retired first write included.
func (g *resGrant) rank() {
	g.mx1, g.mx2, g.mn1, g.mn2 = nil, nil, nil, nil
	for _, w := range g.writes {
		if maxBefore(w, g.mx1) {
			g.mx1, g.mx2 = w, g.mx1
		} else if maxBefore(w, g.mx2) {
			g.mx2 = w
		}
		if minBefore(w, g.mn1) {
			g.mn1, g.mn2 = w, g.mn1
		} else if minBefore(w, g.mn2) {
			g.mn2 = w
		}
	}
	g.minMax, g.minMin = hiMaxOf(g.mx1), hiMinOf(g.mn1)
	if f := g.retFirst; f != nil {
		g.minMax, g.minMin = min(g.minMax, f.hi), min(g.minMin, f.hi)
	}
}

// minExcept returns the smallest hi g surely has and may have without its
// write o.
func (g *resGrant) minExcept(o *resWrite) (time.Duration, time.Duration) {
	mx, mn := g.mx1, g.mn1
	if mx == o {
		mx = g.mx2
	}
	if mn == o {
		mn = g.mn2
	}
	if f := g.retFirst; f != nil {
		return min(hiMaxOf(mx), f.hi), min(hiMinOf(mn), f.hi)
	}
	return hiMaxOf(mx), hiMinOf(mn)
}

// grantIndex answers which grant of largest invoke has a key below a time.
type grantIndex struct {
	sorted []*resGrant
	keys   []time.Duration
	top    [][2]*resGrant // by prefix: the two grants of largest invoke
}

// build indexes gs by key, reusing x's buffers.
func (x *grantIndex) build(gs []*resGrant, key func(*resGrant) time.Duration) {
	sorted := append(x.sorted[:0], gs...)
	slices.SortFunc(sorted, func(a, b *resGrant) int { return cmp.Compare(key(a), key(b)) })
	x.sorted = sorted
	x.keys = slices.Grow(x.keys[:0], len(sorted))[:len(sorted)]
	x.top = slices.Grow(x.top[:0], len(sorted))[:len(sorted)]
	var t [2]*resGrant
	for i, g := range sorted {
		x.keys[i] = key(g)
		switch {
		case t[0] == nil || g.invoke > t[0].invoke:
			t = [2]*resGrant{g, t[0]}
		case t[1] == nil || g.invoke > t[1].invoke:
			t[1] = g
		}
		x.top[i] = t
	}
}

// best returns the grant of largest invoke, other than not, whose key is
// below t; nil when none.
func (x *grantIndex) best(t time.Duration, not *resGrant) *resGrant {
	i := sort.Search(len(x.keys), func(i int) bool { return x.keys[i] >= t })
	if i == 0 {
		return nil
	}
	if b := x.top[i-1]; b[0] == not {
		return b[1]
	}
	return x.top[i-1][0]
}

// later returns whichever of a and b was invoked later (nil counts as
// none).
func later(a, b *resGrant) *resGrant {
	if a == nil || b != nil && b.invoke > a.invoke {
		return b
	}
	return a
}

// overlappingGrants lists, for each grant of gs, the others whose
// acquires overlapped its own: neither returned before the other was
// invoked, into out (gs is sorted by invoke).
func overlappingGrants(gs []*resGrant, out map[*resGrant][]*resGrant) map[*resGrant][]*resGrant {
	ids := gs
	slices.SortFunc(ids, func(a, b *resGrant) int { return a.invoke - b.invoke })
	var active []*resGrant
	for _, g := range ids {
		active = slices.DeleteFunc(active, func(a *resGrant) bool { return a.ok < g.invoke })
		for _, a := range active {
			out[a] = append(out[a], g)
			out[g] = append(out[g], a)
		}
		active = append(active, g)
	}
	return out
}

// older is Facts.Older(a, b) under the stream's drift, and whether it is
// known for good: b's Later ops invoked before a returned are all known.
func (v *resView) older(a, b *resGrant) (bool, bool) {
	switch {
	case a == b:
		return false, true
	case a.ok < b.invoke:
		return true, true
	case b.ok < a.invoke:
		return false, true
	}
	return a.ret < b.holdEnd(a.ok, v.s.drift), v.final || b.laterKnown(a.ok)
}

// resState is a reading of a write's own hi and after.
type resState struct{ hi, after time.Duration }

// decide finds the write of a newer grant that was provably applied before
// the old write o (§4.2, stale-write), with o's hi and after as st says:
// that of the latest-invoked grant with a write whose hi is below o's
// after, when that grant is newer than o's (Facts.Older), else that of the
// latest-invoked newer grant whose acquire overlapped o's grant's. nil
// when there is none. ok is false when the answer may still change: at the
// end it never does.
func (v *resView) decide(o *resWrite, st resState) (nw *resWrite, ok bool) {
	a, t := o.grant, st.after
	if !v.final && t > v.orphanMin {
		return nil, false // a write to come may be applied before t, by the reads
	}
	sure, maybe := v.latestBefore(a, o, st)
	if sure != maybe {
		return nil, false
	}
	if sure != nil {
		older, known := v.older(a, sure)
		if !known {
			return nil, false
		}
		if older {
			return v.first(sure)
		}
	}
	var b, mb *resGrant
	for _, g := range v.overlap[a] {
		if !g.resource || g.dropped || g.minMin >= t {
			continue
		}
		older, known := v.older(a, g)
		if known && !older {
			continue
		}
		if known && g.minMax < t {
			b = later(b, g)
		}
		mb = later(mb, g)
	}
	if b != mb {
		return nil, false
	}
	if b == nil {
		return nil, true
	}
	return v.first(b)
}

// latestBefore returns the latest-invoked grant that surely has a write
// whose hi is below st.after, and the one that may have one, o's own hi
// being st.hi. Every retired grant surely has one.
func (v *resView) latestBefore(a *resGrant, o *resWrite, st resState) (sure, maybe *resGrant) {
	t := st.after
	sure, maybe = v.k.oldBest, v.k.oldBest
	sure = later(sure, v.byMax.best(t, a))
	maybe = later(maybe, v.byMin.best(t, a))
	mx, mn := a.minExcept(o)
	if min(mx, st.hi) < t {
		sure = later(sure, a)
	}
	if min(mn, st.hi) < t {
		maybe = later(maybe, a)
	}
	return sure, maybe
}

// first returns g's first write (smallest hi, then order), and whether it
// is so for good.
func (v *resView) first(g *resGrant) (*resWrite, bool) {
	if g.retFirst != nil {
		return g.retFirst, true
	}
	w, other := g.mx1, g.mn1
	if other == w {
		other = g.mn2
	}
	if other != nil && !before(w.hiMax, w.order, other.hiMin, other.order) {
		return nil, false
	}
	if !v.final && g.latestLive && w.hiMax > min(v.e, v.orphanMin) {
		return nil, false // a write of it to come may come first
	}
	return w, true
}

// resCand is a write that may retire: whether it becomes its grant's
// retired first write (rf), and the newer grant's write applied before it
// under each reading of its value (nwU: unique, nwN: not).
type resCand struct {
	w        *resWrite
	rf       bool
	unique   bool
	nwU, nwN *resWrite
}

// plan lists the live writes that may retire (resourceStream).
func (v *resView) plan() []resCand {
	out := v.s.sc.cands[:0]
	defer func() { v.s.sc.cands = out }()
	for _, w := range v.k.writes {
		if !w.sealed || !v.guarded(w) {
			continue
		}
		c := resCand{w: w}
		if w.grant != nil {
			if !v.judged(&c) || !v.placed(&c) {
				continue
			}
		}
		out = append(out, c)
	}
	return out
}

// guarded reports whether two other live writes begin after w's Hi and
// the largest after it may have, and another's hi cannot fall to w's Hi.
func (v *resView) guarded(w *resWrite) bool {
	thr, n := max(w.hi, w.afterMax), 0
	for _, x := range v.lo {
		if x != nil && x != w && x.lo > thr {
			n++
		}
	}
	if n < 2 {
		return false
	}
	for _, x := range v.dom {
		if x != nil && x != w && x.hiMin > w.hi {
			return true
		}
	}
	return false
}

// judged decides c's write under each reading of its value, and reports
// whether every answer is for good.
func (v *resView) judged(c *resCand) bool {
	w := c.w
	c.unique = w.unique()
	var ok bool
	if c.nwN, ok = v.decide(w, resState{w.hi, w.lo}); !ok {
		return false
	}
	if c.unique {
		if c.nwU, ok = v.decide(w, resState{w.hiT, w.afterT}); !ok {
			return false
		}
	}
	return true
}

// placed reports whether c's write is surely not its grant's first write,
// or surely is (rf), whatever the other writes' hi.
func (v *resView) placed(c *resCand) bool {
	w, g := c.w, c.w.grant
	if g.retFirst != nil {
		return true
	}
	mx, mn := g.mx1, g.mn1
	if mx == w {
		mx = g.mx2
	}
	if mn == w {
		mn = g.mn2
	}
	if mx != nil && before(mx.hiMax, mx.order, w.hiMin, w.order) {
		return true // another write of it surely comes first
	}
	if mn != nil && !before(w.hiMax, w.order, mn.hiMin, mn.order) {
		return false
	}
	if g.latestLive && w.hiMax > min(v.e, v.orphanMin) {
		return false
	}
	c.rf = true
	return true
}

// retire retires the planned writes, but for those that would become their
// grant's first write and did not end before the Lo of every live write
// with a grant left: those, and the ones that end after them, stay.
func (k *resKey) retire(v *resView, plan []resCand) {
	for i := range plan {
		plan[i].w.cand = true
	}
	m := v.e
	for _, w := range k.writes {
		if w.grant != nil && !w.cand {
			m = min(m, w.lo)
		}
	}
	rf := v.s.sc.rf[:0]
	for i := range plan {
		if plan[i].rf {
			rf = append(rf, &plan[i])
		}
	}
	slices.SortFunc(rf, func(a, b *resCand) int { return cmp.Compare(a.w.hi, b.w.hi) })
	v.s.sc.rf = rf
	lo := slices.Grow(v.s.sc.lo[:0], len(rf)+1)[:len(rf)+1] // the smallest lo from each on
	v.s.sc.lo = lo
	lo[len(rf)] = Forever
	for i := len(rf) - 1; i >= 0; i-- {
		lo[i] = min(lo[i+1], rf[i].w.lo)
	}
	n := len(rf)
	for n > 0 && rf[n-1].w.hi >= min(m, lo[n]) {
		n--
	}
	for _, c := range rf[n:] {
		c.w.cand = false
	}
	for i := range plan {
		if c := &plan[i]; c.w.cand {
			k.retireWrite(v, c)
		}
	}
	retired := func(w *resWrite) bool { return w.retired }
	k.writes = slices.DeleteFunc(k.writes, retired)
	for _, g := range k.grants {
		g.writes = slices.DeleteFunc(g.writes, retired)
	}
}

// retireWrite retires c's write, keeping its finding.
func (k *resKey) retireWrite(v *resView, c *resCand) {
	w := c.w
	w.retired, w.cand = true, false
	if g := w.grant; g != nil {
		k.found(v, c)
		if c.rf {
			g.retFirst = w
		}
	}
	if e := w.val; e != nil {
		e.writers--
		if e.writers == 0 {
			k.reads -= len(e.recent)
			delete(k.vals, w.value)
		}
		w.val = nil
	}
	if w.hasVal && w.value != 0 {
		k.written.add(w.value)
	}
}

// found keeps the finding of c's write, if any.
func (k *resKey) found(v *resView, c *resCand) {
	w := c.w
	if c.nwN == nil && (!c.unique || c.nwU == nil) {
		return
	}
	f := &resFinding{order: w.order, cause: w.grant.ok, uniq: c.unique, afterU: w.afterT, afterN: w.lo}
	if c.nwN != nil {
		a := v.staleWrite(w, c.nwN)
		f.n = &a
	}
	if c.unique && c.nwU != nil {
		a := v.staleWrite(w, c.nwU)
		f.u = &a
	}
	k.findings = append(k.findings, f)
	if c.unique {
		k.watched[w.value] = append(k.watched[w.value], f)
	}
}

// merge retires the grants whose writes have retired, that get no more
// writes, whose hold provably ended by now, and that no live grant whose
// acquire overlapped theirs is older than: only the one of largest invoke
// is kept, as oldBest.
func (k *resKey) merge(v *resView, now time.Duration) {
	kept := k.grants[:0]
	for _, g := range k.grants {
		if !k.mergeable(v, g, now) {
			kept = append(kept, g)
			continue
		}
		g.dropped, g.collecting = true, false
		g.owner = nil
		if k.oldBest == nil || g.invoke > k.oldBest.invoke {
			k.oldBest = g
		}
	}
	clear(k.grants[len(kept):])
	k.grants = kept
}

// mergeable reports whether the grant g may retire (merge's rule).
func (k *resKey) mergeable(v *resView, g *resGrant, now time.Duration) bool {
	if len(g.writes) > 0 || g.latestLive || g.retFirst == nil || !g.laterKnown(math.MaxInt) {
		return false
	}
	if g.holdEnd(math.MaxInt, v.s.drift) > now {
		return false
	}
	for _, a := range v.overlap[g] {
		if !a.latestLive && len(a.writes) == 0 {
			continue // it has nothing left to judge
		}
		if older, known := v.older(a, g); older || !known {
			return false
		}
	}
	return true
}

// staleWrite describes the stale write old, applied after nw, whose grant
// is newer (as the check over the whole history words it).
func (v *resView) staleWrite(old, nw *resWrite) Anomaly {
	og, ng := old.grant, nw.grant
	ow, nwk := worker(history.Op{Client: old.client}), worker(history.Op{Client: nw.client})
	msg := fmt.Sprintf("%s wrote %s %s with the lease it took at %s, after %s (lease from %s, asked at %s) had written %s",
		ow, v.k.name, applyText(old.lo, old.hi, old.exact), secs(og.ret), nwk, secs(ng.ret), secs(ng.call), applyText(nw.lo, nw.hi, nw.exact))
	if og.ok > ng.invoke {
		// the acquires overlapped: the lease model orders them
		msg += fmt.Sprintf("; %s's lease could not have ended before %s, after %s's grant returned at %s, so %s's grant came first",
			nwk, secs(ng.holdEnd(og.ok, v.s.drift)), ow, secs(og.ret), ow)
	}
	return Anomaly{Kind: StaleWrite, Key: v.k.name, Ops: []int{old.done, nw.done, og.ok, ng.ok}, Message: msg}
}

// judge returns the key's anomalies at the end: its stale writes, each
// stale grant's behind its first, and its lost update.
func (k *resKey) judge(s *resourceStream) []Anomaly {
	v := k.view(s, Forever, Forever, true)
	type stale struct {
		after        time.Duration
		order, cause int
		a            Anomaly
	}
	var found []stale
	for _, f := range k.findings {
		after, a := f.afterN, f.n
		if f.uniq {
			after, a = f.afterU, f.u
		}
		if a != nil {
			found = append(found, stale{after, f.order, f.cause, *a})
		}
	}
	for _, o := range k.writes {
		if o.grant == nil {
			continue
		}
		if nw, _ := v.decide(o, resState{o.hiMin, o.afterMax}); nw != nil {
			found = append(found, stale{o.afterMax, o.order, o.grant.ok, v.staleWrite(o, nw)})
		}
	}
	slices.SortFunc(found, func(a, b stale) int {
		if c := cmp.Compare(a.after, b.after); c != 0 {
			return c
		}
		return a.order - b.order
	})
	var out []Anomaly
	group := map[int]int{} // the stale grant's ok -> its anomaly in out
	for _, f := range found {
		out = followCause(out, group, f.cause, f.a)
	}
	if a, ok := k.lostUpdate(); ok {
		out = append(out, a)
	}
	return out
}

// lostUpdate is §4.2's lost-update rule over the live writes at the end:
// a retired write is never a possible final value, nor the largest hi nor
// one of the two largest afters.
func (k *resKey) lostUpdate() (Anomaly, bool) {
	ws := k.writes
	// the two largest afters, to find for each write the largest other one
	top1, top2, top1i := never, never, -1
	maxHi := never
	for i, w := range ws {
		if a := w.afterMax; a > top1 {
			top2, top1, top1i = top1, a, i
		} else if a > top2 {
			top2 = a
		}
		maxHi = max(maxHi, w.hiMin)
	}
	best, bestOp, how := int64(math.MinInt64), -1, ""
	consider := func(v int64, op int, text string) {
		if v > best {
			best, bestOp, how = v, op, text
		}
	}
	if finals := k.finals(maxHi); len(finals) > 0 {
		for _, r := range finals {
			if !r.hasVal {
				return Anomaly{}, false // the final value is not known
			}
			consider(r.value, r.done, fmt.Sprintf("%s read %d at %s, after every accepted write", worker(history.Op{Client: r.client}), r.value, secs(r.ret)))
		}
	} else {
		for i, w := range ws {
			other := top1
			if i == top1i {
				other = top2
			}
			if w.hiMin < other {
				continue // another accepted write was provably applied after it
			}
			if !w.hasVal {
				return Anomaly{}, false
			}
			consider(w.value, w.done, fmt.Sprintf("%s's write of %d, applied %s, may have been the last", worker(history.Op{Client: w.client}), w.value, applyText(w.lo, w.hi, w.exact)))
		}
	}
	if k.unk.noValue {
		return Anomaly{}, false
	}
	if u := k.unk; u.has {
		consider(u.best, u.invoke, fmt.Sprintf("%s's write of %d, of unknown outcome, may have been applied last", worker(history.Op{Client: u.client}), u.best))
	}
	if best >= k.n || bestOp < 0 {
		return Anomaly{}, false
	}
	return Anomaly{Kind: LostUpdate, Key: k.name, Ops: []int{bestOp},
		Message: fmt.Sprintf("%s ended at %d at most after %d acknowledged increments (%s)", k.name, best, k.n, how)}, true
}

// finals returns the ok reads invoked after maxHi that returned last (all
// of them, on a tie), in the order of their returns.
func (k *resKey) finals(maxHi time.Duration) []resRead {
	last := never
	var out []resRead
	for _, r := range k.lasts {
		if r.call <= maxHi {
			continue
		}
		switch {
		case r.ret > last:
			last, out = r.ret, append(out[:0], r)
		case r.ret == last:
			out = append(out, r)
		}
	}
	return out
}
