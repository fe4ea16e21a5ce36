package checker

import (
	"fmt"
	"slices"
	"sort"
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
// the ops of unknown outcome, k may rightly have been held (holdEnd,
// unknownAcquireEnd), and those of clock faults in force plus the longest
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
func Liveness(h history.History, opts LivenessOptions) LivenessResult {
	return liveness(h, Analyze(h), opts)
}

// attempt is one completed acquire: the indexes of its invoke and
// completion.
type attempt struct{ invoke, done int }

// span is a half-open stretch of harness time [from, to).
type span struct{ from, to time.Duration }

// keyLiveness is what Liveness gathers about one key.
type keyLiveness struct {
	longest   time.Duration // the longest finite lease
	never     bool          // some grant's lease is -1: the lock never expires
	sessions  bool          // every grant with lease -1 is a session lock
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
}

// JepsenStop is the f with which a Jepsen history (docs/history.md §5) ends
// its faults: like heal-all, it heals every fault in force.
const JepsenStop = "stop"

// faultsOf follows the faults and heals of h that took effect, in order: a
// fault (a nemesis op that is not a record, not a heal, not an invoke and
// did not fail) is in force from its time until a heal of it (the heal its
// op names, history.Op.Heals), heal-all or JepsenStop that did not fail, or
// to the end of the history. A fault of class clock (history.Op.FaultOf)
// skews a clock.
func faultsOf(h history.History, nemesis []int, version int, end time.Duration) faultState {
	var fs faultState
	var skewSince time.Duration
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
		before := skewing()
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
	}
	if skewing() {
		fs.skews = append(fs.skews, span{skewSince, end})
	}
	return fs
}

// liveness is Liveness over facts already analyzed from h.
func liveness(h history.History, f *Facts, opts LivenessOptions) LivenessResult {
	if opts.Window <= 0 {
		opts.Window = DefaultStuckWindow
	}
	if opts.Attempts <= 0 {
		opts.Attempts = DefaultStuckAttempts
	}
	if opts.UnavailableWindow <= 0 {
		opts.UnavailableWindow = DefaultUnavailableWindow
	}
	res := LivenessResult{Grants: len(f.Grants), Anomalies: []Anomaly{}}
	if len(h) == 0 {
		res.Verdict, res.Note = Unknown, "the history is empty"
		return res
	}
	end := h[len(h)-1].Time
	// One pass: the nemesis ops, the crashes and client closes, and the
	// acquires of each key with their completions.
	crashed := map[int]time.Duration{} // process → time of its info
	closed := map[int]time.Duration{}  // process → when its client was closed
	keptBy := map[int][]int{}          // worker → crashed processes whose client it kept
	attempts := map[string][]attempt{}
	open := map[int]int{} // process → index of its outstanding acquire invoke
	var nemesis []int     // the indexes of the nemesis ops
	for i := range h {
		op := &h[i]
		switch {
		case op.IsNemesis():
			nemesis = append(nemesis, i)
		default:
			if op.Type == history.Info {
				if _, dead := crashed[op.Process]; !dead {
					crashed[op.Process] = op.Time
					if op.Kept {
						keptBy[op.Client] = append(keptBy[op.Client], op.Process)
					} else {
						for _, p := range append(keptBy[op.Client], op.Process) {
							closed[p] = op.Time
						}
						delete(keptBy, op.Client)
					}
				}
			}
			if op.F != history.FAcquire {
				continue
			}
			if op.Type == history.Invoke {
				open[op.Process] = i
			} else if inv, ok := open[op.Process]; ok {
				delete(open, op.Process)
				attempts[op.Key] = append(attempts[op.Key], attempt{inv, i})
			}
		}
	}
	holds := grantHolds(h, f)
	faults := faultsOf(h, nemesis, f.Version, end)

	keys := map[string]*keyLiveness{}
	state := func(k string) *keyLiveness {
		if s, ok := keys[k]; ok {
			return s
		}
		s := &keyLiveness{lastGrant: -1, sessions: true}
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
		c, dead := crashed[g.Process]
		ends[i] = holdEnd(h, g, holds[i], c, dead)
	}
	// Every key asked for is judged, also one whose acquires are pending.
	for _, inv := range open {
		s := state(h[inv].Key)
		s.waiting = append(s.waiting, inv)
	}
	for k, as := range attempts {
		s := state(k)
		for _, a := range as {
			if h[a.done].Type != history.Info {
				continue
			}
			to := unknownAcquireEnd(h, a, s, closed)
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
			if sp.to == Forever && s.held == "" {
				g := f.Grants[s.grants[j]]
				s.held = fmt.Sprintf("worker %d, granted it at %s, may rightly hold it still", g.Client, secs(g.Return))
			}
		}
		s.excused = append(s.excused, ex...)
		for _, sp := range faults.skews {
			s.excused = append(s.excused, span{sp.from, sp.to + s.longest})
		}
	}

	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	periods, upAtEnd, availNote := majorityPeriods(h, nemesis, f.Version, end)
	judged := 0
	var notes []string
	if availNote != "" {
		notes = append(notes, availNote)
	}
	for _, k := range names {
		s := keys[k]
		if stuck, ok, note := stuckAnomaly(h, f, s, k, attempts[k], crashed, faults, upAtEnd, end, opts); ok {
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
		as, ok := unavailableAnomalies(h, f, s, k, attempts[k], crashed, periods, opts)
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

// holdEnd is the moment until which grant g may rightly have been held
// (docs/history.md §4.5), before any later grant took the lock: its lease's
// end E is its call plus its lease when its ok records `lease`, else its
// return plus its ttl (a ttl that stands for the lease counts from the
// grant, at the latest its return); after a renewal ok, the latest one's
// call plus its lease; and a renewal of unknown outcome may have moved it
// to its own call plus lease. The hold ends at its release ok's return;
// else, when its process crashed at C, at C plus the lease for a session
// lock with a lease (C for one that never expires), at E for a lock that
// is no session (C when it never expires); else, while its process lives,
// at E for a finite lease that is no session's, never otherwise. A
// lease-lost, or a release refused "not held", ends it at its return at
// the latest.
func holdEnd(h history.History, g Grant, hf holdFacts, c time.Duration, dead bool) time.Duration {
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
		end = c + lease
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
// else its completion plus the larger of its ttl and the longest lease of k.
func unknownAcquireEnd(h history.History, a attempt, s *keyLiveness, closed map[int]time.Duration) time.Duration {
	inv := &h[a.invoke]
	if inv.TTL <= 0 || s.never {
		if inv.TTL <= 0 || s.sessions {
			if c, ok := closed[inv.Process]; ok {
				return c
			}
		}
		return Forever
	}
	return h[a.done].Time + max(inv.TTL, s.longest)
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

// grantHolds returns, for each grant, what the history says about the end
// of its hold: the return of its process's release ok of its key, of its
// lease-lost or of its release refused "not held" (NotHeldError), and the
// renewals of unknown outcome (info, or pending at the end), each before
// the process's next grant of the key.
func grantHolds(h history.History, f *Facts) []holdFacts {
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
	unknown := func(g, inv int) {
		lease := h[inv].TTL
		if lease <= 0 {
			lease = f.Grants[g].Lease
		}
		hf := &out[g]
		to := Forever
		if lease >= 0 {
			to = h[inv].Time + lease
		}
		if !hf.renewed || lease < 0 || hf.unknownLease >= 0 && lease > hf.unknownLease {
			hf.unknownLease = lease
		}
		hf.renewed = true
		hf.extended = max(hf.extended, to)
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
					unknown(g, inv)
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
			unknown(g, inv)
		}
	}
	return out
}
