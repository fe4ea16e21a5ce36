package checker

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// hostEventsListed is how many host events an anomaly's host note names;
// the others are counted.
const hostEventsListed = 3

// HostEvents returns what the host records of h say (docs/history.md §1,
// "The host records"), in the order of h.
func HostEvents(h history.History) []history.HostEvent {
	var events []history.HostEvent
	for i := range h {
		events = addHostEvent(events, &h[i])
	}
	return events
}

// addHostEvent appends to events what op says when it is a host record of a
// well-formed history, and returns events.
func addHostEvent(events []history.HostEvent, op *history.Op) []history.HostEvent {
	if !op.IsHostRecord() {
		return events
	}
	if e, ok, err := history.HostEventOf(*op); ok && err == nil {
		events = append(events, e)
	}
	return events
}

// opSpan is the stretch of harness time an op of an anomaly covers: from
// the invoke of its call (its own time for an invoke or a nemesis op) to
// its own time.
type opSpan struct{ from, to time.Duration }

// spanFinder finds, reading a history op by op, the spans of the ops that
// anomalies name.
type spanFinder struct {
	need  map[int]*opSpan
	last  int // the highest index needed
	n     int
	calls map[int]time.Duration // by process: the time of its outstanding invoke
}

// newSpanFinder returns a spanFinder for the ops of every anomaly of results
// and live, or nil when there are none.
func newSpanFinder(results []Result, live *LivenessResult) *spanFinder {
	f := &spanFinder{need: map[int]*opSpan{}, calls: map[int]time.Duration{}, last: -1}
	forEachAnomaly(results, live, func(a *Anomaly) {
		for _, i := range a.Ops {
			f.need[i] = nil
			f.last = max(f.last, i)
		}
	})
	if len(f.need) == 0 {
		return nil
	}
	return f
}

// add takes the history's next op and reports whether every span needed is
// found.
func (f *spanFinder) add(op *history.Op) bool {
	i := f.n
	f.n++
	from := op.Time
	if !op.IsNemesis() {
		if op.Type == history.Invoke {
			f.calls[op.Process] = op.Time
		} else if t, ok := f.calls[op.Process]; ok {
			from = t
			delete(f.calls, op.Process)
		}
	}
	if _, ok := f.need[i]; ok {
		f.need[i] = &opSpan{from: from, to: op.Time}
	}
	return i >= f.last
}

// forEachAnomaly calls do with each anomaly of results and live.
func forEachAnomaly(results []Result, live *LivenessResult, do func(*Anomaly)) {
	for r := range results {
		for a := range results[r].Anomalies {
			do(&results[r].Anomalies[a])
		}
	}
	if live != nil {
		for a := range live.Anomalies {
			do(&live.Anomalies[a])
		}
	}
}

// noteHost sets the host note (Anomaly.Host) of every anomaly of results
// and live whose window some host event of events overlaps. An anomaly's
// window runs from the earliest invoke of the calls of its ops to the
// latest of its ops, and covers its Window when it has one; spans gives
// the ops' spans (an op not in it adds nothing).
func noteHost(events []history.HostEvent, results []Result, live *LivenessResult, spans map[int]*opSpan) {
	forEachAnomaly(results, live, func(a *Anomaly) {
		from, to, ok := time.Duration(0), time.Duration(0), false
		widen := func(f, t time.Duration) {
			if !ok {
				from, to, ok = f, t, true
			}
			from, to = min(from, f), max(to, t)
		}
		if a.Window != nil {
			widen(a.Window.Start, a.Window.End)
		}
		for _, i := range a.Ops {
			if s := spans[i]; s != nil {
				widen(s.from, s.to)
			}
		}
		if ok {
			a.Host = hostNote(events, from, to)
		}
	})
}

// hostNote says which host events overlap [from, to], the window of a
// finding, or "" when none does: "the harness stalled 598ms at 3.100s
// inside this finding's window (2.950s–3.700s): the host, not only the
// lock or a fault, may be behind it".
func hostNote(events []history.HostEvent, from, to time.Duration) string {
	var named []string
	more := 0
	for _, e := range events {
		if !e.Overlaps(from, to) {
			continue
		}
		if len(named) == hostEventsListed {
			more++
			continue
		}
		named = append(named, e.Describe())
	}
	if len(named) == 0 {
		return ""
	}
	if more > 0 {
		named = append(named, fmt.Sprintf("%d more host events", more))
	}
	return fmt.Sprintf("%s inside this finding's window (%s–%s): the host, not only the lock or a fault, may be behind it",
		strings.Join(named, "; "), secs(from), secs(to))
}

// NoteHost sets the host note of every anomaly of results and live (nil:
// none) whose window a host record of h overlaps (docs/history.md §1, "The
// host records"): the note a check of the same history read from its file
// gives (CheckFile).
func NoteHost(h history.History, results []Result, live *LivenessResult) {
	events := HostEvents(h)
	if len(events) == 0 {
		return
	}
	f := newSpanFinder(results, live)
	if f == nil {
		return
	}
	for i := range h {
		if f.add(&h[i]) {
			break
		}
	}
	noteHost(events, results, live, f.need)
}

// noteHostFile is NoteHost for the history file path, checked into res,
// whose host events res holds: it reads the file again, as far as the last
// op an anomaly names, for the times of the anomalies' ops, and only when
// there are both host events and anomalies. It returns an error when the
// file cannot be read again, or ctx ends first (ErrInterrupted).
func noteHostFile(ctx context.Context, path string, res *FileResult) error {
	if len(res.HostEvents) == 0 {
		return nil
	}
	f := newSpanFinder(res.Results, res.Liveness)
	if f == nil {
		return nil
	}
	sc, closeFile, err := history.ScanFile(path)
	if err != nil {
		return fmt.Errorf("checker: reading the history again for its host records: %w", err)
	}
	defer closeFile()
	for sc.Scan() {
		if f.n%4096 == 0 && ctx.Err() != nil {
			return fmt.Errorf("%w: %w", ErrInterrupted, ctx.Err())
		}
		op := sc.Op()
		if f.add(&op) {
			break
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("checker: reading the history again for its host records: %w", err)
	}
	noteHost(res.HostEvents, res.Results, res.Liveness, f.need)
	return nil
}
