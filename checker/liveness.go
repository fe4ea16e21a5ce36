package checker

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// Stuck is the liveness anomaly of a lock that nobody can take any more
// although nothing stands in the way (the Redis seed's property A,
// deadlock-freedom): see Liveness.
const Stuck = "stuck"

// DefaultStuckWindow and DefaultStuckAttempts are how long, and how often at
// the least, workers must have asked for a lock in vain before Liveness calls
// it stuck.
const (
	DefaultStuckWindow   = time.Second
	DefaultStuckAttempts = 3
)

// LivenessOptions tunes Liveness; the zero value takes the defaults.
type LivenessOptions struct {
	Window   time.Duration // DefaultStuckWindow when 0
	Attempts int           // DefaultStuckAttempts when 0
}

// LivenessResult is a run's liveness verdict, kept apart from its safety
// verdict: Invalid when some key is stuck, Unknown when no key could be
// judged (the last fault and the longest lease left too little of the run),
// Valid otherwise. Grants counts the successful acquires of the whole run,
// so that a safe verdict on a run that granted (almost) nothing says so.
type LivenessResult struct {
	Verdict   Verdict   `json:"verdict"`
	Grants    int       `json:"grants"`
	Anomalies []Anomaly `json:"anomalies"`
	Note      string    `json:"note,omitempty"`
}

// Liveness judges whether a well-formed history's locks stayed takeable
// (docs/history.md §4.4). A key k is stuck when, from a moment S to the end
// of the history, a window of at least opts.Window, at least opts.Attempts
// acquires of k were invoked and completed, none succeeded, and nothing
// excused the refusals. S is the latest of:
//   - the last nemesis op (the last fault or heal) plus the longest finite
//     lease of any grant of k;
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
func Liveness(h history.History, opts LivenessOptions) LivenessResult {
	return liveness(h, Analyze(h), opts)
}

// liveness is Liveness over facts already analyzed from h.
func liveness(h history.History, f *Facts, opts LivenessOptions) LivenessResult {
	if opts.Window <= 0 {
		opts.Window = DefaultStuckWindow
	}
	if opts.Attempts <= 0 {
		opts.Attempts = DefaultStuckAttempts
	}
	res := LivenessResult{Grants: len(f.Grants), Anomalies: []Anomaly{}}
	if len(h) == 0 {
		res.Verdict, res.Note = Unknown, "the history is empty"
		return res
	}
	end := h[len(h)-1].Time
	// One pass: the last nemesis op, the crashes, and the acquires of each
	// key with their completions.
	var lastFault time.Duration
	faults := false
	crashed := map[int]time.Duration{} // process → time of its info
	type attempt struct{ invoke, done int }
	attempts := map[string][]attempt{}
	open := map[int]int{} // process → index of its outstanding acquire invoke
	for i, op := range h {
		switch {
		case op.IsHeader():
		case op.IsNemesis():
			lastFault, faults = op.Time, true
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

	type keyState struct {
		start     time.Duration // S
		longest   time.Duration // longest finite lease
		held      string        // who may rightly hold the key still
		lastGrant int           // index in f.Grants, -1 when none
	}
	keys := map[string]*keyState{}
	state := func(k string) *keyState {
		if s, ok := keys[k]; ok {
			return s
		}
		s := &keyState{lastGrant: -1}
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
	for i, g := range f.Grants {
		s := state(g.Key)
		s.lastGrant = i
		lease, from := g.Lease, g.Call
		if n := len(g.Renewals); n > 0 {
			lease, from = g.Renewals[n-1].Lease, g.Renewals[n-1].Call
		}
		if lease >= 0 {
			s.longest = max(s.longest, lease)
		}
		if latestCall[g.Key] > g.Return {
			continue
		}
		kept := Forever
		c, dead := crashed[g.Process]
		switch {
		case released[i] >= 0:
			kept = released[i]
		case dead && lease < 0:
			kept = c
		case dead && g.Session:
			kept = c + lease
		case lease >= 0 && !g.Session:
			kept = from + lease
		}
		if kept == Forever {
			s.held = fmt.Sprintf("worker %d, granted it at %s, may rightly hold it still", g.Client, secs(g.Return))
			continue
		}
		s.start = max(s.start, kept)
		if b := f.Beliefs[i]; b.End != Forever {
			s.start = max(s.start, b.End)
		}
	}
	// Every key asked for is judged, also one whose acquires are pending.
	for _, inv := range open {
		state(h[inv].Key)
	}
	for k, as := range attempts {
		s := state(k)
		for _, a := range as {
			if h[a.done].Type == history.Info {
				s.start = max(s.start, h[a.done].Time+max(h[a.invoke].TTL, s.longest))
			}
		}
	}

	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	judged := 0
	var notes []string
	for _, k := range names {
		s := keys[k]
		var settled time.Duration // the faults' effects are over
		if faults {
			settled = lastFault + s.longest
		}
		if end-settled < opts.Window {
			notes = append(notes, fmt.Sprintf("%s not judged: the last fault at %s and its longest lease leave less than %s of the run", k, secs(lastFault), opts.Window))
			continue
		}
		judged++
		if s.held != "" {
			notes = append(notes, fmt.Sprintf("%s held at the end: %s", k, s.held))
			continue
		}
		s.start = max(s.start, settled)
		if end-s.start < opts.Window {
			continue
		}
		var failed []attempt
		workers := map[int]bool{}
		succeeded := false
		for _, a := range attempts[k] {
			if h[a.invoke].Time < s.start {
				continue
			}
			if h[a.done].Type == history.OK {
				succeeded = true
				break
			}
			failed = append(failed, a)
			workers[h[a.invoke].Client] = true
		}
		if succeeded || len(failed) < opts.Attempts {
			continue
		}
		ops := []int{failed[0].invoke, failed[0].done, failed[len(failed)-1].invoke, failed[len(failed)-1].done}
		last := "no grant of it was ever recorded"
		if s.lastGrant >= 0 {
			g := f.Grants[s.lastGrant]
			ops = append([]int{g.Invoke, g.OK}, ops...)
			last = fmt.Sprintf("the last grant was worker %d's at %s", g.Client, secs(g.Return))
			if c, dead := crashed[g.Process]; dead {
				last += fmt.Sprintf(", whose process crashed at %s", secs(c))
			}
		}
		res.Anomalies = append(res.Anomalies, Anomaly{
			Kind: Stuck,
			Key:  k,
			Ops:  ops,
			Message: fmt.Sprintf("%s stuck from %s to the end at %s: %d acquires by %d workers failed and none succeeded, with no fault active, no lease left and nobody believing it held %s; %s",
				k, secs(s.start), secs(end), len(failed), len(workers), k, last),
		})
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
	for i, op := range h {
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
