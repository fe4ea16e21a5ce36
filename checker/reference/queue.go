package reference

import (
	"slices"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// This file states the queue rules of docs/history.md (§3 "Tasks", §4.7)
// as directly as the specification does: every hold's end is found by
// scanning every call, and every pair of holds is compared.

// hold is one task named by one capture ok.
type hold struct {
	task, queue string
	entry       history.CapturedTask
	c           *opCall
}

// holds returns every hold of the history, in the order of the capture
// oks.
func (x *parsed) holds() []hold {
	var out []hold
	for _, c := range x.calls {
		if c.f != history.FCapture || c.typ != history.OK {
			continue
		}
		ts, _ := history.CapturedOf(c.doneOp)
		for _, t := range ts {
			out = append(out, hold{task: t.Task, queue: c.key, entry: t, c: c})
		}
	}
	slices.SortStableFunc(out, func(a, b hold) int { return a.c.done - b.c.done })
	return out
}

// taskHoldEnd is §3's end of hold h, as a history index (never when open),
// and whether a reaper pass ended it: the earliest of the invoke, after h's
// ok, of a set-status of h's task by h's process that did not fail, and,
// for each reap that did not fail and, when ok, names the task and
// completed after h's capture was invoked, its invoke, or h's ok when it
// was invoked before.
func (x *parsed) taskHoldEnd(h hold) (int64, bool) {
	end, reaped := never, false
	for _, c := range x.calls {
		if c.typ == history.Fail {
			continue
		}
		switch {
		case c.f == history.FSetStatus && c.proc == h.c.proc && c.key == h.task && c.inv > h.c.done:
			if int64(c.inv) < end {
				end, reaped = int64(c.inv), false
			}
		case c.f == history.FReap:
			if c.typ == history.OK {
				ts, _ := history.ReapedOf(c.doneOp)
				if !slices.Contains(ts, h.task) || c.done < h.c.inv {
					continue
				}
			}
			if e := int64(max(c.inv, h.c.done)); e < end {
				end, reaped = e, true
			}
		}
	}
	return end, reaped
}

// specs returns the tasks of the first task table record (nil when none)
// and whether there is one.
func (x *parsed) specs() (map[string]history.TaskSpec, bool) {
	for _, op := range x.h {
		if op.IsTasks() {
			ts, _ := history.TasksOf(op)
			m := map[string]history.TaskSpec{}
			for _, t := range ts {
				if _, dup := m[t.Task]; !dup {
					m[t.Task] = t
				}
			}
			return m, true
		}
	}
	return nil, false
}

// queueAnomalies returns the kinds of §4.7's safety anomalies found.
func queueAnomalies(x *parsed) []string {
	var kinds []string
	hs := x.holds()
	specs, _ := x.specs()
	count := map[string]int{}
	flagged := map[string]bool{} // the tasks with a double-capture or stale-status
	for i, a := range hs {
		count[a.task]++
		endA, _ := x.taskHoldEnd(a)
		for _, b := range hs[i+1:] {
			if a.task != b.task || a.c.proc == b.c.proc {
				continue
			}
			endB, _ := x.taskHoldEnd(b)
			if int64(a.c.done) < endB && int64(b.c.done) < endA {
				kinds = append(kinds, checker.DoubleCapture)
				flagged[a.task] = true
			}
		}
		q := a.entry.Queue
		if s, ok := specs[a.task]; ok {
			q = s.Queue
		}
		if q != "" && q != a.queue {
			kinds = append(kinds, checker.CrossQueue)
		}
	}
	for t, n := range count {
		if s, ok := specs[t]; ok && s.Budget != nil && n > *s.Budget {
			kinds = append(kinds, checker.BudgetOverspent)
		}
	}
	// stale-status
	for _, s := range x.calls {
		if s.f != history.FSetStatus || s.typ != history.OK {
			continue
		}
		var H *hold
		for i := range hs {
			if hs[i].task == s.key && hs[i].c.proc == s.proc && hs[i].c.done < s.inv {
				H = &hs[i]
			}
		}
		if H == nil {
			continue
		}
		stale := false
		for _, r := range x.calls {
			if r.f != history.FReap || r.typ != history.OK || r.inv <= H.c.done || r.done >= s.inv {
				continue
			}
			if ts, _ := history.ReapedOf(r.doneOp); !slices.Contains(ts, s.key) {
				continue
			}
			for _, c := range hs {
				if c.task != s.key || c.c.proc == s.proc || c.c.inv <= r.done || c.c.done >= s.inv {
					continue
				}
				if end, _ := x.taskHoldEnd(c); end > int64(s.done) {
					stale = true
				}
			}
		}
		if stale {
			kinds = append(kinds, checker.StaleStatus)
			flagged[s.key] = true
		}
	}
	for _, a := range hs {
		if !flagged[a.task] && !x.cleanReading(a.task, hs) {
			kinds = append(kinds, checker.DoubleCapture)
			flagged[a.task] = true
		}
	}
	return kinds
}

// statusEnd is the invoke of the first set-status of h's task by h's
// process, invoked after h's ok, that did not fail; never when none.
func (x *parsed) statusEnd(h hold) int64 {
	end := never
	for _, c := range x.calls {
		if c.f == history.FSetStatus && c.typ != history.Fail && c.proc == h.c.proc && c.key == h.task && c.inv > h.c.done {
			end = min(end, int64(c.inv))
		}
	}
	return end
}

// gap is §4.7's gap between the run of holds run (of one process) and
// the next hold of another process, next, that needs a set-back: open
// lists the holds of the run that its process's set-status did not end
// before next's ok.
type gap struct {
	run, open []hold
	next      hold
}

// cleanReading reports whether some reading of the reaps that may set
// task t back is free of anomalies (§4.7, "A reaper pass sets a task back
// at most once"): whether every gap between runs of t's holds hs that
// needs a set-back can be given a set-back of its own that may fill it.
func (x *parsed) cleanReading(t string, hs []hold) bool {
	var mine []hold
	for _, h := range hs {
		if h.task == t {
			mine = append(mine, h)
		}
	}
	var gaps []gap
	for i := 0; i < len(mine); {
		j := i
		for j < len(mine) && mine[j].c.proc == mine[i].c.proc {
			j++
		}
		if j == len(mine) {
			break
		}
		g := gap{run: mine[i:j], next: mine[j]}
		for _, h := range g.run {
			if x.statusEnd(h) > int64(g.next.c.done) {
				g.open = append(g.open, h)
			}
		}
		if len(g.open) > 0 {
			gaps = append(gaps, g)
		}
		i = j
	}
	var backs []*opCall // each time a reap may set t back: each naming by an ok, once if of unknown outcome
	for _, c := range x.calls {
		if c.f != history.FReap || c.typ == history.Fail {
			continue
		}
		if c.unknown {
			backs = append(backs, c)
			continue
		}
		ts, _ := history.ReapedOf(c.doneOp)
		for _, n := range ts {
			if n == t {
				backs = append(backs, c)
			}
		}
	}
	used := make([]bool, len(backs))
	var fill func(g int) bool
	fill = func(g int) bool {
		if g == len(gaps) {
			return true
		}
		for k, b := range backs {
			if !used[k] && x.mayFill(b, gaps[g], mine) {
				used[k] = true
				if fill(g + 1) {
					return true
				}
				used[k] = false
			}
		}
		return false
	}
	return fill(0)
}

// mayFill reports whether reap r may set the task back in gap g: it was
// invoked before g's next hold returned; if ok, it completed after the
// capture of one of g's open holds was invoked; if of unknown outcome, its
// setting the task back there makes no set-status stale: no set-status ok
// S of the task by the run's process, whose latest hold H with its ok
// before S's invoke is in the run and was captured before r's invoke,
// while a hold C (of mine, the task's holds) of another process, g's next
// hold or a later one, invoked after r's invoke and returned before S's
// invoke ends, not counting r, after S's ok.
func (x *parsed) mayFill(r *opCall, g gap, mine []hold) bool {
	if r.inv >= g.next.c.done {
		return false
	}
	if !r.unknown {
		return slices.ContainsFunc(g.open, func(h hold) bool { return r.done > h.c.inv })
	}
	p := g.run[0].c.proc
	for _, s := range x.calls {
		if s.f != history.FSetStatus || s.typ != history.OK || s.proc != p || s.key != g.next.task {
			continue
		}
		var H *hold
		for i := range mine {
			if mine[i].c.proc == p && mine[i].c.done < s.inv {
				H = &mine[i]
			}
		}
		if H == nil || !slices.ContainsFunc(g.run, func(h hold) bool { return h.c == H.c }) || r.inv < H.c.done {
			continue
		}
		for _, c := range mine {
			if c.c.proc != p && c.c.done >= g.next.c.done && c.c.inv > r.inv && c.c.done < s.inv && x.endWithout(c, r) > int64(s.done) {
				return false
			}
		}
	}
	return true
}

// endWithout is §3's end of hold h with reap r left out.
func (x *parsed) endWithout(h hold, r *opCall) int64 {
	end := x.statusEnd(h)
	for _, c := range x.calls {
		if c == r || c.f != history.FReap || c.typ == history.Fail {
			continue
		}
		if c.typ == history.OK {
			ts, _ := history.ReapedOf(c.doneOp)
			if !slices.Contains(ts, h.task) || c.done < h.c.inv {
				continue
			}
		}
		end = min(end, int64(max(c.inv, h.c.done)))
	}
	return end
}

// excuses is §4.7's capture u of unknown outcome that excuses task t of
// lost-task: u is pending at the end, or after u's invoke a set-status of
// t that did not fail was invoked, or a reap that did not fail may have
// set t back (an ok naming t that completed after u's invoke, or one of
// unknown outcome).
func (x *parsed) excuses(u *opCall, t string) bool {
	if u.done < 0 {
		return true
	}
	for _, c := range x.calls {
		if c.typ == history.Fail {
			continue
		}
		if c.f == history.FSetStatus && c.key == t && c.inv > u.inv {
			return true
		}
		if c.f == history.FReap && c.unknown {
			return true
		}
		if c.f == history.FReap && c.typ == history.OK && c.done > u.inv {
			if ts, _ := history.ReapedOf(c.doneOp); slices.Contains(ts, t) {
				return true
			}
		}
	}
	return false
}

// unexcused returns the captures of queue q of unknown outcome that
// completed after index after, and whether one of them excuses task t;
// the finding's window then starts no earlier than the last of their
// completions.
func (x *parsed) unexcused(q, t string, after int) ([]*opCall, bool) {
	var out []*opCall
	for _, u := range x.calls {
		if u.f != history.FCapture || u.key != q || !u.unknown || (u.done >= 0 && u.done <= after) {
			continue
		}
		if x.excuses(u, t) {
			return nil, true
		}
		out = append(out, u)
	}
	return out, false
}

// lastRet returns the latest of start and the completions of us.
func lastRet(start int64, us []*opCall) int64 {
	for _, u := range us {
		start = max(start, u.ret)
	}
	return start
}

// lostTasks returns §4.7's lost-task findings over a history that ends at
// end, and whether the history has a capture (its tasks are judged).
func (x *parsed) lostTasks(end int64) ([]Finding, bool) {
	judged := false
	for _, c := range x.calls {
		if c.f == history.FCapture {
			judged = true
		}
	}
	if !judged {
		return nil, false
	}
	var out []Finding
	hs := x.holds()
	// a task left in progress
	for i, l := range hs {
		last := true
		for _, o := range hs[i+1:] {
			if o.task == l.task {
				last = false
			}
		}
		if !last {
			continue
		}
		if e, _ := x.taskHoldEnd(l); e != never {
			continue
		}
		if _, crashed := x.crashIdx[l.c.proc]; !crashed {
			continue
		}
		freed := false
		for _, c := range x.calls {
			if c.typ != history.Fail && c.f == history.FSetStatus && c.key == l.task && c.inv > l.c.done {
				freed = true
			}
		}
		if !freed {
			out = append(out, Finding{Kind: checker.LostTask, Key: l.task, Start: x.crash[l.c.proc], End: end})
		}
	}
	// a task passed over after it became capturable again
	specs, tabled := x.specs()
	for i, l := range hs {
		if slices.ContainsFunc(hs[i+1:], func(o hold) bool { return o.task == l.task }) {
			continue
		}
		if f, ok := x.passedOver(l, hs, specs, end); ok {
			out = append(out, f)
		}
	}
	if !tabled {
		return out, true
	}
	// a task never captured although asked for
	for t, s := range specs {
		if s.Budget != nil && *s.Budget == 0 || slices.ContainsFunc(hs, func(h hold) bool { return h.task == t }) {
			continue
		}
		var short *opCall
		for _, c := range x.calls {
			if c.f != history.FCapture || c.key != s.Queue || c.typ != history.OK {
				continue
			}
			limit, _ := c.invOp.Int()
			got, _ := history.CapturedOf(c.doneOp)
			if int64(len(got)) < limit && (short == nil || c.done < short.done) {
				short = c
			}
		}
		unknown, excused := x.unexcused(s.Queue, t, -1)
		if !excused && short != nil {
			out = append(out, Finding{Kind: checker.LostTask, Key: t, Start: lastRet(short.call, unknown), End: end})
		}
	}
	return out, true
}

// passedOver is §4.7's lost-task of a task passed over: c is the task's
// latest capture ok; the task has budget left (c's entry gives a budget
// and every budget a capture ok gives for the task is positive, or c's
// entry gives none and the task table lists the task without one); no
// capture of its queue (the task table's, else c's entry's, else c's) is
// of unknown outcome and pending at the end or completed after c's
// invoke; a set-status ok of the task to done or
// failed was invoked after c's ok; and a capture ok of that queue invoked
// after that set-status's ok returned fewer tasks than its limit. The
// finding's window starts at the invoke of the first such capture to
// return, after the set-status that returned first.
func (x *parsed) passedOver(c hold, hs []hold, specs map[string]history.TaskSpec, end int64) (Finding, bool) {
	t := c.task
	if c.entry.Budget != nil {
		for _, o := range hs {
			if o.task == t && o.entry.Budget != nil && *o.entry.Budget <= 0 {
				return Finding{}, false
			}
		}
	} else if s, listed := specs[t]; !listed || s.Budget != nil {
		return Finding{}, false
	}
	queue := c.queue
	if s, listed := specs[t]; listed {
		queue = s.Queue
	} else if c.entry.Queue != "" {
		queue = c.entry.Queue
	}
	unknown, excused := x.unexcused(queue, t, c.c.inv)
	if excused {
		return Finding{}, false
	}
	var set *opCall
	for _, s := range x.calls {
		st := history.StatusOf(s.invOp)
		if s.f == history.FSetStatus && s.key == t && s.typ == history.OK && (st == history.StatusDone || st == history.StatusFailed) &&
			s.inv > c.c.done && (set == nil || s.done < set.done) {
			set = s
		}
	}
	if set == nil {
		return Finding{}, false
	}
	var short *opCall
	for _, o := range x.calls {
		if o.f != history.FCapture || o.key != queue || o.typ != history.OK || o.inv <= set.done {
			continue
		}
		limit, _ := o.invOp.Int()
		got, _ := history.CapturedOf(o.doneOp)
		if int64(len(got)) < limit && (short == nil || o.done < short.done) {
			short = o
		}
	}
	if short == nil {
		return Finding{}, false
	}
	return Finding{Kind: checker.LostTask, Key: t, Start: lastRet(short.call, unknown), End: end}, true
}
