package checker

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// holdStream is the double-hold check of a well-formed history fed to it
// op by op, in order (add), whose result comes once the history has ended
// (result). Beliefs (docs/history.md §3) start in the order of their
// grants' oks, and a belief that has ended ended no later than the op that
// ended it, so a belief that starts can overlap only beliefs still open.
// It holds each worker process's open belief and until of each key, the
// open beliefs of each key, and the beliefs that overlap another (which
// the anomalies name): its memory is bounded by the beliefs open at once
// and the overlaps found, not by the history's length.
type holdStream struct {
	n     int
	procs procTable[holdProc]
	open  map[string][]*streamBelief // by key: the open beliefs, in the order they started
	// overlaps are the pairs of overlapping beliefs found so far, with
	// candidates whose earlier belief is still open.
	overlaps []holdPair
}

// streamBelief is one belief as the double-hold check reads it.
type streamBelief struct {
	seq     int // its place in the order beliefs started
	key     string
	proc    int
	owner   *holdProc
	client  int
	ok      int
	start   time.Duration
	end     time.Duration
	endOp   int
	reason  EndReason
	until   time.Duration
	closed  bool
	overlap []*streamBelief // later beliefs of other processes that started while it was open
}

// holdPair is an earlier belief a and a later one b, of other processes,
// that started while a was open.
type holdPair struct{ a, b *streamBelief }

// holdProc is what holdStream keeps of one worker process: the keys it was
// granted (a process touches few keys).
type holdProc struct {
	keys []holdKey
}

// holdKey is a process's state of one key it was granted.
type holdKey struct {
	key    string
	belief *streamBelief // the open belief, nil when none
	until  time.Duration // the until in force of the open belief
}

// of returns p's state of key k, nil when p was never granted k.
func (p *holdProc) of(k string) *holdKey {
	for i := range p.keys {
		if p.keys[i].key == k {
			return &p.keys[i]
		}
	}
	return nil
}

func newHoldStream() *holdStream {
	return &holdStream{open: map[string][]*streamBelief{}}
}

// add feeds the history's next op.
func (s *holdStream) add(op *history.Op) {
	i := s.n
	s.n++
	if op.IsNemesis() {
		return
	}
	p := s.procs.get(op.Process)
	if p == nil {
		p = &holdProc{}
		s.procs.set(op.Process, p)
	}
	if op.Type == history.Invoke {
		switch op.F {
		case history.FRelease:
			s.close(p, op.Key, op.Time, i, EndRelease)
		case history.FLeaseLost:
			s.close(p, op.Key, op.Time, i, EndLeaseLost)
		}
		return
	}
	switch {
	case op.F == history.FAcquire && op.Type == history.OK:
		s.close(p, op.Key, op.Time, i, EndReacquire)
		s.start(p, op, i)
	case op.F == history.FRenew && op.Type == history.OK:
		if hk := p.of(op.Key); hk != nil && hk.belief != nil && op.Until != 0 && (hk.until == 0 || op.Time <= hk.until) {
			hk.until = op.Until
		}
	}
	if op.Type == history.Info {
		for _, hk := range p.keys {
			s.close(p, hk.key, op.Time, i, EndCrash)
		}
		s.procs.set(op.Process, nil) // it issues nothing more
	}
}

// start opens the belief of the grant op (at index i) of process p.
func (s *holdStream) start(p *holdProc, op *history.Op, i int) {
	b := &streamBelief{seq: i, key: op.Key, proc: op.Process, owner: p, client: op.Client, ok: i, start: op.Time, end: Forever, endOp: -1, reason: EndOpen}
	for _, a := range s.open[op.Key] {
		// a belief whose until passed before b started ends by then: no
		// renewal that returns after its until moves it any more
		if u := a.owner.of(a.key).until; a.proc != b.proc && (u == 0 || u >= b.start) {
			a.overlap = append(a.overlap, b)
		}
	}
	s.open[op.Key] = append(s.open[op.Key], b)
	if hk := p.of(op.Key); hk != nil {
		hk.belief, hk.until = b, op.Until
	} else {
		p.keys = append(p.keys, holdKey{key: op.Key, belief: b, until: op.Until})
	}
}

// close ends p's open belief of key k, if any, at the op at index i (time
// at), or at its until when that came first.
func (s *holdStream) close(p *holdProc, k string, at time.Duration, i int, why EndReason) {
	hk := p.of(k)
	if hk == nil || hk.belief == nil {
		return
	}
	b, until := hk.belief, hk.until
	hk.belief, hk.until = nil, 0
	b.end, b.endOp, b.reason, b.until = at, i, why, until
	if until != 0 && until < at {
		b.end, b.endOp, b.reason = max(until, b.start), -1, EndUntil
	}
	s.ended(b)
}

// ended takes belief b, whose end is now known: it leaves the open
// beliefs of its key and keeps the later beliefs it overlaps.
func (s *holdStream) ended(b *streamBelief) {
	b.closed = true
	open := s.open[b.key]
	if j := slices.Index(open, b); j >= 0 {
		s.open[b.key] = slices.Delete(open, j, j+1)
	}
	for _, later := range b.overlap {
		if b.end > later.start {
			s.overlaps = append(s.overlaps, holdPair{b, later})
		}
	}
	b.overlap = nil
}

// result ends the history, where the beliefs still open run to their
// until or on without end, and returns the check's result.
func (s *holdStream) result(ctx context.Context, name string) Result {
	start := time.Now()
	var still []*streamBelief
	s.procs.each(func(_ int, p *holdProc) {
		for _, hk := range p.keys {
			if b := hk.belief; b != nil {
				b.until = hk.until
				if b.until != 0 {
					b.end = max(b.until, b.start)
				}
				still = append(still, b)
			}
		}
	})
	slices.SortFunc(still, func(x, y *streamBelief) int { return cmp.Compare(x.seq, y.seq) })
	for _, b := range still {
		s.ended(b)
	}
	if ctx.Err() != nil {
		return Result{Name: name, Verdict: Unknown, Elapsed: time.Since(start), Anomalies: []Anomaly{}, Note: stopNote(ctx)}
	}
	// The order in which the batch sweep finds them: by the later belief,
	// then the earlier one's start.
	pairs := slices.DeleteFunc(s.overlaps, func(pr holdPair) bool { return pr.b.end <= pr.b.start || pr.a.end <= pr.a.start })
	slices.SortFunc(pairs, func(x, y holdPair) int {
		return cmp.Or(cmp.Compare(x.b.seq, y.b.seq), cmp.Compare(x.a.start, y.a.start), cmp.Compare(x.a.seq, y.a.seq))
	})
	var anomalies []Anomaly
	group := map[int]int{}
	for _, pr := range pairs {
		anomalies = followCause(anomalies, group, pr.a.seq, streamDoubleHold(pr.a, pr.b))
	}
	return finish(name, start, anomalies, "")
}

// streamDoubleHold describes the overlap of an earlier belief a with b, as
// doubleHold does.
func streamDoubleHold(ba, bb *streamBelief) Anomaly {
	key := bb.key
	ops := []int{ba.ok, bb.ok}
	for _, e := range []int{ba.endOp, bb.endOp} {
		if e >= 0 && !slices.Contains(ops, e) {
			ops = append(ops, e)
		}
	}
	msg := fmt.Sprintf("worker %d acquired %s at %s while worker %d held it since %s", bb.client, key, secs(bb.start), ba.client, secs(ba.start))
	if ba.until != 0 {
		msg += ", valid until " + secs(ba.until)
	}
	switch ba.reason {
	case EndRelease:
		msg += fmt.Sprintf(", and kept it until its release at %s", secs(ba.end))
	case EndLeaseLost:
		msg += fmt.Sprintf(", and kept it until it learned at %s that its lease was lost", secs(ba.end))
	case EndCrash:
		msg += fmt.Sprintf(", and kept it until its process crashed at %s", secs(ba.end))
	case EndReacquire:
		msg += fmt.Sprintf(", and kept it until it acquired it again at %s", secs(ba.end))
	case EndOpen:
		if ba.until == 0 {
			msg += ", and never released it"
		} else {
			msg += ", and never released it before then"
		}
	}
	return Anomaly{Kind: DoubleHold, Key: key, Ops: ops, Message: msg}
}
