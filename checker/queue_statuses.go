// queue_statuses.go holds the queue stream's set-statuses: the settled ones
// that may have undone a capture (double-capture), the stale ones after a
// reap (stale-status), and the first to done or failed after a task's last
// hold (lost-task).

package checker

import (
	"slices"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// queueStatus is one set-status.
type queueStatus struct {
	proc, client      int
	task              *queueTask
	status            string
	invoke, done      int
	invTime, doneTime time.Duration
	typ               history.Type
	stale             *staleWait // the hold and reap it may be stale after
}

// statusEntry is a completed set-status by value.
type statusEntry struct {
	proc, client      int
	status            string
	invoke, done      int
	invTime, doneTime time.Duration
	typ               history.Type
}

// entry returns st by value.
func (st *queueStatus) entry() statusEntry {
	return statusEntry{proc: st.proc, client: st.client, status: st.status, invoke: st.invoke, done: st.done, invTime: st.invTime, doneTime: st.doneTime, typ: st.typ}
}

// staleWait is a set-status ok S whose process's hold a reap ended, with
// the holds of its task that may be the newer hold C, in order: S is
// stale when one of them had not ended by S's return.
type staleWait struct {
	status          statusEntry  // S, once it returned ok
	task            *queueTask   // S's task
	reapedHold      holdRef      // S's process's latest hold of the task, H
	reap            queueReap    // the first reap ok naming the task after H
	newerCandidates []*queueHold // the holds that may be C, in order
}

// statusDone takes a set-status's completion.
func (s *queueStream) statusDone(st *queueStatus, q *queueOp) {
	st.done, st.doneTime, st.typ = q.index, q.time, q.typ
	t := st.task
	t.outstanding = slices.DeleteFunc(t.outstanding, func(x *queueStatus) bool { return x == st })
	readStatusDone(st)
	if st.typ != history.Fail {
		t.settled = addSettled(t.settled, st.entry())
		t.lastStatus = max(t.lastStatus, st.invoke)
		s.endHolds(t, st.proc, st.invoke, st.invTime)
	}
	if st.typ == history.OK {
		s.passedOverSet(t, st)
		if w := st.stale; w != nil {
			w.status = st.entry()
			for _, c := range t.holds {
				if c.proc != st.proc && c.invoke > w.reap.done && c.okIndex < st.invoke && c.statusEnd == Open && c.reapEnd == Open {
					w.newerCandidates = append(w.newerCandidates, c)
				}
			}
			s.staleWaiting = append(s.staleWaiting, w)
		}
	}
	st.stale = nil
	s.review(t)
	s.settle()
}

// passedOverSet takes set-status ok st for lost-task: the first to done or
// failed after its task's last hold makes the task wait for a capture of
// its queue that returns fewer tasks than its limit.
func (s *queueStream) passedOverSet(t *queueTask, st *queueStatus) {
	if t.lastHold == nil || t.doneAfterLast != nil || st.invoke <= t.lastHold.okIndex || (st.status != history.StatusDone && st.status != history.StatusFailed) {
		return
	}
	e := st.entry()
	t.doneAfterLast = &e
	queue, _ := s.taskQueue(t.name, t.lastHold.entryQueue)
	if queue == "" {
		queue = t.lastHold.queue
	}
	q := s.queue(queue)
	if q.waiting == nil {
		q.waiting = map[*queueTask]struct{}{}
	}
	q.waiting[t] = struct{}{}
	t.waitOn = queue
}

// tryStale decides stale set-status w when it can: its newer hold is the
// first of its candidates known to end after w's return. It reports
// whether w is decided.
func (s *queueStream) tryStale(w *staleWait) bool {
	for len(w.newerCandidates) > 0 {
		decided, after := s.endsAfter(w.newerCandidates[0], w.status.done)
		if !decided {
			return false
		}
		if after {
			s.staleFound = append(s.staleFound, staleAnomaly(w, w.newerCandidates[0]))
			w.newerCandidates = nil
			return true
		}
		w.newerCandidates = w.newerCandidates[1:]
	}
	return true
}

// addSettled adds the completed set-status e, which did not fail, to the
// settled ones of its task and returns them: of each process its latest
// (a process's later set-status may undo every capture its earlier one
// may), less those that two later ones supersede (undoesLater): of those
// two processes one is not the capture's, so it is the later one that may
// have undone any capture the superseded one may have.
func addSettled(settled []statusEntry, e statusEntry) []statusEntry {
	settled = slices.DeleteFunc(settled, func(x statusEntry) bool { return x.proc == e.proc })
	settled = append(settled, e)
	var useless []int
	for i, x := range settled {
		n := 0
		for j, y := range settled {
			if j != i && undoesLater(y, x) {
				n++
			}
		}
		if n >= 2 {
			useless = append(useless, x.invoke)
		}
	}
	return slices.DeleteFunc(settled, func(x statusEntry) bool { return slices.Contains(useless, x.invoke) })
}

// undoesLater reports whether set-status y supersedes x: y was invoked
// after x and may undo every capture x may undo (docs/history.md §4.7,
// double-capture), so that x is never the last that may have undone a
// capture when y's process is not the capture's. One of unknown outcome
// may undo any capture; an ok one those invoked before it returned.
func undoesLater(y, x statusEntry) bool {
	return y.invoke > x.invoke && (y.typ != history.OK || (x.typ == history.OK && y.done >= x.done))
}

// bestSettled returns the settled set-status invoked last that may have
// undone a capture by process proc invoked at inv: by another process, of
// unknown outcome or returned after inv.
func bestSettled(settled []statusEntry, proc, inv int) (statusEntry, bool) {
	var out statusEntry
	found := false
	for _, x := range settled {
		if x.proc != proc && (x.typ != history.OK || x.done > inv) && (!found || x.invoke > out.invoke) {
			out, found = x, true
		}
	}
	return out, found
}

// undoing returns the last set-status that may have undone the earlier
// capture of the overlap before pr's capture took the task (undoingStatus):
// of those outstanding when pr returned, the last that did not fail, else
// the last settled one that may have.
func (pr *queuePair) undoing() (statusEntry, bool) {
	for i := len(pr.outstanding) - 1; i >= 0; i-- {
		if st := pr.outstanding[i]; st.typ != history.Fail {
			return st.entry(), true
		}
	}
	return pr.lastSettled, pr.hasLastSettled
}
