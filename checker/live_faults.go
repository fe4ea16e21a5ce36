// live_faults.go holds the faults and the availability the liveness report
// follows: the faults in force, the clock faults' and cuts' stretches, and
// the majority periods (docs/history.md §3, §4.6).

package checker

import (
	"fmt"
	"slices"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// liveFaults follows the faults and heals that took effect
// (docs/history.md §3, "Records and faults").
type liveFaults struct {
	anyFault  bool
	lastFault time.Duration
	inForce   []history.Op // copies of the faults in force
	skewing   bool
	skewSince time.Duration
	skews     []span // the stretches in which a clock fault was in force, ended ones
	// cutting is set while a cut (history.Op.HoldsRequests) is in force,
	// since cutSince; cuts are the ended stretches in which one was, in
	// order.
	cutting  bool
	cutSince time.Duration
	cuts     []span
	// late are the requests of unknown outcome whose latest arrival may
	// still move, lateMin the earliest arrival among those no cut holds
	// now.
	late    []*liveLate
	lateMin time.Duration
}

// liveLate is a request of unknown outcome, an acquire or a renewal, whose
// latest arrival (docs/history.md §4.5, "Requests held back by a cut") may
// still move: while a cut holds it, or until the history passes it
// without a cut beginning.
type liveLate struct {
	invAt, arrive time.Duration
	held          bool
	key           *liveKey
	acquire       *liveUnknown // the acquire, or
	renewedGrant  *liveGrant   // the grant the renewal renews, with
	ttl           time.Duration
}

// liveAvail follows the majority periods (docs/history.md §4.6).
type liveAvail struct {
	periods []upPeriod // ended periods
	current *upPeriod  // the period in progress, nil when no majority is up
	done    bool       // a history before version 3 had its first fault
	note    string
	// downs are the ended down stretches (docs/history.md §4.5, "Sessions
	// kept by a leader"), in order; down is set while one is in force,
	// since downSince.
	downs     []span
	down      bool
	downSince time.Duration
}

// each calls f with every majority period that overlaps [from, to], its
// index among the periods (that the one in progress will have) and its
// end (Forever for the one in progress), in order, until f returns false.
func (a *liveAvail) each(from, to time.Duration, f func(i int, p *upPeriod, end time.Duration) bool) {
	i, _ := slices.BinarySearchFunc(a.periods, from, func(p upPeriod, t time.Duration) int {
		if p.to > t {
			return 1
		}
		return -1
	})
	for ; i < len(a.periods) && a.periods[i].from < to; i++ {
		if !f(i, &a.periods[i], a.periods[i].to) {
			return
		}
	}
	if a.current != nil && a.current.from < to {
		cur := *a.current
		cur.to = Forever // not known yet: after every ended region
		f(len(a.periods), &cur, Forever)
	}
}

// nemesis takes a nemesis op: the faults and heals that took effect, and
// the availability records.
func (s *liveStream) nemesis(op *history.Op) {
	s.availability(op)
	if op.IsRecord() || op.Type == history.Invoke || op.NemesisFailed(s.version) {
		return
	}
	fs := &s.faults
	fs.anyFault, fs.lastFault = true, op.Time
	if op.IsHealOp(s.version) || op.F == JepsenStop {
		fs.inForce = slices.DeleteFunc(fs.inForce, func(f history.Op) bool {
			return op.F == JepsenStop || op.Heals(f, s.version)
		})
	} else if heal, _ := op.FaultOf(s.version); heal != "" {
		fs.inForce = append(fs.inForce, history.Op{Process: op.Process, Type: op.Type, F: op.F, Heal: op.Heal, Class: op.Class, Time: op.Time})
	}
	before, after := fs.skewing, false
	for _, f := range fs.inForce {
		if _, class := f.FaultOf(s.version); class.SkewsClocks() {
			after = true
		}
	}
	fs.skewing = after
	switch {
	case !before && after:
		fs.skewSince = op.Time
	case before && !after:
		sk := span{fs.skewSince, op.Time}
		fs.skews = append(fs.skews, sk)
		for _, k := range s.keys {
			k.cover(s, sk.from, sk.to+k.longestKnownLease)
		}
	}
	cutting := slices.ContainsFunc(fs.inForce, func(f history.Op) bool { return f.HoldsRequests(s.version) })
	switch {
	case !fs.cutting && cutting:
		fs.cutting, fs.cutSince = true, op.Time
		for _, l := range fs.late {
			l.held = true
		}
	case fs.cutting && !cutting:
		fs.cutting = false
		fs.cuts = append(fs.cuts, span{fs.cutSince, op.Time})
		s.healed(op.Time)
	}
}

// availability follows the majority periods (docs/history.md §4.6).
func (s *liveStream) availability(op *history.Op) {
	a := &s.avail
	if a.done || op.IsHeader() || op.NemesisFailed(s.version) {
		return
	}
	if s.version < 3 {
		a.current.to = op.Time
		a.periods = append(a.periods, *a.current)
		a.current, a.done = nil, true
		a.note = fmt.Sprintf("the history (format version %d) does not record which nodes were up: unavailable judged only before its first fault at %s", s.version, secs(op.Time))
		return
	}
	if !op.IsAvailability() {
		return
	}
	av, ok := history.AvailabilityOf(*op)
	s.downRecord(op.Time, !ok || len(av.Down) > 0)
	switch {
	case ok && av.Majority() && a.current != nil:
		a.current.records = append(a.current.records, timedAvailability{op.Time, av})
	case ok && av.Majority():
		a.current = &upPeriod{from: op.Time, back: true, records: []timedAvailability{{op.Time, av}}}
	case a.current != nil:
		a.current.to = op.Time
		a.periods = append(a.periods, *a.current)
		a.current = nil
	}
}
