package checker

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker/anomaly"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// The liveness anomalies, reported apart from the verdict (see Liveness).
const (
	// Stuck is the anomaly of a lock that nobody can take any more,
	// although nothing stands in the way (the Redis seed's property A,
	// deadlock-freedom).
	Stuck = anomaly.Stuck
	// Unavailable is the anomaly of a lock that nobody could take for a
	// while, although a majority of the server nodes was up and nothing
	// stood in the way (the Redis seed's property B, fault tolerance).
	Unavailable = anomaly.Unavailable
)

// LivenessKinds returns the liveness anomaly kinds.
func LivenessKinds() []string { return anomaly.Names(anomaly.Kind.Liveness) }

// DefaultStuckWindow and DefaultStuckAttempts are how long, and how often at
// the least, workers must have asked for a lock in vain before Liveness calls
// it stuck. DefaultUnavailableWindow is how long they must have asked in vain,
// with a majority of the server nodes up, before Liveness calls it
// unavailable.
const (
	DefaultStuckWindow       = time.Second
	DefaultStuckAttempts     = 3
	DefaultUnavailableWindow = time.Second
)

// LivenessOptions tunes Liveness; the zero value takes the defaults.
type LivenessOptions struct {
	Window   time.Duration // the shortest stuck tail; DefaultStuckWindow when 0
	Attempts int           // the fewest refused acquires of either anomaly; DefaultStuckAttempts when 0
	// UnavailableWindow is the shortest unavailable window;
	// DefaultUnavailableWindow when 0.
	UnavailableWindow time.Duration
	// RetransmitFirst and RetransmitMax bound how long a cut may hold a
	// request of unknown outcome back (docs/history.md §4.5, "Requests held
	// back by a cut"): TCP's first retransmission timeout
	// (DefaultRetransmitFirst when 0) and its longest interval between
	// retransmissions (DefaultRetransmitMax when 0).
	RetransmitFirst, RetransmitMax time.Duration
}

// LivenessResult is a run's liveness verdict, kept apart from its safety
// verdict: Invalid when some key is stuck or was unavailable, Unknown when no
// key could be judged (a fault in force at the end, or the last fault and
// the longest lease leaving too little of the run, for stuck, and no
// stretch with a majority up long enough for unavailable), Valid otherwise. Grants counts the successful acquires
// of the whole run, so that a safe verdict on a run that granted (almost)
// nothing says so.
type LivenessResult struct {
	Verdict Verdict `json:"verdict"`
	Grants  int     `json:"grants"`
	// Captures counts the tasks captured (capture oks' tasks) in a queue
	// run; 0 in a lock run.
	Captures  int       `json:"captures,omitempty"`
	Anomalies []Anomaly `json:"anomalies"`
	Note      string    `json:"note,omitempty"`
}

// Summary says in a few words what l found: its anomaly kinds ("stuck,
// unavailable"), "not stuck or unavailable" or "not judged".
func (l *LivenessResult) Summary() string {
	switch l.Verdict {
	case Valid:
		if l.Captures > 0 {
			return "no task lost"
		}
		return "not stuck or unavailable"
	case Invalid:
		var kinds []string
		for _, k := range LivenessKinds() {
			if l.Has(k) {
				kinds = append(kinds, k)
			}
		}
		return strings.Join(kinds, ", ")
	}
	return "not judged"
}

// Has reports whether the result has an anomaly of kind.
func (l *LivenessResult) Has(kind string) bool {
	return l != nil && slices.ContainsFunc(l.Anomalies, func(a Anomaly) bool { return a.Kind == kind })
}

// NotHeldError is the text of the error with which a client records a
// release (or renewal) that the service refused because the lock was not
// held (clients.ErrNotHeld): a release `fail` whose `error` contains it
// tells that its process held nothing from then on (docs/history.md §4.5).
const NotHeldError = "lock not held"

// Liveness judges whether a well-formed history's locks stayed takeable
// (docs/history.md §4.5 and §4.6).
//
// The excuses of a key k are the stretches in which, under some reading of
// the ops of unknown outcome, k may rightly have been held (docs/history.md
// §4.5, "Excuses"), and those of clock faults in force plus the longest
// lease of k. k is stuck when, from S to the end of the history, a window
// of at least opts.Window, workers asked for k in vain at least
// opts.Attempts times (acquires refused at or after S, however long they
// waited, and acquires still waiting at the end that had waited at least
// opts.Window), where S is the latest of the end of every excuse and, when
// the history has faults, the last fault or heal that took effect plus the
// longest finite lease of k. An excuse that never ends means k is held, not
// stuck; a fault in force at the end (or, from format version 3 on, no
// majority of the server nodes up at the end) means k is not judged for
// stuck.
//
// k was unavailable from S to E when [S, E] is a maximal stretch that no
// excuse covers, inside a period in which a majority of the server nodes
// was up (no earlier than its start plus the longest finite lease of k
// when the majority came back up), at least opts.UnavailableWindow long,
// with at least opts.Attempts acquires of k refused in it (completed fail
// at or after S and at or before E, whenever they were invoked).
//
// It reads h op by op (liveStream), holding what docs/history.md §6 says.
func Liveness(h history.History, opts LivenessOptions) LivenessResult {
	s := newLiveStream(opts)
	followEach(h, s.add, s.hold)
	return s.result()
}

// liveness is Liveness over facts already analyzed from h: the stream
// reads h's ops and the Follower's events over them, and the queue's lost
// tasks come from f.
func liveness(h history.History, f *Facts, opts LivenessOptions) LivenessResult {
	s := newLiveStream(opts)
	s.queue = nil
	followEach(h, s.add, s.hold)
	return s.report(func() (bool, int, []Anomaly) {
		if !f.Queue.Captured() {
			return false, 0, nil
		}
		return true, len(f.Queue.Holds), lostTasks(h, f.Queue)
	})
}

// DefaultRetransmitFirst is the longest first retransmission timeout of
// TCP (Linux's initial timeout, before a round trip is measured; 200 ms
// once one is), and DefaultRetransmitMax the longest interval between two
// retransmissions (Linux's TCP_RTO_MAX). Each retransmission of data that
// a cut drops waits twice as long as the one before, up to the longest.
const (
	DefaultRetransmitFirst = time.Second
	DefaultRetransmitMax   = 120 * time.Second
)

// heldUntil is the latest moment a request sent at invoke, which a cut
// dropped until heal, arrives: at the first retransmission after the heal.
// The backoff doubles, so that comes less than heal − invoke plus the
// first timeout after the heal, and no later than the longest interval
// after it.
func (o LivenessOptions) heldUntil(invoke, heal time.Duration) time.Duration {
	return heal + min(heal-invoke+o.RetransmitFirst, o.RetransmitMax)
}

// span is a half-open stretch of harness time [from, to).
type span struct{ from, to time.Duration }

// JepsenStop is the f with which a Jepsen history (docs/history.md §5) ends
// its faults: like heal-all, it heals every fault in force.
const JepsenStop = "stop"

// askedText says how the window's acquires went: "5 acquires failed",
// "3 acquires were still waiting at the end", or "5 acquires failed and 3
// were still waiting at the end".
func askedText(failed, waiting int) string {
	var parts []string
	if failed > 0 {
		parts = append(parts, plural(failed, "acquire")+" failed")
	}
	if waiting > 0 {
		verb := " were"
		if waiting == 1 {
			verb = " was"
		}
		noun := fmt.Sprint(waiting)
		if failed == 0 {
			noun = plural(waiting, "acquire")
		}
		parts = append(parts, noun+verb+" still waiting at the end")
	}
	return strings.Join(parts, " and ")
}

// plural writes n and the noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// upPeriod is a stretch of the history in which a majority of the server
// nodes was up, by the availability records.
type upPeriod struct {
	from, to time.Duration
	// back is set when the period began with a record that brought the
	// majority back (not at the start of the history).
	back bool
	// records are the availability records in force during the period, in
	// order, each from its time on; none when no record was in force (every
	// node up, their number unknown).
	records []timedAvailability
}

type timedAvailability struct {
	at time.Duration
	history.Availability
}

// nodesText says how many server nodes were up during [from, to] of p: "every
// server node up", "all 5 server nodes up", "at least 3 of 5 server nodes
// up".
func (p upPeriod) nodesText(from, to time.Duration) string {
	up, nodes := -1, 0
	for i, r := range p.records {
		if i+1 < len(p.records) && p.records[i+1].at <= from {
			continue // replaced before the window
		}
		if r.at > to {
			break
		}
		if up < 0 || r.Up() < up {
			up = r.Up()
		}
		nodes = max(nodes, r.Nodes)
	}
	switch {
	case up < 0:
		return "every server node up"
	case up == nodes && nodes == 1:
		return "its one server node up"
	case up == nodes:
		return fmt.Sprintf("all %d server nodes up", nodes)
	}
	return fmt.Sprintf("at least %d of %d server nodes up", up, nodes)
}

// mergeSpans sorts spans and merges those that overlap or touch.
func mergeSpans(in []span) []span {
	slices.SortFunc(in, func(a, b span) int {
		switch {
		case a.from < b.from:
			return -1
		case a.from > b.from:
			return 1
		}
		return 0
	})
	var out []span
	for _, x := range in {
		if x.to <= x.from {
			continue
		}
		if n := len(out); n > 0 && x.from <= out[n-1].to {
			out[n-1].to = max(out[n-1].to, x.to)
			continue
		}
		out = append(out, x)
	}
	return out
}
