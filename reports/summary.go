package reports

import (
	"slices"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// LongHistoryOps is the longest history report.html draws op by op. A
// history of more ops is drawn in summary (Summary), so that the report
// stays a few MB whatever the run's length: its timeline shows the whole
// run downsampled, every fault, anomaly and liveness window exactly, and
// the full detail around every anomaly.
const LongHistoryOps = 20_000

// A summary's timeline has one lane per key (at most maxSummaryLanes; the
// keys past the last but one share the last lane) and cuts the run into
// at most summaryBuckets buckets, summaryBase wide or twice as wide as
// often as the run's length needs: a lane draws at most one bar of holds,
// one of maybe-held spans and one count of completions per bucket.
const (
	summaryBuckets  = 2000
	summaryBase     = time.Millisecond
	maxSummaryLanes = 24
)

// Summary is the drawing of a history computed from it as a stream: fed
// op by op (add, which copies what it needs and never keeps the op), then
// finished (finish). It holds, for each key lane and bucket, the bar of
// the holds that started in it (the checker's beliefs, by the rule of
// docs/history.md §3, followed op by op) and of the maybe-held spans, and
// the counts of completions by outcome; the throughput and latency plots'
// per-bucket counts and latency histograms; every fault, heal and record
// of the nemesis; and the ops and beliefs of the detail windows (the ops
// around each anomaly). Its memory is bounded by the buckets, the beliefs
// and ops in flight, the nemesis's ops and the detail windows, not by the
// history's length.
type Summary struct {
	fol    *follower
	detail *detailCollector
	ops    int
	last   time.Duration
	width  time.Duration
	lanes  []*sumLane
	laneOf map[string]*sumLane
	// nemesis are the nemesis's ops: faults, heals and records.
	nemesis history.History
	plots   *plotSketch
	// queue is set when the history is of the queue workload.
	queue bool
	// path is the file the history was read from, guarded its register's
	// rule (SummarizeFile); the task view of a queue run reads it again.
	path    string
	guarded bool
	// end is where the timeline ends, once finished.
	end      time.Duration
	finished bool
	tl       timeline
}

// sumLane is one key's lane of a summary: by bucket, the bars of its holds
// and maybe-held spans and the counts of its completions (ok, fail, info,
// lease-lost).
type sumLane struct {
	key    string
	keys   int // the keys that share it
	holds  []bar
	maybe  []bar
	counts [][4]uint32
}

// bar is the holds (or maybe-held spans) that started in one bucket: how
// many, how many never ended, the earliest start and latest end, and the
// length of their union, folded as they end: done is the length of the
// runs closed, [cs, ce] the run still growing. The union is exact unless
// two of them overlap (a double hold, drawn exactly in its anomaly's
// window).
type bar struct {
	n, open       uint32
	lo, hi        time.Duration
	done          time.Duration
	cs, ce        time.Duration
	hasRun        bool
	firstI, lastI int // the grant's (or invoke's) op of the first and the last
}

// fold adds the interval [s, e] to b, which never ended when open; i is
// its first op.
func (b *bar) fold(s, e time.Duration, open bool, i int) {
	if b.n == 0 {
		b.lo, b.hi, b.firstI = s, e, i
	}
	b.n++
	if open {
		b.open++
	}
	b.lo, b.hi, b.lastI = min(b.lo, s), max(b.hi, e), i
	switch {
	case !b.hasRun:
		b.cs, b.ce, b.hasRun = s, e, true
	case s > b.ce:
		b.done += b.ce - b.cs
		b.cs, b.ce = s, e
	case s >= b.cs:
		b.ce = max(b.ce, e)
	case e < b.cs:
		b.done += e - s // an earlier interval that ended later, apart
	default:
		b.cs, b.ce = s, max(b.ce, e)
	}
}

// merge adds c, the bar of the next bucket, to b.
func (b *bar) merge(c bar) {
	if c.n == 0 {
		return
	}
	if b.n == 0 {
		*b = c
		return
	}
	n, open, lo, hi, firstI := b.n+c.n, b.open+c.open, min(b.lo, c.lo), max(b.hi, c.hi), b.firstI
	b.fold(c.cs, c.ce, false, c.lastI)
	b.done += c.done
	b.n, b.open, b.lo, b.hi, b.firstI = n, open, lo, hi, firstI
}

// union is the length of the union of b's intervals, those without end
// cut at end.
func (b *bar) union(end time.Duration) time.Duration {
	if !b.hasRun {
		return 0
	}
	return b.done + max(min(b.ce, end)-b.cs, 0)
}

// newSummary returns a Summary whose detail windows are the op index
// ranges (sorted, disjoint).
func newSummary(ranges [][2]int) *Summary {
	s := &Summary{fol: newFollower(), width: summaryBase, laneOf: map[string]*sumLane{}, plots: newPlotSketch()}
	k := 0
	s.detail = newDetailCollector(func(op *history.Op) bool {
		for k < len(ranges) && ranges[k][1] < op.Index {
			k++
		}
		return k < len(ranges) && ranges[k][0] <= op.Index
	})
	s.fol.started = s.detail.started
	s.fol.ended = s.ended
	return s
}

// add feeds the history's next op; op is not kept.
func (s *Summary) add(op *history.Op) {
	s.ops++
	s.last = max(s.last, op.Time)
	for s.last/s.width >= summaryBuckets {
		s.double()
	}
	if op.IsNemesis() {
		c := *op
		c.Value = slices.Clone(op.Value)
		s.nemesis = append(s.nemesis, c)
		s.queue = s.queue || op.IsTasks()
	}
	s.detail.before(op, s.fol)
	inv := s.fol.add(op)
	s.detail.after(op, inv)
	s.plots.add(op, inv)
	if op.IsNemesis() || op.Type == history.Invoke {
		return
	}
	l, b := s.lane(op.Key), int(op.Time/s.width)
	c := grow(&l.counts, b)
	if op.F == history.FLeaseLost {
		c[3]++
	} else {
		c[outcomeOf(op.Type)]++
	}
	if op.F == history.FAcquire && op.Type == history.Info && inv != nil && inv.F == op.F {
		end := checker.Forever
		if inv.TTL > 0 {
			end = inv.Time + inv.TTL
		}
		if end > op.Time {
			grow(&l.maybe, b).fold(op.Time, end, end == checker.Forever, inv.Index)
		}
	}
}

// ended folds a belief whose end is known into its lane.
func (s *Summary) ended(b *drawnHold) {
	s.detail.ended(b)
	l := s.lane(b.Key)
	grow(&l.holds, int(b.Start/s.width)).fold(b.Start, b.End, b.End == checker.Forever, b.I)
}

// grow returns the element i of *xs, growing it to hold i.
func grow[T any](xs *[]T, i int) *T {
	for len(*xs) <= i {
		var zero T
		*xs = append(*xs, zero)
	}
	return &(*xs)[i]
}

// lane returns the lane of key k.
func (s *Summary) lane(k string) *sumLane {
	if l := s.laneOf[k]; l != nil {
		return l
	}
	var l *sumLane
	if len(s.lanes) < maxSummaryLanes {
		l = &sumLane{key: k}
		s.lanes = append(s.lanes, l)
	} else {
		l = s.lanes[len(s.lanes)-1]
	}
	l.keys++
	s.laneOf[k] = l
	return l
}

// double doubles the buckets' width, merging them by pairs.
func (s *Summary) double() {
	s.width *= 2
	for _, l := range s.lanes {
		l.holds = mergePairs(l.holds, func(a *bar, b bar) { a.merge(b) })
		l.maybe = mergePairs(l.maybe, func(a *bar, b bar) { a.merge(b) })
		l.counts = mergePairs(l.counts, func(a *[4]uint32, b [4]uint32) {
			for k := range a {
				a[k] += b[k]
			}
		})
	}
}

// mergePairs merges the elements 2i and 2i+1 of xs into element i.
func mergePairs[T any](xs []T, merge func(*T, T)) []T {
	n := (len(xs) + 1) / 2
	for i := range n {
		xs[i] = xs[2*i]
		if 2*i+1 < len(xs) {
			merge(&xs[i], xs[2*i+1])
		}
	}
	var zero T
	for i := n; i < len(xs); i++ {
		xs[i] = zero
	}
	return xs[:n]
}

// finish ends the history: the beliefs still open run to their until or
// on without end, and the detail windows are drawn.
func (s *Summary) finish() {
	if s.finished {
		return
	}
	s.finished = true
	s.end = max(s.last, s.fol.finish())
	s.tl = timeline{Last: s.last, End: s.end}
	s.tl.Nemesis = buildNemesis(s.nemesis, s.end)
	s.tl.Availability = buildAvailability(s.nemesis, s.end)
	s.tl.Host = checker.HostEvents(s.nemesis)
	s.tl = s.detail.timeline(s.tl)
}
