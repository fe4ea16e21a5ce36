package reports

import (
	"cmp"
	"slices"
	"sort"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// Around each op an anomaly names, a long history's report draws
// detailRadius ops on either side in full detail, as a short history's
// report draws every op; when the windows of every anomaly together would
// hold more than maxDetailOps ops, the radius shrinks (down to the named
// ops alone, which are always drawn).
const (
	detailRadius = 200
	maxDetailOps = 50_000
)

// detailRanges returns the windows of op indexes that a long history's
// report draws in full detail: the ops every anomaly of checkers names,
// each with the widest radius (detailRadius at most) that keeps the
// windows under maxDetailOps ops together; sorted and disjoint.
func detailRanges(checkers []checker.Result) [][2]int {
	var named []int
	for _, r := range checkers {
		for _, a := range r.Anomalies {
			named = append(named, a.Ops...)
		}
	}
	slices.Sort(named)
	named = slices.Compact(named)
	for _, radius := range []int{detailRadius, 100, 50, 20, 10, 5, 2, 0} {
		rs := rangesAround(named, radius)
		total := 0
		for _, r := range rs {
			total += r[1] - r[0] + 1
		}
		if total <= maxDetailOps || radius == 0 {
			return rs
		}
	}
	return nil
}

// rangesAround returns the windows [i-radius, i+radius] of the sorted ops,
// merged where they touch.
func rangesAround(ops []int, radius int) [][2]int {
	var out [][2]int
	for _, i := range ops {
		lo, hi := max(i-radius, 0), i+radius
		if n := len(out); n > 0 && lo <= out[n-1][1]+1 {
			out[n-1][1] = max(out[n-1][1], hi)
			continue
		}
		out = append(out, [2]int{lo, hi})
	}
	return out
}

// detailCollector collects, from a history fed op by op with a follower
// (before, then the follower, then after), what a timeline draws in the
// windows that in says an op is inside: the ops inside, the op each
// completion inside completes, the completion of each op invoked inside
// or in flight when a window starts, the ops of an acquire of unknown
// outcome whose maybe-held span runs into a window, and the beliefs that
// start inside or are open when a window starts. It copies the ops it
// keeps: its memory is bounded by the ops of its windows, not by the
// history's length.
type detailCollector struct {
	in      func(op *history.Op) bool
	ops     history.History
	inside  bool
	waiting map[int]bool        // processes whose collected invoke has not completed
	flagged map[*drawnHold]bool // beliefs drawn, still open
	holds   []drawnHold         // beliefs drawn, ended
	// extents are the time extents of the windows, as read.
	extents [][2]time.Duration
	// count is the number of ops inside the windows.
	count int
	// maybes are the acquires of unknown outcome whose maybe-held span may
	// still run into a window: invoke and completion.
	maybes [][2]history.Op
	// maybeEnd is the latest end of a maybe-held span collected
	// (checker.Forever for one that runs to the end of the history).
	maybeEnd time.Duration
}

// maxMaybes bounds the maybe-held spans without a ttl (which run to the
// end of the history) that a detailCollector remembers: the latest ones.
const maxMaybes = 64

func newDetailCollector(in func(op *history.Op) bool) *detailCollector {
	return &detailCollector{in: in, waiting: map[int]bool{}, flagged: map[*drawnHold]bool{}}
}

// keep collects a copy of op, with its own copy of its value.
func (d *detailCollector) keep(op *history.Op) {
	c := *op
	c.Value = slices.Clone(op.Value)
	d.ops = append(d.ops, c)
}

// before takes op before the follower f does: where a window starts, the
// beliefs open and the ops in flight are drawn in it.
func (d *detailCollector) before(op *history.Op, f *follower) {
	in := d.in(op)
	if in {
		d.count++
		if d.inside {
			d.extents[len(d.extents)-1][1] = op.Time
		} else {
			d.extents = append(d.extents, [2]time.Duration{op.Time, op.Time})
			d.enter(f)
		}
	}
	d.inside = in
}

// enter starts a window: the beliefs open, the ops in flight and the
// maybe-held spans still running are drawn in it.
func (d *detailCollector) enter(f *follower) {
	f.eachOpen(func(b *drawnHold) { d.flagged[b] = true })
	for pid, p := range f.procs {
		if p.hasPending && !d.waiting[pid] {
			d.keep(&p.pending)
			d.waiting[pid] = true
		}
	}
	for _, m := range d.maybes {
		d.keep(&m[0])
		d.keep(&m[1])
		d.noteMaybe(&m[0])
	}
	d.maybes = d.maybes[:0]
}

// started takes a belief that starts: drawn when it starts inside.
func (d *detailCollector) started(b *drawnHold) {
	if d.inside {
		d.flagged[b] = true
	}
}

// ended takes a belief whose end is known.
func (d *detailCollector) ended(b *drawnHold) {
	if d.flagged[b] {
		delete(d.flagged, b)
		d.holds = append(d.holds, *b)
	}
}

// after takes op once the follower has, with inv the outstanding invoke op
// completes (nil when none).
func (d *detailCollector) after(op *history.Op, inv *history.Op) {
	if op.IsNemesis() {
		if d.inside {
			d.keep(op)
		}
		return
	}
	if op.Type == history.Invoke {
		if d.inside {
			d.keep(op)
			d.waiting[op.Process] = true
		}
		return
	}
	if d.inside || d.waiting[op.Process] {
		if !d.waiting[op.Process] && inv != nil {
			d.keep(inv)
		}
		delete(d.waiting, op.Process)
		d.keep(op)
		if op.F == history.FAcquire && op.Type == history.Info && inv != nil {
			d.noteMaybe(inv)
		}
		return
	}
	d.remember(op, inv)
}

// noteMaybe records the end of the maybe-held span of the acquire invoked
// at inv.
func (d *detailCollector) noteMaybe(inv *history.Op) {
	if inv.TTL > 0 {
		d.maybeEnd = max(d.maybeEnd, inv.Time+inv.TTL)
	} else {
		d.maybeEnd = checker.Forever
	}
}

// remember keeps an acquire of unknown outcome outside the windows while
// its maybe-held span may still run into one, and forgets those that
// ended before op.
func (d *detailCollector) remember(op *history.Op, inv *history.Op) {
	ended := func(m [2]history.Op) bool { return m[0].TTL > 0 && m[0].Time+m[0].TTL <= op.Time }
	if len(d.maybes) > 0 && ended(d.maybes[0]) {
		d.maybes = slices.DeleteFunc(d.maybes, ended)
	}
	if op.F != history.FAcquire || op.Type != history.Info || inv == nil || inv.F != op.F {
		return
	}
	if inv.TTL > 0 && inv.Time+inv.TTL <= op.Time {
		return // no maybe-held span
	}
	c := *op
	c.Value = nil
	d.maybes = append(d.maybes, [2]history.Op{*inv, c})
	if n := len(d.maybes); n > maxMaybes {
		d.maybes = slices.Delete(d.maybes, 0, n-maxMaybes)
	}
}

// settled reports whether everything drawn in the windows so far has
// ended by op, which is past every window: no op collected is still in
// flight, no belief drawn is still open, no maybe-held span runs on.
func (d *detailCollector) settled(op *history.Op) bool {
	return !d.inside && len(d.waiting) == 0 && len(d.flagged) == 0 && op.Time >= d.maybeEnd
}

// timeline draws what was collected, with the history's nemesis intervals,
// availability bands and end (those of the whole history) from tl.
func (d *detailCollector) timeline(tl timeline) timeline {
	sort.SliceStable(d.ops, func(a, b int) bool { return d.ops[a].Index < d.ops[b].Index })
	d.ops = slices.CompactFunc(d.ops, func(a, b history.Op) bool { return a.Index == b.Index })
	facts := checker.Analyze(d.ops)
	tl.facts = facts
	// in the order of their grants, as the checker lists them
	slices.SortFunc(d.holds, func(a, b drawnHold) int { return cmp.Compare(a.I, b.I) })
	tl.Rows, tl.Spans = drawLanes(d.ops, facts.Writes, d.holds, tl.End)
	return tl
}
