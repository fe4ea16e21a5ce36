// queue_ends.go holds when the queue stream's holds end: by their process's
// set-status or by a reap, when that end is known for good (no op still
// outstanding can end them sooner), and the overlaps then settled.

package checker

import (
	"slices"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// queueReap is one reap.
type queueReap struct {
	invoke, done      int
	invTime, doneTime time.Duration
}

// endHolds ends the holds of task t by process proc captured before its
// set-status invoked at inv, which did not fail.
func (s *queueStream) endHolds(t *queueTask, proc, inv int, at time.Duration) {
	for _, h := range t.holds {
		if h.proc == proc && h.okIndex < inv && h.statusEnd == Open {
			h.statusEnd, h.statusTime = inv, at
		}
	}
}

// reapDone takes a reap's completion.
func (s *queueStream) reapDone(r *queueReap, q *queueOp) {
	s.reaps = slices.DeleteFunc(s.reaps, func(x *queueReap) bool { return x == r })
	r.done, r.doneTime = q.index, q.time
	switch q.typ {
	case history.OK:
		for _, name := range q.reaped {
			t := s.task(name)
			t.lastReap = q.index
			readReapOK(t, r)
			for _, h := range t.holds {
				reapHold(h, r)
			}
			for i := range t.latest {
				if e := &t.latest[i]; !e.reaped && e.hold.okIndex < r.invoke {
					e.reap, e.reaped = *r, true
				}
			}
			s.review(t)
		}
		for t := range s.orphans {
			if c := t.lastHold; c.statusEnd != Open || c.reapEnd != Open {
				delete(s.orphans, t) // the reap ended its hold; one that did not name it freed nothing
			}
		}
	case history.Info:
		s.unknown(r)
	}
	s.settle()
}

// unknown takes reap r of unknown outcome: it may have set back any task
// at any time after its invoke, and so ends every hold by then.
func (s *queueStream) unknown(r *queueReap) {
	s.firstUnknownReap = min(s.firstUnknownReap, r.invoke)
	s.unknownReaps = append(s.unknownReaps, readReap{invoke: r.invoke, done: r.done, times: 1, invTime: r.invTime, unknown: true})
	for _, t := range s.tasks {
		for _, h := range t.holds {
			reapHold(h, r)
		}
		s.review(t)
	}
}

// reapHold ends hold h at reap r's invoke, or at h's ok when r was
// invoked before it, unless it ended sooner.
func reapHold(h *queueHold, r *queueReap) {
	end, at := r.invoke, r.invTime
	if h.okIndex > end {
		end, at = h.okIndex, h.okTime
	}
	if end < h.reapEnd {
		h.reapEnd, h.reapAt = end, at
	}
}

// review goes overBudget the holds of task t whose end became known: those
// ended for good leave it, the others wait among the closing ones.
func (s *queueStream) review(t *queueTask) {
	t.holds = slices.DeleteFunc(t.holds, func(h *queueHold) bool {
		if h.closing || (h.statusEnd == Open && h.reapEnd == Open) {
			return false
		}
		if s.final(h) {
			s.resolve(h)
			return true
		}
		h.closing = true
		s.closing = append(s.closing, h)
		return false
	})
}

// settle resolves the closing holds ended for good, and the stale
// set-statuses whose newer hold is known.
func (s *queueStream) settle() {
	s.closing = slices.DeleteFunc(s.closing, func(h *queueHold) bool {
		if !s.final(h) {
			return false
		}
		s.resolve(h)
		t := h.task
		t.holds = slices.DeleteFunc(t.holds, func(x *queueHold) bool { return x == h })
		return true
	})
	s.staleWaiting = slices.DeleteFunc(s.staleWaiting, s.tryStale)
}

// end returns hold h's end as far as it is known, the time of the op
// there, and whether a reap ended it.
func (h *queueHold) end() (int, time.Duration, bool) {
	if h.reapEnd < h.statusEnd {
		return h.reapEnd, h.reapAt, true
	}
	return h.statusEnd, h.statusTime, false
}

// sooner returns the earliest end of hold h that an op still outstanding
// may give it: its process's set-status of its task, a reap; Open when
// none.
func (s *queueStream) sooner(h *queueHold) int {
	out := Open
	if p := s.procs.get(h.proc); p != nil && p.pending && p.fn == history.FSetStatus && p.key == h.task.name && p.invoke > h.okIndex {
		out = p.invoke
	}
	for _, r := range s.reaps {
		out = min(out, max(h.okIndex, r.invoke))
	}
	return out
}

// final reports whether hold h has ended for good: no op still
// outstanding can end it sooner.
func (s *queueStream) final(h *queueHold) bool {
	e, _, _ := h.end()
	return e != Open && (s.ended || s.sooner(h) >= e)
}

// endsAfter reports whether hold h is known to end after index x (decided),
// and whether it does.
func (s *queueStream) endsAfter(h *queueHold, x int) (decided, after bool) {
	if e, _, _ := h.end(); e <= x {
		return true, false
	}
	if s.ended {
		return true, true
	}
	return s.sooner(h) > x, true
}

// resolve takes hold h, ended for good: the holds that overlap it are the
// later ones captured before its end.
func (s *queueStream) resolve(h *queueHold) {
	if h.resolved {
		return
	}
	h.resolved = true
	e, _, _ := h.end()
	if h.firstOverlap == nil || h.firstOverlap.okIndex >= e {
		h.firstOverlap, h.laterOverlaps = nil, nil
		return
	}
	n := 0
	for n < len(h.laterOverlaps) && h.laterOverlaps[n][1] < e {
		n++
	}
	h.laterOverlaps = h.laterOverlaps[:n]
	s.doubles = append(s.doubles, h)
}
