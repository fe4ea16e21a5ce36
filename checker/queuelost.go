package checker

import (
	"cmp"
	"fmt"
	"slices"
)

// This file is the lost-task part of the queue stream (queueStream,
// docs/history.md §4.7): what the liveness report reads of the queue.

// lost ends the history and returns what the liveness report reads of the
// queue: whether the history has a capture op (completed, or pending at the
// end), how many tasks its capture oks returned, and its lost tasks.
func (s *queueStream) lost() (bool, int, []Anomaly) {
	s.close()
	if !s.captured {
		return false, 0, nil
	}
	return true, s.holds, s.lostTasks()
}

// lostTasks ends the history and returns its lost tasks, as lostTasks
// finds them over the whole history.
func (s *queueStream) lostTasks() []Anomaly {
	var out []Anomaly
	if s.ops == 0 {
		return out
	}
	s.close()
	for _, t := range s.tasks {
		c := t.lastHold
		if c == nil {
			continue
		}
		if a, ok := s.passedOver(t); ok {
			out = append(out, a)
			continue
		}
		_, orphan := s.orphans[t]
		if e, _, _ := c.end(); e != Open || !t.crashed || !orphan || t.lastStatus > c.okIndex {
			continue
		}
		out = append(out, Anomaly{Kind: LostTask, Key: t.name, Ops: []int{c.invoke, c.okIndex, t.crashIndex},
			Window: &Window{Start: t.crashTime, End: s.end},
			Message: fmt.Sprintf("task %s stayed in progress from %s's capture at %s to the end: its process crashed at %s without setting its status, and %s",
				t.name, workerOf(c.client), secs(c.okTime), secs(t.crashTime), nothingFreed)})
	}
	out = append(out, s.neverCaptured()...)
	slices.SortFunc(out, func(a, b Anomaly) int { return cmp.Or(cmp.Compare(a.Key, b.Key), slices.Compare(a.Ops, b.Ops)) })
	return out
}

// neverCaptured returns the lost tasks of the task table that no capture
// returned although a capture of their queue asked for more, and that no
// capture of their queue of unknown outcome excuses (excuses).
func (s *queueStream) neverCaptured() []Anomaly {
	var out []Anomaly
	if s.specOp < 0 {
		return out
	}
	for name, sp := range s.specs {
		if t := s.tasks[name]; (t != nil && t.lastHold != nil) || (sp.Budget != nil && *sp.Budget == 0) {
			continue
		}
		q, t := s.queues[sp.Queue], s.tasks[name]
		if q == nil || q.firstShort == nil || q.lastUnknown == Open || slices.ContainsFunc(q.crashed, func(u crashedCapture) bool { return s.excuses(u, t) }) {
			continue
		}
		c := q.firstShort
		out = append(out, Anomaly{Kind: LostTask, Key: name, Ops: q.crashed.ops([]int{s.specOp, c.invoke, c.okIndex}),
			Window: &Window{Start: q.crashed.start(c.invTime), End: s.end},
			Message: fmt.Sprintf("task %s of queue %s was never captured, although it was capturable throughout (done from the start, with budget left) and %s's capture of %s at %s asked for %d tasks and got %d%s",
				name, sp.Queue, workerOf(c.client), sp.Queue, secs(c.okTime), c.limit, c.got, q.crashed.taken())})
	}
	return out
}

// passedOver returns the lost-task of task t passed over, if it was
// (passedOver).
func (s *queueStream) passedOver(t *queueTask) (Anomaly, bool) {
	c := t.lastHold
	budget := -1 // -1: the task has none
	if c.entryBudget != nil {
		budget = t.leastBudget
		if budget <= 0 {
			return Anomaly{}, false
		}
	} else if sp, listed := s.specs[t.name]; !listed || sp.Budget != nil {
		return Anomaly{}, false
	}
	queue, _ := s.taskQueue(t.name, c.entryQueue)
	if queue == "" {
		queue = c.queue
	}
	var unknown crashedCaptures // those that could have taken effect after c did
	if q := s.queues[queue]; q != nil && q.lastUnknown > c.invoke {
		if q.lastUnknown == Open {
			return Anomaly{}, false // pending at the end
		}
		for _, u := range q.crashed {
			if u.info > c.invoke {
				if s.excuses(u, t) {
					return Anomaly{}, false
				}
				unknown = append(unknown, u)
			}
		}
	}
	set, short := t.doneAfterLast, t.shortAfter
	if set == nil || short == nil {
		return Anomaly{}, false
	}
	left := " (the task table gives it no budget)"
	if budget >= 0 {
		left = fmt.Sprintf(" with %d captures of budget left", budget)
		if budget == 1 {
			left = " with 1 capture of budget left"
		}
	}
	return Anomaly{Kind: LostTask, Key: t.name, Ops: unknown.ops([]int{c.invoke, c.okIndex, set.invoke, set.done, short.invoke, short.okIndex}),
		Window: &Window{Start: unknown.start(short.invTime), End: s.end},
		Message: fmt.Sprintf("task %s, last captured by %s at %s%s, was set %s by %s at %s, and %s's capture of %s at %s returned %d of %d tasks; no capture took it to the end%s",
			t.name, workerOf(c.client), secs(c.okTime), left, set.status, workerOf(set.client), secs(set.doneTime),
			workerOf(short.client), queue, secs(short.okTime), short.got, short.limit, unknown.taken())}, true
}

// excuses reports whether capture u of unknown outcome, whose process
// crashed, excuses task t (nil when the history never named it) of
// lost-task, as QueueFacts' excuses does: after u's invoke a set-status of
// t that did not fail was invoked, or a reap ok naming t completed, or a
// reap was of unknown outcome. Call it once the history has ended.
func (s *queueStream) excuses(u crashedCapture, t *queueTask) bool {
	return s.firstUnknownReap != Open || (t != nil && (t.lastStatus > u.invoke || t.lastReap > u.invoke))
}
