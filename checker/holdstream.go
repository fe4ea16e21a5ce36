package checker

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"
)

// holdStream is the double-hold check of a well-formed history, reading
// who held which lock when from the Follower's events (hold), fed in
// order, whose result comes once the history has ended (result). Beliefs
// (docs/history.md §3) start in the order of their grants' oks, and a
// belief that has ended ended no later than the op that ended it, so a
// belief that starts can overlap only beliefs still open. It holds the
// open beliefs of each key, and the beliefs that overlap another (which
// the anomalies name): its memory is bounded by the beliefs open at once
// and the overlaps found, not by the history's length.
type holdStream struct {
	open  map[string][]*streamBelief // by key: the open beliefs, in the order they started
	byNum map[int]*streamBelief      // the open beliefs, by their grant's number
	// overlaps are the pairs of overlapping beliefs found so far, with
	// candidates whose earlier belief is still open.
	overlaps []holdPair
}

// streamBelief is one belief as the double-hold check reads it.
type streamBelief struct {
	seq    int // its grant's ok: its place in the order beliefs started
	key    string
	proc   int
	client int
	start  time.Duration
	end    time.Duration
	endOp  int
	reason EndReason
	// until is the until in force: while it is open, as it moves; once it
	// ended, when it ended
	until   time.Duration
	overlap []*streamBelief // later beliefs of other processes that started while it was open
}

// holdPair is an earlier belief a and a later one b, of other processes,
// that started while a was open.
type holdPair struct{ a, b *streamBelief }

func newHoldStream() *holdStream {
	return &holdStream{open: map[string][]*streamBelief{}, byNum: map[int]*streamBelief{}}
}

// hold feeds the Follower's next event.
func (s *holdStream) hold(e *HoldEvent) {
	switch e.Kind {
	case HoldGranted:
		s.start(e)
	case HoldUntil:
		if b := s.byNum[e.Grant]; b != nil {
			b.until = e.Until
		}
	case HoldEnded:
		b := s.byNum[e.Grant]
		if b == nil {
			return
		}
		delete(s.byNum, e.Grant)
		b.end, b.endOp, b.reason, b.until = e.Time, e.EndOp(), e.Reason, e.Until
		s.ended(b)
	}
}

// start opens the belief of the grant e.
func (s *holdStream) start(e *HoldEvent) {
	b := &streamBelief{seq: e.OK(), key: e.Key, proc: e.Process, client: e.Client, start: e.Time, end: Forever, endOp: -1, reason: EndOpen, until: e.Until}
	for _, a := range s.open[e.Key] {
		// a belief whose until passed before b started ends by then: no
		// renewal that returns after its until moves it any more
		if a.proc != b.proc && (a.until == 0 || a.until >= b.start) {
			a.overlap = append(a.overlap, b)
		}
	}
	s.open[e.Key] = append(s.open[e.Key], b)
	s.byNum[e.Grant] = b
}

// ended takes belief b, whose end is now known: it leaves the open
// beliefs of its key and keeps the later beliefs it overlaps.
func (s *holdStream) ended(b *streamBelief) {
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

// result returns the check's result once the history has ended (and the
// Follower's events of its end, which end the beliefs still open, were
// fed).
func (s *holdStream) result(ctx context.Context, name string) Result {
	start := time.Now()
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
	ops := []int{ba.seq, bb.seq}
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
