package checker

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// The liveness anomalies, reported apart from the verdict (see Liveness).
const (
	// Stuck is the anomaly of a lock that nobody can take any more,
	// although nothing stands in the way (the Redis seed's property A,
	// deadlock-freedom).
	Stuck = "stuck"
	// Unavailable is the anomaly of a lock that nobody could take for a
	// while, although a majority of the server nodes was up and nothing
	// stood in the way (the Redis seed's property B, fault tolerance).
	Unavailable = "unavailable"
)

// LivenessKinds returns the liveness anomaly kinds.
func LivenessKinds() []string { return []string{Stuck, Unavailable} }

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
// key could be judged (the last fault and the longest lease left too little
// of the run for stuck, and no stretch with a majority up was long enough
// for unavailable), Valid otherwise. Grants counts the successful acquires
// of the whole run, so that a safe verdict on a run that granted (almost)
// nothing says so.
type LivenessResult struct {
	Verdict   Verdict   `json:"verdict"`
	Grants    int       `json:"grants"`
	Anomalies []Anomaly `json:"anomalies"`
	Note      string    `json:"note,omitempty"`
}

// Summary says in a few words what l found: its anomaly kinds ("stuck,
// unavailable"), "not stuck or unavailable" or "not judged".
func (l *LivenessResult) Summary() string {
	switch l.Verdict {
	case Valid:
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

// Liveness judges whether a well-formed history's locks stayed takeable
// (docs/history.md §4.5 and §4.6).
//
// A key k is stuck when, from a moment S to the end of the history, a window
// of at least opts.Window, workers asked for k in vain at least
// opts.Attempts times and nothing excused the refusals: the acquires of k
// invoked at or after S and completed, none of which succeeded, and those
// still pending at the end that had waited at least opts.Window by then
// (a pending acquire excuses nothing, and a crash that kept its client is a
// crash). S is the latest of:
//   - the last nemesis op (the last fault or heal; records such as the
//     availability record are none) plus the longest finite lease of any
//     grant of k;
//   - for every grant of k, the moment until which the service may rightly
//     have kept it: its release's return (ok); else, after its process
//     crashed at C, C plus its lease for a session lock with a lease (the
//     session outlives the crash until it expires), C for a lock without a
//     lease (nobody rightly holds it after that, and nothing ever frees it),
//     and its call (or its latest renewal's) plus its lease otherwise; else,
//     while its process lives, its call (or latest renewal's) plus its lease
//     when the lease is finite and not a session's;
//   - for every acquire of k of unknown outcome, its completion plus the
//     larger of its ttl and the longest lease of k;
//   - the end of every belief in k.
//
// Only grants that no later grant of k superseded count (a grant is
// superseded when another grant of k was invoked after it returned). A
// grant that its live holder may rightly keep for ever by those rules (a
// live process's session, a lock without a lease that it has not released)
// means k is held, not stuck. k is not judged when the last fault and its
// longest lease leave less than opts.Window of the run.
//
// A key k was unavailable from S to E when [S, E] lies inside a period in
// which a majority of the server nodes was up (by the nemesis's availability
// records; in a history before format version 3, up to its first nemesis
// op), no earlier than the period's start plus the longest finite lease of k
// when the period began with the majority coming back up; E − S is at least
// opts.UnavailableWindow; at least opts.Attempts acquires of k were invoked
// at or after S and refused at or before E; and no excuse covers any of it.
// The excuses are stuck's, held against every stretch between grants: each
// grant excuses from its call to the latest of its return, the moment until
// which the service may rightly keep it (for ever when its live holder may)
// and the end of its belief, but no later than the call of the first grant
// of k invoked after it returned; each acquire of unknown outcome excuses
// from its invoke to its completion plus the larger of its ttl and the
// longest lease of k; and a clock fault in force excuses until its heal plus
// the longest lease of k (clockSkews). Each maximal stretch that no excuse
// covers is judged on its own and reported once, as a whole.
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
	start     time.Duration // stuck's S
	longest   time.Duration // the longest finite lease
	held      string        // who may rightly hold the key still
	lastGrant int           // index in f.Grants, -1 when none
	grants    []int         // indexes in f.Grants, in the order of their oks
	excused   []span        // stretches in which refusals are excused
	waiting   []int         // invokes of the acquires still pending at the end, in order
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
	// One pass: the last fault, the crashes, and the acquires of each key
	// with their completions.
	var lastFault time.Duration
	faults := false
	crashed := map[int]time.Duration{} // process → time of its info
	attempts := map[string][]attempt{}
	open := map[int]int{} // process → index of its outstanding acquire invoke
	var nemesis []int     // the indexes of the nemesis ops
	for i := range h {
		op := &h[i]
		switch {
		case op.IsNemesis():
			nemesis = append(nemesis, i)
			if !op.IsRecord() {
				lastFault, faults = op.Time, true
			}
		default:
			if op.Type == history.Info {
				crashed[op.Process] = op.Time
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
	released := releasedAt(h, f)

	keys := map[string]*keyLiveness{}
	state := func(k string) *keyLiveness {
		if s, ok := keys[k]; ok {
			return s
		}
		s := &keyLiveness{lastGrant: -1}
		keys[k] = s
		return s
	}
	// A grant is superseded when another grant of its key was invoked
	// after it returned: the lock was taken again after it, so it does not
	// stand in the way at the end.
	latestCall := map[string]time.Duration{}
	for _, g := range f.Grants {
		latestCall[g.Key] = max(latestCall[g.Key], g.Call)
	}
	kept := make([]time.Duration, len(f.Grants)) // until when the service may rightly keep each grant
	for i, g := range f.Grants {
		s := state(g.Key)
		s.lastGrant = i
		s.grants = append(s.grants, i)
		lease, from := g.Lease, g.Call
		if n := len(g.Renewals); n > 0 {
			lease, from = g.Renewals[n-1].Lease, g.Renewals[n-1].Call
		}
		if lease >= 0 {
			s.longest = max(s.longest, lease)
		}
		kept[i] = Forever
		c, dead := crashed[g.Process]
		switch {
		case released[i] >= 0:
			kept[i] = released[i]
		case dead && lease < 0:
			kept[i] = c
		case dead && g.Session:
			kept[i] = c + lease
		case lease >= 0 && !g.Session:
			kept[i] = from + lease
		}
		if latestCall[g.Key] > g.Return {
			continue
		}
		if kept[i] == Forever {
			s.held = fmt.Sprintf("worker %d, granted it at %s, may rightly hold it still", g.Client, secs(g.Return))
			continue
		}
		s.start = max(s.start, kept[i])
		if b := f.Beliefs[i]; b.End != Forever {
			s.start = max(s.start, b.End)
		}
	}
	// Every key asked for is judged, also one whose acquires are pending.
	for _, inv := range open {
		s := state(h[inv].Key)
		s.waiting = append(s.waiting, inv)
	}
	for k, as := range attempts {
		s := state(k)
		for _, a := range as {
			if h[a.done].Type == history.Info {
				until := h[a.done].Time + max(h[a.invoke].TTL, s.longest)
				s.start = max(s.start, until)
				s.excused = append(s.excused, span{h[a.invoke].Time, until})
			}
		}
	}
	skewed := clockSkews(h, nemesis, end)
	for _, s := range keys {
		sort.Ints(s.waiting)
		s.excused = append(s.excused, grantExcuses(f, s.grants, kept)...)
		for _, sp := range skewed {
			s.excused = append(s.excused, span{sp.from, sp.to + s.longest})
		}
	}

	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	periods, availNote := majorityPeriods(h, nemesis, f.Version, end)
	judged := 0
	var notes []string
	if availNote != "" {
		notes = append(notes, availNote)
	}
	for _, k := range names {
		s := keys[k]
		if stuck, ok, note := stuckAnomaly(h, f, s, k, attempts[k], crashed, faults, lastFault, end, opts); ok {
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
	if res.Grants == 0 {
		res.Note = strings.TrimPrefix(res.Note+"; no acquire succeeded in the whole run", "; ")
	}
	return res
}

// stuckAnomaly judges whether key k is stuck at the end of the history. It
// returns the anomaly when it is, whether k could be judged, and a note for
// the result (why k was not judged, or who holds it).
func stuckAnomaly(h history.History, f *Facts, s *keyLiveness, k string, as []attempt, crashed map[int]time.Duration,
	faults bool, lastFault, end time.Duration, opts LivenessOptions) (*Anomaly, bool, string) {
	var settled time.Duration // the faults' effects are over
	if faults {
		settled = lastFault + s.longest
	}
	if end-settled < opts.Window {
		if !faults {
			return nil, false, fmt.Sprintf("%s not judged for stuck: the run is shorter than %s", k, opts.Window)
		}
		return nil, false, fmt.Sprintf("%s not judged for stuck: the last fault at %s and its longest lease leave less than %s of the run", k, secs(lastFault), opts.Window)
	}
	if s.held != "" {
		return nil, true, fmt.Sprintf("%s held at the end: %s", k, s.held)
	}
	start := max(s.start, settled)
	if end-start < opts.Window {
		return nil, true, ""
	}
	var failed []attempt
	workers := map[int]bool{}
	for _, a := range as {
		if h[a.invoke].Time < start {
			continue
		}
		if h[a.done].Type == history.OK {
			return nil, true, ""
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
	if faults {
		after = fmt.Sprintf("the last fault (at %s) and every lease were over", secs(lastFault))
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

// clockSkews returns the stretches in which a clock fault was in force
// (history.SkewsClocks), from the first one's start to the heal that left
// none in force, or to end. A lease measured on a skewed clock may last
// longer than the history can say, so no refusal in them, or within the
// longest lease after them, counts as unavailable.
func clockSkews(h history.History, nemesis []int, end time.Duration) []span {
	var out []span
	active := 0
	var since time.Duration
	for _, i := range nemesis {
		op := &h[i]
		switch {
		case history.SkewsClocks(op.F):
			if active == 0 {
				since = op.Time
			}
			active++
		case active > 0 && (op.F == history.FHealAll || op.F == history.HealOf("clock-bump") || op.F == history.HealOf("client-clock")):
			active--
			if op.F == history.FHealAll {
				active = 0
			}
			if active == 0 {
				out = append(out, span{since, op.Time})
			}
		}
	}
	if active > 0 {
		out = append(out, span{since, end})
	}
	return out
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
// return, kept (the moment until which the service may rightly keep it,
// Forever for ever) and the end of its belief, but no later than the call
// of the first grant of the key invoked after it returned (that grant
// supersedes it, and excuses from its own call on).
func grantExcuses(f *Facts, grants []int, kept []time.Duration) []span {
	byInvoke := slices.Clone(grants)
	slices.SortFunc(byInvoke, func(a, b int) int { return f.Grants[a].Invoke - f.Grants[b].Invoke })
	out := make([]span, 0, len(grants))
	for _, i := range grants {
		g := &f.Grants[i]
		to := max(g.Return, kept[i])
		if b := f.Beliefs[i]; b.End != Forever {
			to = max(to, b.End)
		}
		next := sort.Search(len(byInvoke), func(j int) bool { return f.Grants[byInvoke[j]].Invoke > g.OK })
		if next < len(byInvoke) {
			to = min(to, f.Grants[byInvoke[next]].Call)
		}
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
// node is up until its first nemesis op (other than the header), and from
// there on nothing is known. A record whose value cannot be read makes the
// majority unknown until the next one.
func majorityPeriods(h history.History, nemesis []int, version int, end time.Duration) ([]upPeriod, string) {
	var out []upPeriod
	cur := &upPeriod{}
	for _, i := range nemesis {
		op := &h[i]
		if op.IsHeader() {
			continue
		}
		if version < 3 {
			cur.to = op.Time
			out = append(out, *cur)
			return out, fmt.Sprintf("the history (format version %d) does not record which nodes were up: unavailable judged only before its first fault at %s", version, secs(op.Time))
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
	return out, ""
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
// [from, to] of period p, when enough acquires invoked and completed in it
// were refused.
func unavailableIn(h history.History, f *Facts, s *keyLiveness, k string, as []attempt, crashed map[int]time.Duration,
	p upPeriod, from, to time.Duration, opts LivenessOptions) (Anomaly, bool) {
	first, last, n := -1, -1, 0
	workers := map[int]bool{}
	for i := sort.Search(len(as), func(i int) bool { return h[as[i].done].Time >= from }); i < len(as) && h[as[i].done].Time <= to; i++ {
		a := as[i]
		if h[a.invoke].Time < from || h[a.done].Type != history.Fail {
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

// releasedAt returns, for each grant, the return time of its process's
// release ok of its key before the process's next grant of the key, or -1.
func releasedAt(h history.History, f *Facts) []time.Duration {
	out := make([]time.Duration, len(f.Grants))
	type pk struct {
		process int
		key     string
	}
	current := map[pk]int{} // the grant in force per process and key
	next := 0               // grants are in order of their ok
	pending := map[int]bool{}
	for i := range out {
		out[i] = -1
	}
	for i := range h {
		op := &h[i]
		for next < len(f.Grants) && f.Grants[next].OK == i {
			current[pk{f.Grants[next].Process, f.Grants[next].Key}] = next
			next++
		}
		if op.IsNemesis() || op.F != history.FRelease {
			continue
		}
		g, ok := current[pk{op.Process, op.Key}]
		if !ok {
			continue
		}
		switch op.Type {
		case history.Invoke:
			pending[g] = true
		case history.OK:
			if pending[g] && out[g] < 0 {
				out[g] = op.Time
			}
			delete(pending, g)
		default:
			delete(pending, g)
		}
	}
	return out
}
