// resource_keys.go holds what the resource stream keeps of each key: the
// outstanding reads and writes that set the frontier E, the reads of each
// value, the writes accepted and of unknown outcome, and the set of values
// written.

package checker

import (
	"slices"
	"sort"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// resKey is what the stream keeps of one key.
type resKey struct {
	name     string
	accepted int64 // its accepted writes, retired ones included
	// writes are its live accepted writes, in the order of their
	// completions.
	writes []*resWrite
	// grants are its live grants with an accepted write; retiredLatest is the
	// retired one of largest invoke.
	grants        []*resGrant
	retiredLatest *resGrant
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
	lasts         []resRead
	unknownWrites resUnknown
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
	// agreedMinRet and agreedMaxCall are the earliest return and latest call of the
	// reads of it that agree with time for its write whatever comes; recent
	// are the others.
	agreedMinRet, agreedMaxCall time.Duration
	recent                      []resSpan
}

// resSpan is a read's call and return.
type resSpan struct{ call, ret time.Duration }

// resFinding is the stale-write finding of a retired write: the anomaly
// and the write's after under each reading of its value (ifUnique: unique,
// ifShared: not), nil where there is none; valueUnique says which reading holds so far.
type resFinding struct {
	order, cause                 int
	valueUnique                  bool
	afterIfUnique, afterIfShared time.Duration
	ifUnique, ifShared           *Anomaly
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
	return &resVal{orphanMin: Forever, agreedMinRet: Forever, agreedMaxCall: never}
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
		k.unknownWrites.noValue = true
	case !k.unknownWrites.has || value > k.unknownWrites.best:
		k.unknownWrites.has, k.unknownWrites.best, k.unknownWrites.invoke, k.unknownWrites.client = true, value, invoke, client
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
		f.valueUnique = false
	}
	delete(k.watched, value)
}

// accept takes the accepted write w.
func (k *resKey) accept(w *resWrite) {
	k.accepted++
	k.writes = append(k.writes, w)
	if g := w.grant; g != nil {
		if !g.hasWrite {
			g.hasWrite = true
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
		e.agreedMinRet = min(e.agreedMinRet, e.orphanMin)
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
				v.agreedMinRet, v.agreedMaxCall = min(v.agreedMinRet, r.ret), max(v.agreedMaxCall, r.call)
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
