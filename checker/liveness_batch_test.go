package checker

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker/synth"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// This file keeps the liveness report as it was before it read its
// history as a stream; TestLiveStreamAsBatch and FuzzLiveStream hold the
// streaming report to it.

// attempt is one completed acquire: the indexes of its invoke and
// completion.
type attempt struct{ invoke, done int }

// keyLiveness is what Liveness gathers about one key.
type keyLiveness struct {
	longest   time.Duration // the longest finite lease
	never     bool          // some grant's lease is -1: the lock never expires
	sessions  bool          // every grant with lease -1 is a session lock
	all       bool          // every grant is a session lock
	held      string        // who may rightly hold the key for ever
	lastGrant int           // index in f.Grants, -1 when none
	grants    []int         // indexes in f.Grants, in the order of their oks
	excused   []span        // stretches in which refusals are excused
	waiting   []int         // invokes of the acquires still pending at the end, in order
}

// holdFacts is what the history says about how one grant's hold ended.
type holdFacts struct {
	released time.Duration // the return of its release ok; -1 when none
	lost     time.Duration // the return of its lease-lost or of its release refused "not held"; -1 when none
	// extended is the latest end, call plus lease, of a renewal of
	// unknown outcome (info or pending) of the grant; -1 when none,
	// Forever for a lease of -1. unknownLease is the longest of their
	// leases (history.NoLease when one never expires).
	extended     time.Duration
	unknownLease time.Duration
	renewed      bool // some renewal of unknown outcome
}

// faultState is what the nemesis ops say about faults: which took effect and
// when they were in force (docs/history.md §3, "Records and faults").
type faultState struct {
	any     bool          // some fault or heal took effect
	last    time.Duration // the last fault or heal that took effect
	inForce []int         // the indexes of the faults still in force at the end
	skews   []span        // the stretches in which a clock fault was in force
	cuts    []span        // the stretches in which a cut was in force
	downs   []span        // the down stretches (docs/history.md §4.5, "Sessions kept by a leader")
}

// downStretchesOf returns the down stretches of h (docs/history.md §4.5):
// from an availability record (format version 3 on) whose down is not
// empty, or that cannot be read, to the next whose down is empty, or to
// end.
func downStretchesOf(h history.History, nemesis []int, version int, end time.Duration) []span {
	if version < 3 {
		return nil
	}
	var out []span
	down, since := false, time.Duration(0)
	for _, i := range nemesis {
		op := &h[i]
		if !op.IsAvailability() || op.NemesisFailed(version) {
			continue
		}
		av, ok := history.AvailabilityOf(*op)
		switch now := !ok || len(av.Down) > 0; {
		case now && !down:
			down, since = true, op.Time
		case !now && down:
			down = false
			out = append(out, span{since, op.Time})
		}
	}
	if down {
		out = append(out, span{since, end})
	}
	return out
}

// faultsOf follows the faults and heals of h that took effect, in order: a
// fault (a nemesis op that is not a record, not a heal, not an invoke and
// did not fail) is in force from its time until a heal of it (the heal its
// op names, history.Op.Heals), heal-all or JepsenStop that did not fail, or
// to the end of the history. A fault of class clock (history.Op.FaultOf)
// skews a clock.
func faultsOf(h history.History, nemesis []int, version int, end time.Duration) faultState {
	var fs faultState
	var skewSince, cutSince time.Duration
	cutting := func() bool {
		return slices.ContainsFunc(fs.inForce, func(i int) bool { return h[i].HoldsRequests(version) })
	}
	skewing := func() bool {
		for _, i := range fs.inForce {
			if _, class := h[i].FaultOf(version); class.SkewsClocks() {
				return true
			}
		}
		return false
	}
	for _, i := range nemesis {
		op := &h[i]
		if op.IsRecord() || op.Type == history.Invoke || op.NemesisFailed(version) {
			continue
		}
		fs.any, fs.last = true, op.Time
		before, cutBefore := skewing(), cutting()
		if op.IsHealOp(version) || op.F == JepsenStop {
			fs.inForce = slices.DeleteFunc(fs.inForce, func(j int) bool {
				return op.F == JepsenStop || op.Heals(h[j], version)
			})
		} else if heal, _ := op.FaultOf(version); heal != "" {
			fs.inForce = append(fs.inForce, i)
		} // a moment is in force at its time only

		switch after := skewing(); {
		case !before && after:
			skewSince = op.Time
		case before && !after:
			fs.skews = append(fs.skews, span{skewSince, op.Time})
		}
		switch after := cutting(); {
		case !cutBefore && after:
			cutSince = op.Time
		case cutBefore && !after:
			fs.cuts = append(fs.cuts, span{cutSince, op.Time})
		}
	}
	if skewing() {
		fs.skews = append(fs.skews, span{skewSince, end})
	}
	if cutting() {
		fs.cuts = append(fs.cuts, span{cutSince, end})
	}
	return fs
}

// batchLiveness is the liveness report as it was before it read its
// history as a stream: Liveness over facts already analyzed from h.
func batchLiveness(h history.History, f *Facts, opts LivenessOptions) LivenessResult {
	opts = opts.withDefaults()
	res := LivenessResult{Grants: len(f.Grants), Anomalies: []Anomaly{}}
	if len(h) == 0 {
		res.Verdict, res.Note = Unknown, "the history is empty"
		return res
	}
	end := h[len(h)-1].Time
	sc := scanLiveness(h)
	faults := faultsOf(h, sc.nemesis, f.Version, end)
	faults.downs = downStretchesOf(h, sc.nemesis, f.Version, end)
	keys := batchKeys(h, f, sc, faults, opts)
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	periods, upAtEnd, availNote := majorityPeriods(h, sc.nemesis, f.Version, end)
	judged := 0
	var notes []string
	if availNote != "" {
		notes = append(notes, availNote)
	}
	for _, k := range names {
		s := keys[k]
		if stuck, ok, note := stuckAnomaly(h, f, s, k, sc.attempts[k], sc.crashed, faults, upAtEnd, end, opts); ok {
			judged++
			if stuck != nil {
				res.Anomalies = append(res.Anomalies, *stuck)
			}
			if note != "" {
				notes = append(notes, note)
			}
		} else {
			notes = append(notes, note)
		}
		as, ok := unavailableAnomalies(h, f, s, k, sc.attempts[k], sc.crashed, periods, opts)
		if ok {
			judged++
		}
		res.Anomalies = append(res.Anomalies, as...)
	}
	if f.Queue.Captured() {
		judged++
		res.Captures = len(f.Queue.Holds)
		res.Anomalies = append(res.Anomalies, lostTasks(h, f.Queue)...)
	}
	switch {
	case len(res.Anomalies) > 0:
		res.Verdict = Invalid
	case judged > 0:
		res.Verdict = Valid
	default:
		res.Verdict = Unknown
	}
	if len(notes) > 0 {
		res.Note = strings.Join(notes, "; ")
	}
	if res.Grants == 0 && !f.Queue.Captured() {
		res.Note = strings.TrimPrefix(res.Note+"; no acquire succeeded in the whole run", "; ")
	}
	return res
}

// livenessScan is what batchLiveness's one pass over the history finds:
// the nemesis ops, the crashes and client closes, and the acquires of each
// key with their completions.
type livenessScan struct {
	crashed  map[int]time.Duration // process → time of its info
	closed   map[int]time.Duration // process → when its client was closed
	attempts map[string][]attempt
	open     map[int]int // process → index of its outstanding acquire invoke
	nemesis  []int       // the indexes of the nemesis ops
}

// scanLiveness makes batchLiveness's one pass over h.
func scanLiveness(h history.History) livenessScan {
	sc := livenessScan{crashed: map[int]time.Duration{}, closed: map[int]time.Duration{}, attempts: map[string][]attempt{}, open: map[int]int{}}
	keptBy := map[int][]int{} // worker → crashed processes whose client it kept
	for i := range h {
		op := &h[i]
		switch {
		case op.IsNemesis():
			sc.nemesis = append(sc.nemesis, i)
		default:
			if op.Type == history.Info {
				if _, dead := sc.crashed[op.Process]; !dead {
					sc.crashed[op.Process] = op.Time
					if op.Kept {
						keptBy[op.Client] = append(keptBy[op.Client], op.Process)
					} else {
						for _, p := range append(keptBy[op.Client], op.Process) {
							sc.closed[p] = op.Time
						}
						delete(keptBy, op.Client)
					}
				}
			}
			if op.F != history.FAcquire {
				continue
			}
			if op.Type == history.Invoke {
				sc.open[op.Process] = i
			} else if inv, ok := sc.open[op.Process]; ok {
				delete(sc.open, op.Process)
				sc.attempts[op.Key] = append(sc.attempts[op.Key], attempt{inv, i})
			}
		}
	}
	return sc
}

// batchKeys gathers what batchLiveness judges each key asked for by: its
// grants and their leases, its waiting acquires, and its excuses.
func batchKeys(h history.History, f *Facts, sc livenessScan, faults faultState, opts LivenessOptions) map[string]*keyLiveness {
	holds := grantHolds(h, f, faults.cuts, opts)
	keys := map[string]*keyLiveness{}
	state := func(k string) *keyLiveness {
		if s, ok := keys[k]; ok {
			return s
		}
		s := &keyLiveness{lastGrant: -1, sessions: true, all: true}
		keys[k] = s
		return s
	}
	ends := make([]time.Duration, len(f.Grants)) // until when each grant may rightly have been held
	for i, g := range f.Grants {
		s := state(g.Key)
		s.lastGrant = i
		s.grants = append(s.grants, i)
		lease := g.Lease
		if n := len(g.Renewals); n > 0 {
			lease = g.Renewals[n-1].Lease
		}
		if lease >= 0 {
			s.longest = max(s.longest, lease)
		}
		if g.Lease < 0 {
			s.never = true
			s.sessions = s.sessions && g.Session
		}
		s.all = s.all && g.Session
		c, dead := sc.crashed[g.Process]
		ends[i] = holdEnd(h, g, holds[i], c, dead, faults.downs)
	}
	// Every key asked for is judged, also one whose acquires are pending.
	for _, inv := range sc.open {
		s := state(h[inv].Key)
		s.waiting = append(s.waiting, inv)
	}
	for k, as := range sc.attempts {
		s := state(k)
		for _, a := range as {
			if h[a.done].Type != history.Info {
				continue
			}
			to := unknownAcquireEnd(h, a, s, sc.closed, faults, opts)
			s.excused = append(s.excused, span{h[a.invoke].Time, to})
			if to == Forever && s.held == "" {
				s.held = fmt.Sprintf("worker %d's acquire of unknown outcome at %s may have taken it for ever", h[a.invoke].Client, secs(h[a.invoke].Time))
			}
		}
	}
	for _, s := range keys {
		sort.Ints(s.waiting)
		ex := grantExcuses(f, s.grants, ends)
		for j, sp := range ex {
			g := f.Grants[s.grants[j]]
			if sp.to == Forever && s.held == "" {
				s.held = fmt.Sprintf("worker %d, granted it at %s, may rightly hold it still", g.Client, secs(g.Return))
			}
			// before its return, a grant excuses no moment of a down stretch
			s.excused = append(s.excused, upParts(g.Call, g.Return, faults.downs)...)
			s.excused = append(s.excused, span{g.Return, sp.to})
		}
		for _, sp := range faults.skews {
			s.excused = append(s.excused, span{sp.from, sp.to + s.longest})
		}
	}
	return keys
}

// holdEnd is the moment until which grant g may rightly have been held
// (docs/history.md §4.5), before any later grant took the lock: its lease's
// end E is its call plus its lease when its ok records `lease`, else its
// return plus its ttl (a ttl that stands for the lease counts from the
// grant, at the latest its return); after a renewal ok, the latest one's
// call plus its lease; and a renewal of unknown outcome may have moved it
// to its own call plus lease. The hold ends at its release ok's return;
// else, when its process crashed at C, at C plus the lease for a session
// lock with a lease, moved on by the down stretches downs (sessionEnd; C
// for one that never expires), at E for a lock that
// is no session (C when it never expires); else, while its process lives,
// at E for a finite lease that is no session's, never otherwise. A
// lease-lost, or a release refused "not held", ends it at its return at
// the latest.
func holdEnd(h history.History, g Grant, hf holdFacts, c time.Duration, dead bool, downs []span) time.Duration {
	lease := g.Lease
	e := g.Return
	if h[g.OK].Lease != 0 {
		e = g.Call
	}
	if n := len(g.Renewals); n > 0 {
		lease, e = g.Renewals[n-1].Lease, g.Renewals[n-1].Call
	}
	if lease < 0 {
		e = Forever
	} else {
		e += lease
	}
	if hf.renewed {
		e = max(e, hf.extended)
		if lease >= 0 && (hf.unknownLease < 0 || hf.unknownLease > lease) {
			lease = hf.unknownLease
		}
	}
	var end time.Duration
	switch {
	case hf.released >= 0:
		end = hf.released
	case dead && g.Session && lease < 0:
		end = c
	case dead && g.Session:
		end = sessionEnd(c+lease, lease, downs)
	case dead && e == Forever:
		end = c
	case dead:
		end = e
	case g.Session:
		end = Forever
	default:
		end = e
	}
	if hf.lost >= 0 {
		end = min(end, hf.lost)
	}
	return end
}

// unknownAcquireEnd is the moment until which an acquire of unknown outcome
// (info) may have left k held (docs/history.md §4.6): for a lock that never
// expires (its invoke has no ttl, or some grant of k has lease -1), until
// its process's client was closed when it is a session lock (no ttl, or
// every grant of k with lease -1 is a session lock) and for ever otherwise;
// else its latest arrival plus the larger of its ttl and the longest lease
// of k, moved on by the down stretches when every grant of k is a session
// lock (sessionEnd): its completion, or, when a cut in force at some moment from its
// invoke to its latest arrival held its request back, that cut's heal plus
// as long again as from the invoke, plus RetransmitFirst, at most
// RetransmitMax (cuts are in order, and the latest arrival only grows).
func unknownAcquireEnd(h history.History, a attempt, s *keyLiveness, closed map[int]time.Duration, faults faultState, opts LivenessOptions) time.Duration {
	inv := &h[a.invoke]
	if inv.TTL <= 0 || s.never {
		if inv.TTL <= 0 || s.sessions {
			if c, ok := closed[inv.Process]; ok {
				return c
			}
		}
		return Forever
	}
	x := max(inv.TTL, s.longest)
	end := latestArrival(inv.Time, h[a.done].Time, faults.cuts, opts) + x
	if s.all {
		end = sessionEnd(end, x, faults.downs)
	}
	return end
}

// latestArrival is the latest arrival of a request invoked at inv and
// completed at done (§4.5, "Requests held back by a cut"): done, moved on
// by each cut stretch that began at or before the arrival so far and ended
// at or after inv to its heal plus as long again as from inv, plus
// RetransmitFirst, at most RetransmitMax (cuts are in order, and the
// arrival only grows).
func latestArrival(inv, done time.Duration, cuts []span, opts LivenessOptions) time.Duration {
	arrive := done
	for _, c := range cuts {
		if c.from > arrive {
			break
		}
		if c.to >= inv {
			arrive = max(arrive, c.to+min(c.to-inv+opts.RetransmitFirst, opts.RetransmitMax))
		}
	}
	return arrive
}

// stuckAnomaly judges whether key k is stuck at the end of the history. It
// returns the anomaly when it is, whether k could be judged, and a note for
// the result (why k was not judged, or who holds it).
func stuckAnomaly(h history.History, f *Facts, s *keyLiveness, k string, as []attempt, crashed map[int]time.Duration,
	faults faultState, upAtEnd bool, end time.Duration, opts LivenessOptions) (*Anomaly, bool, string) {
	if n := len(faults.inForce); n > 0 {
		op := &h[faults.inForce[n-1]]
		return nil, false, fmt.Sprintf("%s not judged for stuck: a fault (%s at %s) was still in force at the end", k, op.F, secs(op.Time))
	}
	if !upAtEnd {
		return nil, false, fmt.Sprintf("%s not judged for stuck: no majority of the server nodes was up at the end", k)
	}
	var settled time.Duration // the faults' effects are over
	if faults.any {
		settled = faults.last + s.longest
	}
	if end-settled < opts.Window {
		if !faults.any {
			return nil, false, fmt.Sprintf("%s not judged for stuck: the run is shorter than %s", k, opts.Window)
		}
		return nil, false, fmt.Sprintf("%s not judged for stuck: the last fault at %s and its longest lease leave less than %s of the run", k, secs(faults.last), opts.Window)
	}
	if s.held != "" {
		return nil, true, fmt.Sprintf("%s held at the end: %s", k, s.held)
	}
	start := settled
	for _, sp := range s.excused {
		start = max(start, sp.to)
	}
	if end-start < opts.Window {
		return nil, true, ""
	}
	var failed []attempt
	workers := map[int]bool{}
	for _, a := range as {
		if h[a.done].Time < start || h[a.done].Type != history.Fail {
			continue
		}
		failed = append(failed, a)
		workers[h[a.invoke].Client] = true
	}
	// A worker still waiting at the end asked through the window when it
	// had waited at least the window by then.
	var still []int
	for _, inv := range s.waiting {
		if end-h[inv].Time >= opts.Window {
			still = append(still, inv)
			workers[h[inv].Client] = true
		}
	}
	if len(failed)+len(still) < opts.Attempts {
		return nil, true, ""
	}
	var ops []int
	if len(failed) > 0 {
		ops = []int{failed[0].invoke, failed[0].done, failed[len(failed)-1].invoke, failed[len(failed)-1].done}
	}
	ops = append(ops, still...)
	last := "no grant of it was ever recorded"
	if s.lastGrant >= 0 {
		g := f.Grants[s.lastGrant]
		ops = append([]int{g.Invoke, g.OK}, ops...)
		last = "the last grant was " + grantText(g, crashed)
	}
	after := "every lease had run out"
	if faults.any {
		after = fmt.Sprintf("the last fault (at %s) and every lease were over", secs(faults.last))
	}
	return &Anomaly{
		Kind:   Stuck,
		Key:    k,
		Ops:    ops,
		Window: &Window{Start: start, End: end},
		Message: fmt.Sprintf("%s stuck from %s to the end at %s, nobody took it again: %s asked in vain (%s), once %s and with nobody believing it held %s; %s",
			k, secs(start), secs(end), plural(len(workers), "worker"), askedText(len(failed), len(still)), after, k, last),
	}, true, ""
}

// grantText describes a grant for an anomaly's sentence: "worker 1's at
// 2.005s, whose process crashed at 2.010s".
func grantText(g Grant, crashed map[int]time.Duration) string {
	t := fmt.Sprintf("worker %d's at %s", g.Client, secs(g.Return))
	if c, dead := crashed[g.Process]; dead {
		t += fmt.Sprintf(", whose process crashed at %s", secs(c))
	}
	return t
}

// grantExcuses returns, for the grants of one key (indexes into f.Grants,
// in the order of their oks), the stretch in which each excuses refusals:
// from its call (it may have taken effect there) to the latest of its
// return, ends (the moment until which it may rightly have been held,
// Forever for ever) and the end of its belief, but no later than the
// earliest return of a grant of the key invoked after it returned (that
// grant took the lock by then, and excuses from its own call on).
func grantExcuses(f *Facts, grants []int, ends []time.Duration) []span {
	byInvoke := slices.Clone(grants)
	slices.SortFunc(byInvoke, func(a, b int) int { return f.Grants[a].Invoke - f.Grants[b].Invoke })
	// later[j] is the earliest return of the grants byInvoke[j:].
	later := make([]time.Duration, len(byInvoke)+1)
	later[len(byInvoke)] = Forever
	for j := len(byInvoke) - 1; j >= 0; j-- {
		later[j] = min(later[j+1], f.Grants[byInvoke[j]].Return)
	}
	out := make([]span, 0, len(grants))
	for _, i := range grants {
		g := &f.Grants[i]
		to := max(g.Return, ends[i])
		if b := f.Beliefs[i]; b.End != Forever {
			to = max(to, b.End)
		}
		next := sort.Search(len(byInvoke), func(j int) bool { return f.Grants[byInvoke[j]].Invoke > g.OK })
		to = min(to, later[next])
		out = append(out, span{g.Call, max(to, g.Return)})
	}
	return out
}

// majorityPeriods returns the periods of h in which a majority of the server
// nodes was up, up to end, and a note when the history does not record the
// nodes' availability; nemesis holds the indexes of h's nemesis ops. Before
// the first availability record every node is up; each record holds until
// the next. A history of a format version before 3 has no records: every
// node is up until its first nemesis op (other than the header) that did not
// fail, and from there on nothing is known. A record whose value cannot be read makes the
// majority unknown until the next one.
func majorityPeriods(h history.History, nemesis []int, version int, end time.Duration) ([]upPeriod, bool, string) {
	var out []upPeriod
	cur := &upPeriod{}
	for _, i := range nemesis {
		op := &h[i]
		if op.IsHeader() || op.NemesisFailed(version) {
			continue
		}
		if version < 3 {
			cur.to = op.Time
			out = append(out, *cur)
			return out, true, fmt.Sprintf("the history (format version %d) does not record which nodes were up: unavailable judged only before its first fault at %s", version, secs(op.Time))
		}
		if !op.IsAvailability() {
			continue
		}
		a, ok := history.AvailabilityOf(*op)
		switch {
		case ok && a.Majority() && cur != nil:
			cur.records = append(cur.records, timedAvailability{op.Time, a})
		case ok && a.Majority():
			cur = &upPeriod{from: op.Time, back: true, records: []timedAvailability{{op.Time, a}}}
		case cur != nil:
			cur.to = op.Time
			out = append(out, *cur)
			cur = nil
		}
	}
	if cur != nil {
		cur.to = end
		out = append(out, *cur)
	}
	return out, cur != nil, ""
}

// unavailableAnomalies finds the stretches in which key k was unavailable:
// inside a period with a majority up, after the period's first longest
// lease when the majority came back, covered by no excuse of s, at least
// opts.UnavailableWindow long, with at least opts.Attempts acquires of k
// invoked and refused inside. It also reports whether k could be judged (some
// period left a stretch that long).
func unavailableAnomalies(h history.History, f *Facts, s *keyLiveness, k string, as []attempt, crashed map[int]time.Duration,
	periods []upPeriod, opts LivenessOptions) ([]Anomaly, bool) {
	excused := mergeSpans(s.excused)
	var out []Anomaly
	judged := false
	for _, p := range periods {
		lo := p.from
		if p.back {
			lo += s.longest
		}
		if p.to-lo < opts.UnavailableWindow {
			continue
		}
		judged = true
		// The free stretches of [lo, p.to]: between the excuses.
		j := sort.Search(len(excused), func(j int) bool { return excused[j].to > lo })
		for a := lo; a < p.to; {
			b := p.to
			if j < len(excused) && excused[j].from < b {
				b = max(excused[j].from, a)
			}
			if b-a >= opts.UnavailableWindow {
				if an, ok := unavailableIn(h, f, s, k, as, crashed, p, a, b, opts); ok {
					out = append(out, an)
				}
			}
			if j >= len(excused) || excused[j].from >= p.to {
				break
			}
			a = excused[j].to
			j++
		}
	}
	return out, judged
}

// unavailableIn returns the unavailable anomaly of k over the free stretch
// [from, to] of period p, when enough acquires were refused in it (their
// fail at or after from and at or before to, whenever they were invoked: a
// waiting acquire asked from its call for as long as it waited).
func unavailableIn(h history.History, f *Facts, s *keyLiveness, k string, as []attempt, crashed map[int]time.Duration,
	p upPeriod, from, to time.Duration, opts LivenessOptions) (Anomaly, bool) {
	first, last, n := -1, -1, 0
	workers := map[int]bool{}
	for i := sort.Search(len(as), func(i int) bool { return h[as[i].done].Time >= from }); i < len(as) && h[as[i].done].Time <= to; i++ {
		a := as[i]
		if h[a.done].Type != history.Fail {
			continue
		}
		if first < 0 {
			first = i
		}
		last = i
		n++
		workers[h[a.invoke].Client] = true
	}
	if n < opts.Attempts {
		return Anomaly{}, false
	}
	ops := []int{as[first].invoke, as[first].done, as[last].invoke, as[last].done}
	before := "no grant of it came before"
	if g := sort.Search(len(s.grants), func(g int) bool { return f.Grants[s.grants[g]].Return > from }) - 1; g >= 0 {
		gr := f.Grants[s.grants[g]]
		ops = append([]int{gr.Invoke, gr.OK}, ops...)
		before = "the last grant before it was " + grantText(gr, crashed)
	}
	return Anomaly{
		Kind:   Unavailable,
		Key:    k,
		Ops:    ops,
		Window: &Window{Start: from, End: to},
		Message: fmt.Sprintf("%s unavailable from %s to %s with %s: %s by %s failed and none succeeded, with no lease left, no acquire of unknown outcome in doubt and nobody believing it held %s; %s",
			k, secs(from), secs(to), p.nodesText(from, to), plural(n, "acquire"), plural(len(workers), "worker"), k, before),
	}, true
}

// grantHolds returns, for each grant, what the history says about the end
// of its hold: the return of its process's release ok of its key, of its
// lease-lost or of its release refused "not held" (NotHeldError), and the
// renewals of unknown outcome (info, or pending at the end), each before
// the process's next grant of the key.
func grantHolds(h history.History, f *Facts, cuts []span, opts LivenessOptions) []holdFacts {
	out := make([]holdFacts, len(f.Grants))
	for i := range out {
		out[i] = holdFacts{released: -1, lost: -1, extended: -1}
	}
	type pk struct {
		process int
		key     string
	}
	current := map[pk]int{}    // the grant in force per process and key
	renewing := map[pk]int{}   // the index of an outstanding renew invoke
	releasing := map[pk]bool{} // an outstanding release of the grant in force
	next := 0                  // grants are in order of their ok
	unknown := func(g, inv int, done time.Duration) {
		unknownRenewal(&out[g], h[inv], f.Grants[g].Lease, latestArrival(h[inv].Time, done, cuts, opts))
	}
	for i := range h {
		op := &h[i]
		for next < len(f.Grants) && f.Grants[next].OK == i {
			current[pk{f.Grants[next].Process, f.Grants[next].Key}] = next
			next++
		}
		if op.IsNemesis() {
			continue
		}
		at := pk{op.Process, op.Key}
		g, ok := current[at]
		if !ok {
			continue
		}
		hf := &out[g]
		switch op.F {
		case history.FRelease:
			switch op.Type {
			case history.Invoke:
				releasing[at] = true
			case history.OK:
				if releasing[at] && hf.released < 0 {
					hf.released = op.Time
				}
				delete(releasing, at)
			case history.Fail:
				if releasing[at] && strings.Contains(op.Error, NotHeldError) && hf.lost < 0 {
					hf.lost = op.Time
				}
				delete(releasing, at)
			default:
				delete(releasing, at)
			}
		case history.FLeaseLost:
			if op.Type == history.OK && hf.lost < 0 {
				hf.lost = op.Time
			}
		case history.FRenew:
			switch op.Type {
			case history.Invoke:
				renewing[at] = i
			case history.Info:
				if inv, ok := renewing[at]; ok {
					unknown(g, inv, op.Time)
				}
				delete(renewing, at)
			default:
				delete(renewing, at)
			}
		}
	}
	// A renewal still outstanding at the end is of unknown outcome.
	for at, inv := range renewing {
		if g, ok := current[at]; ok && f.Grants[g].OK < inv {
			unknown(g, inv, h[len(h)-1].Time)
		}
	}
	return out
}

// unknownRenewal takes into hf a renewal of unknown outcome of a grant
// whose lease is grant, invoked by inv, whose latest arrival is arrive.
func unknownRenewal(hf *holdFacts, inv history.Op, grant, arrive time.Duration) {
	lease := inv.TTL
	if lease <= 0 {
		lease = grant
	}
	to := Forever
	if lease >= 0 {
		to = arrive + lease
	}
	if !hf.renewed || lease < 0 || hf.unknownLease >= 0 && lease > hf.unknownLease {
		hf.unknownLease = lease
	}
	hf.renewed = true
	hf.extended = max(hf.extended, to)
}

// livenessOptionSets are the options the equivalence tests use: the
// defaults and tighter bounds, under which the histories' short stretches
// and few refusals count.
var livenessOptionSets = []LivenessOptions{
	{},
	{Window: 100 * time.Millisecond, Attempts: 2, UnavailableWindow: 100 * time.Millisecond},
	{Window: 10 * time.Millisecond, Attempts: 1, UnavailableWindow: 5 * time.Millisecond},
	{Window: 3 * time.Second, Attempts: 5, UnavailableWindow: 500 * time.Millisecond},
}

// CompareLiveStream holds the streaming liveness report of h, both as
// Liveness makes it (the stream alone) and as CheckWithLiveness does
// (with the queue's facts), to the batch report, and describes where they
// differ ("" when they agree).
func CompareLiveStream(h history.History, opts LivenessOptions) string {
	f := Analyze(h)
	want := batchLiveness(h, f, opts)
	for _, got := range []struct {
		how string
		res LivenessResult
	}{{"Liveness", Liveness(h, opts)}, {"liveness over facts", liveness(h, f, opts)}} {
		if !reflect.DeepEqual(got.res, want) {
			return fmt.Sprintf("options %+v: %s differs from the batch report:\n%s", opts, got.how, livenessDiff(got.res, want))
		}
	}
	return ""
}

// livenessDiff describes how liveness result got differs from want: the
// verdict, counts and note, and the anomalies either has and the other
// has not.
func livenessDiff(got, want LivenessResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  got  %s, %d grants, %d captures, note %q\n", got.Verdict, got.Grants, got.Captures, got.Note)
	fmt.Fprintf(&b, "  want %s, %d grants, %d captures, note %q\n", want.Verdict, want.Grants, want.Captures, want.Note)
	line := func(a Anomaly) string {
		return fmt.Sprintf("%s %s %v %v %s", a.Kind, a.Key, a.Ops, a.Window, a.Message)
	}
	seen := map[string]int{}
	for _, a := range want.Anomalies {
		seen[line(a)]++
	}
	for _, a := range got.Anomalies {
		if seen[line(a)]--; seen[line(a)] < 0 {
			fmt.Fprintf(&b, "  only got:  %s\n", line(a))
		}
	}
	for l, n := range seen {
		if n > 0 {
			fmt.Fprintf(&b, "  only want: %s\n", l)
		}
	}
	return b.String()
}

// TestLiveStreamAsBatch holds the streaming liveness report to the batch
// one on every well-formed history stored in the repository and on
// synthetic histories, valid and with each kind of anomaly planted, under
// the default options and tighter ones.
func TestLiveStreamAsBatch(t *testing.T) {
	for _, sh := range storedHistories(t) {
		t.Run(sh.name, func(t *testing.T) {
			for _, opts := range livenessOptionSets {
				if d := CompareLiveStream(sh.h, opts); d != "" {
					t.Fatal(d)
				}
			}
		})
	}
	for seed := uint64(0); seed < 16; seed++ {
		r := rand.New(rand.NewPCG(seed, 8))
		opts := synth.Options{Workers: 1 + r.IntN(8), Keys: 1 + r.IntN(3), Ops: 3000, TTL: time.Duration(3+r.IntN(400)) * time.Millisecond,
			InfoRate: 0.04, Tokens: seed%2 == 0, Session: seed%3 == 1, NemesisEvery: []int{0, -1, 300}[seed%3]}
		h := synth.Generate(rand.New(rand.NewPCG(seed, 1)), opts)
		hs := map[string]history.History{fmt.Sprintf("synth-%d", seed): h, fmt.Sprintf("synth-%d-header", seed): withHeader(h)}
		for _, k := range synth.Kinds {
			if bad, err := synth.Inject(rand.New(rand.NewPCG(seed, 2)), h, k); err == nil {
				hs[fmt.Sprintf("synth-%d-%s", seed, k)] = bad
			}
		}
		for name, h := range hs {
			t.Run(name, func(t *testing.T) {
				for _, lo := range livenessOptionSets {
					if d := CompareLiveStream(h, lo); d != "" {
						t.Fatal(d)
					}
				}
			})
		}
	}
}

// withHeader returns h as a version 3 history: a header op in front, so
// that the unavailable rule judges it with every node up throughout.
func withHeader(h history.History) history.History {
	out := append(history.History{history.Header()}, h...)
	for i := range out {
		out[i].Index = i
	}
	return out
}
