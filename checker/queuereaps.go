package checker

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// This file reads the reaper's passes of one task by their readings
// (docs/history.md §4.7, "A reaper pass sets a task back at most once"):
// §3 lets a reap end every hold of a task it may have set back, but a
// reap sets a task back at most once for each time its value names it
// (once at most when of unknown outcome). A reading puts each such
// set-back in one gap between two runs of captures of the task, or in
// none; the task is anomalous when no reading is free of anomalies.

// taskReaps is what the readings read of one task: its holds in the
// order of their oks, its set-statuses in the order of their invokes and
// the reaps ok that named it, in the order of their completions.
type taskReaps struct {
	holds    []readHold
	statuses []readStatus
	reaps    []readReap
	// moot is set when a hold of the task overlaps the next hold of
	// another process whatever the reaps did (overlapsForGood): §3's
	// double-capture has it, and the readings read no more of it.
	moot bool
}

// readHold is one hold of the task.
type readHold struct {
	proc, client, invoke, ok int
	okTime                   time.Duration
}

// readStatus is one set-status of the task; done is -1 and typ
// history.Invoke while it is outstanding or pending at the end.
type readStatus struct {
	proc, invoke, done int
	typ                history.Type
}

// readReap is one reap that may set the task back: an ok naming it times
// times, or one of unknown outcome (times 1; done -1 when pending at the
// end, else its info).
type readReap struct {
	invoke, done, times int
	invTime             time.Duration
	unknown             bool
}

// readGap is a gap between run from..to of one process's holds and the
// next hold, next, of another process, with the holds of the run not
// ended by their process's set-status before next's ok (open): the gap
// needs a set-back when open is not empty.
type readGap struct {
	from, to, next int
	open           []int
}

// statusEnd returns the invoke of the first set-status of the task by
// hold h's process, invoked after h's ok, that did not fail; Open when
// none.
func (l *taskReaps) statusEnd(h readHold) int {
	for _, s := range l.statuses {
		if s.proc == h.proc && s.invoke > h.ok && s.typ != history.Fail {
			return s.invoke
		}
	}
	return Open
}

// needs returns the gaps of the task that need a set-back.
func (l *taskReaps) needs() []readGap {
	var out []readGap
	from := 0
	for next := 1; next < len(l.holds); next++ {
		if l.holds[next].proc == l.holds[from].proc {
			continue
		}
		g := readGap{from: from, to: next - 1, next: next}
		for k := from; k < next; k++ {
			if l.statusEnd(l.holds[k]) > l.holds[next].ok {
				g.open = append(g.open, k)
			}
		}
		if len(g.open) > 0 {
			out = append(out, g)
		}
		from = next
	}
	return out
}

// mayFill reports whether reap r may set the task back in gap g: it was
// invoked before the ok of g's next hold, may have set the task back after
// the capture of one of g's open holds took effect (an ok that completed
// after that capture's invoke, or one of unknown outcome), and, when of
// unknown outcome, its doing so makes no set-status stale (staleIf).
func (l *taskReaps) mayFill(r readReap, g readGap, all []readReap) bool {
	return l.reaches(r, g) && (!r.unknown || !l.staleIf(r, g, all))
}

// reaches reports whether reap r may set the task back in gap g by §3
// alone: it was invoked before the ok of g's next hold, and may have set
// the task back after the capture of one of g's open holds took effect.
func (l *taskReaps) reaches(r readReap, g readGap) bool {
	if r.invoke >= l.holds[g.next].ok {
		return false
	}
	return r.unknown || slices.ContainsFunc(g.open, func(k int) bool { return r.done > l.holds[k].invoke })
}

// staleIf reports whether reap r of unknown outcome, setting the task back
// in gap g, makes a set-status stale: a set-status ok S by the process of
// g's run whose latest hold H of the task with its ok before S's invoke is
// in the run, r invoked after H's ok, and a hold C of another process,
// g's next hold or a later one, invoked after r, returned before S was
// invoked, whose end, not counting r, comes after S's ok.
func (l *taskReaps) staleIf(r readReap, g readGap, all []readReap) bool {
	p := l.holds[g.from].proc
	for _, s := range l.statuses {
		if s.proc != p || s.typ != history.OK {
			continue
		}
		h := -1
		for k, x := range l.holds {
			if x.proc == p && x.ok < s.invoke {
				h = k
			}
		}
		if h < g.from || h > g.to || r.invoke < l.holds[h].ok {
			continue
		}
		for _, c := range l.holds[g.next:] {
			if c.proc != p && c.invoke > r.invoke && c.ok < s.invoke && l.endWithout(c, r, all) > s.done {
				return true
			}
		}
	}
	return false
}

// endWithout returns §3's end of hold c with reap r left out.
func (l *taskReaps) endWithout(c readHold, r readReap, all []readReap) int {
	e := l.statusEnd(c)
	for _, x := range all {
		if x != r && (x.unknown || x.done > c.invoke) {
			e = min(e, max(x.invoke, c.ok))
		}
	}
	return e
}

// unfilled returns, when no reading of all (the task's reaps ok and the
// reaps of unknown outcome) fills every gap of the task that needs a
// set-back (each reap filling at most as many gaps as its times), the
// first gap such that the gaps up to it cannot all be filled. It gives the
// gaps a set-back each in their order, by augmenting paths.
func (l *taskReaps) unfilled(all []readReap) (readGap, bool) {
	gaps := l.needs()
	if len(gaps) == 0 {
		return readGap{}, false
	}
	var slots []int // each set-back: the index in all of its reap
	for i, r := range all {
		for range r.times {
			slots = append(slots, i)
		}
	}
	fills := make([][]int, len(gaps))
	for g := range gaps {
		for k, i := range slots {
			if l.mayFill(all[i], gaps[g], all) {
				fills[g] = append(fills[g], k)
			}
		}
	}
	owner := make([]int, len(slots))
	for k := range owner {
		owner[k] = -1
	}
	var assign func(g int, seen []bool) bool
	assign = func(g int, seen []bool) bool {
		for _, k := range fills[g] {
			if seen[k] {
				continue
			}
			seen[k] = true
			if owner[k] < 0 || assign(owner[k], seen) {
				owner[k] = g
				return true
			}
		}
		return false
	}
	for g := range gaps {
		if !assign(g, make([]bool, len(slots))) {
			return gaps[g], true
		}
	}
	return readGap{}, false
}

// readingsAnomaly returns the double-capture of task name when no reading
// of its reaps all (its reaps ok and the reaps of unknown outcome) is
// free of anomalies (docs/history.md §4.7): it names the first gap such
// that the gaps up to it that need a set-back cannot all be given one
// (unfilled), by the last open hold of its run and the next hold,
// and each reap that reaches that gap (reaches; its invoke, and its
// completion when it completed), in the order of their invokes.
func (l *taskReaps) readingsAnomaly(name string, all []readReap) (Anomaly, bool) {
	g, none := l.unfilled(all)
	if !none {
		return Anomaly{}, false
	}
	used := slices.DeleteFunc(slices.Clone(all), func(r readReap) bool { return !l.reaches(r, g) })
	slices.SortFunc(used, func(a, b readReap) int { return a.invoke - b.invoke })
	a, b := l.holds[g.open[len(g.open)-1]], l.holds[g.next]
	ops := []int{a.invoke, a.ok, b.invoke, b.ok}
	var names []string
	for _, r := range used {
		ops = append(ops, r.invoke)
		if r.done >= 0 {
			ops = append(ops, r.done)
		}
		switch {
		case r.unknown:
			names = append(names, fmt.Sprintf("the one invoked at %s, of unknown outcome, whether or not it took effect", secs(r.invTime)))
		case r.times == 1:
			names = append(names, fmt.Sprintf("the one invoked at %s, naming it once", secs(r.invTime)))
		default:
			names = append(names, fmt.Sprintf("the one invoked at %s, naming it %d times", secs(r.invTime), r.times))
		}
	}
	msg := fmt.Sprintf("%s captured task %s at %s while %s held it since its capture at %s, or another capture of it overlapped a hold before it, in every reading of the reaper passes that may have set it back between its captures (%s): a pass sets a task back at most once for each time it names it, and one of unknown outcome that took effect before a capture makes the earlier holder's later set-status stale",
		workerOf(b.client), name, secs(b.okTime), workerOf(a.client), secs(a.okTime), strings.Join(names, "; "))
	return Anomaly{Kind: DoubleCapture, Key: name, Ops: ops, Message: msg}, true
}

// readHold takes hold h into the readings of its task. When h begins a
// run, the readings forget what only the holds before it read, if those
// are settled for good (settledBefore): the holds, the set-statuses
// invoked before h's ok and the reaps that completed before since (h's
// invoke, or the invoke of a capture still outstanding when earlier),
// which can set the task back in no later gap.
func (s *queueStream) readHold(h *queueHold) {
	l := &h.task.reads
	if l.moot {
		return
	}
	n := len(l.holds)
	l.holds = append(l.holds, readHold{proc: h.proc, client: h.client, invoke: h.invoke, ok: h.okIndex, okTime: h.okTime})
	if n == 0 || l.holds[n-1].proc == h.proc {
		return
	}
	if s.overlapsForGood(l) {
		*l = taskReaps{moot: true}
		return
	}
	since := h.invoke
	s.procs.each(func(_ int, p *queueProc) {
		if p.pending && p.fn == history.FCapture {
			since = min(since, p.invoke)
		}
	})
	if l.settledBefore(h.okIndex, since) {
		l.holds = slices.Delete(l.holds, 0, n)
		l.statuses = slices.DeleteFunc(l.statuses, func(x readStatus) bool { return x.invoke < h.okIndex })
		l.reaps = slices.DeleteFunc(l.reaps, func(r readReap) bool { return r.done < since })
	}
}

// overlapsForGood reports whether a hold of the run before the task's
// last hold h overlaps h whatever comes next: its process's set-status
// did not end it before h's ok (one outstanding counts as ending it), and
// no reap could end it before then (an ok naming the task that completed
// after its capture's invoke, one of unknown outcome or one outstanding,
// invoked before h's ok).
func (s *queueStream) overlapsForGood(l *taskReaps) bool {
	n := len(l.holds) - 1
	h := l.holds[n]
	if s.firstUnknownReap < h.ok || slices.ContainsFunc(s.reaps, func(r *queueReap) bool { return r.invoke < h.ok }) {
		return false
	}
	for k := n - 1; k >= 0 && l.holds[k].proc == l.holds[n-1].proc; k-- {
		a := l.holds[k]
		if l.statusEnd(a) > h.ok && !slices.ContainsFunc(l.reaps, func(r readReap) bool { return r.invoke < h.ok && r.done > a.invoke }) {
			return true
		}
	}
	return false
}

// settledBefore reports whether the gaps before the task's last hold,
// returned at index x, are settled for good: no set-status invoked before
// x is outstanding (so which holds are open is known), and the reaps ok
// that completed before index since, which can fill no later gap, fill
// every gap that needs a set-back.
func (l *taskReaps) settledBefore(x, since int) bool {
	if slices.ContainsFunc(l.statuses, func(st readStatus) bool { return st.invoke < x && st.done < 0 }) {
		return false
	}
	expired := slices.DeleteFunc(slices.Clone(l.reaps), func(r readReap) bool { return r.done >= since })
	_, none := l.unfilled(expired)
	return !none
}

// readStatusDone takes the completion of set-status st into the readings
// of its task.
func readStatusDone(st *queueStatus) {
	l := &st.task.reads
	if l.moot {
		return
	}
	for i := range l.statuses {
		if l.statuses[i].invoke == st.invoke {
			l.statuses[i].done, l.statuses[i].typ = st.done, st.typ
		}
	}
}

// readReapOK takes reap ok r, naming task t, into the readings of t.
func readReapOK(t *queueTask, r *queueReap) {
	l := &t.reads
	if l.moot {
		return
	}
	if n := len(l.reaps); n > 0 && l.reaps[n-1].invoke == r.invoke {
		l.reaps[n-1].times++
		return
	}
	l.reaps = append(l.reaps, readReap{invoke: r.invoke, done: r.done, times: 1, invTime: r.invTime})
}

// readingsAnomalies returns the double-captures the readings find of the
// tasks of which no double-capture or stale-status was found.
func (s *queueStream) readingsAnomalies(found []Anomaly) []Anomaly {
	var out []Anomaly
	for name, t := range s.tasks {
		if t.reads.moot || len(t.reads.holds) < 3 && len(s.unknownReaps) == 0 || slices.ContainsFunc(found, func(a Anomaly) bool {
			return a.Key == name && (a.Kind == DoubleCapture || a.Kind == StaleStatus)
		}) {
			continue
		}
		all := append(slices.Clip(t.reads.reaps), s.unknownReaps...)
		if a, ok := t.reads.readingsAnomaly(name, all); ok {
			out = append(out, a)
		}
	}
	return out
}

// readings returns what the readings of the reaps (docs/history.md §4.7)
// read of each task of h, by the shared definitions: its holds, its
// set-statuses and the reaps ok naming it; and the reaps of unknown
// outcome.
func (q *QueueFacts) readings(h history.History) (map[string]*taskReaps, []readReap) {
	out := map[string]*taskReaps{}
	of := func(t string) *taskReaps {
		if out[t] == nil {
			out[t] = &taskReaps{}
		}
		return out[t]
	}
	for _, ho := range q.Holds {
		l := of(ho.Task)
		l.holds = append(l.holds, readHold{proc: ho.Process, client: ho.Client, invoke: ho.Invoke, ok: ho.OK, okTime: h[ho.OK].Time})
	}
	for _, st := range q.Statuses {
		l := of(st.Task)
		l.statuses = append(l.statuses, readStatus{proc: st.Process, invoke: st.Invoke, done: st.Done, typ: st.Type})
	}
	var unknown []readReap
	for _, r := range q.Reaps {
		if r.Unknown {
			unknown = append(unknown, readReap{invoke: r.Invoke, done: r.Done, times: 1, invTime: h[r.Invoke].Time, unknown: true})
			continue
		}
		for _, t := range r.Tasks {
			l := of(t)
			if n := len(l.reaps); n > 0 && l.reaps[n-1].invoke == r.Invoke {
				l.reaps[n-1].times++
				continue
			}
			l.reaps = append(l.reaps, readReap{invoke: r.Invoke, done: r.Done, times: 1, invTime: h[r.Invoke].Time})
		}
	}
	return out, unknown
}

// readingsAnomalies returns the double-captures the readings of the reaps
// (docs/history.md §4.7) find of the tasks of h of which found has no
// double-capture or stale-status, in the order of the tasks' names.
func (q *QueueFacts) readingsAnomalies(h history.History, found []Anomaly) []Anomaly {
	logs, unknown := q.readings(h)
	var out []Anomaly
	for _, name := range slices.Sorted(maps.Keys(logs)) {
		if slices.ContainsFunc(found, func(a Anomaly) bool { return a.Key == name && (a.Kind == DoubleCapture || a.Kind == StaleStatus) }) {
			continue
		}
		l := logs[name]
		if a, ok := l.readingsAnomaly(name, append(slices.Clip(l.reaps), unknown...)); ok {
			out = append(out, a)
		}
	}
	return out
}

// readStatusInvoked takes set-status st, just invoked, into the readings of its
// task.
func readStatusInvoked(st *queueStatus) {
	if l := &st.task.reads; !l.moot {
		l.statuses = append(l.statuses, readStatus{proc: st.proc, invoke: st.invoke, done: -1, typ: history.Invoke})
	}
}
