package reports

import (
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// windowJSON is the full detail of one time window of a stored run, as the
// detail endpoint of `serve` returns it: the timeline of its ops, and More
// when the window held more than maxServedOps ops and only its first ones
// are drawn.
type windowJSON struct {
	timelineJSON
	More bool `json:"more,omitempty"`
}

// readWindow reads a history op by op (sc) and draws the full detail of
// the window [from, to]: its ops, with the op each completion inside
// completes, the completion of each op in flight inside, and the beliefs
// open inside (followed from the history's first op, by the checker's
// rule); named are the op indexes anomalies name. It reads on past the
// window only until everything drawn in it has ended (to the end of the
// history when something drawn never ends), and draws at most maxOps ops
// of the window, its first ones. guarded is the run's register rule
// (history.DropReplyTimes).
func readWindow(sc *history.Scanner, from, to time.Duration, maxOps int, guarded bool, named map[int]bool) (windowJSON, error) {
	var out windowJSON
	f := newFollower()
	d := newDetailCollector(func(op *history.Op) bool { return op.Time >= from && op.Time <= to })
	d.in = func(op *history.Op) bool {
		if op.Time < from || op.Time > to {
			return false
		}
		if d.count >= maxOps {
			out.More, to = true, op.Time-1
			return false
		}
		return true
	}
	f.started = d.started
	f.ended = d.ended
	drop := replyTimesRule(guarded)
	var last time.Duration
	ended := true
	var op history.Op // one for every line: nothing keeps it
	for sc.Scan() {
		op = sc.Op()
		drop(&op)
		if op.Time > to && d.settled(&op) {
			ended = false
			break
		}
		last = max(last, op.Time)
		d.before(&op, f)
		inv := f.add(&op)
		d.after(&op, inv)
	}
	if err := sc.Err(); err != nil {
		return out, err
	}
	end := last
	if ended {
		end = max(last, f.finish())
	}
	tl := d.timeline(timeline{Last: last, End: end})
	out.timelineJSON = tl.compact(named)
	return out, nil
}
