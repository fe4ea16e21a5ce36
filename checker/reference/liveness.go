package reference

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// LivenessOptions are the bounds of the liveness rules (docs/history.md §4.5
// and §4.6): the shortest stuck tail, the shortest unavailable window and
// the fewest refused acquires of either. Zero values take checker's
// defaults.
type LivenessOptions struct {
	Window, UnavailableWindow time.Duration
	Attempts                  int
	// RetransmitFirst and RetransmitMax are TCP's first retransmission
	// timeout and longest interval between retransmissions (§4.5, "Acquires
	// held back by a cut"): checker's defaults when 0.
	RetransmitFirst, RetransmitMax time.Duration
}

// Finding is one liveness anomaly: its kind, its key and its window.
type Finding struct {
	Kind, Key  string
	Start, End int64
}

// LivenessResult is the reference's liveness conclusion: Invalid when some
// key is stuck or was unavailable, Unknown when no key could be judged by
// either rule, Valid otherwise; Findings sorted by key, kind and start.
type LivenessResult struct {
	Verdict  checker.Verdict
	Findings []Finding
}

// Liveness judges h's liveness by docs/history.md §4.5 and §4.6, by brute
// force: each excuse is computed from its rule by scanning the whole
// history, and coverage is decided moment by moment at every moment where
// it can change (the ends of the excuses, the times of the ops and the
// bounds of the majority periods). It refuses a history that is not
// well-formed.
func Liveness(h history.History, opts LivenessOptions) (LivenessResult, error) {
	if err := history.Validate(h); err != nil {
		return LivenessResult{}, err
	}
	if opts.Window <= 0 {
		opts.Window = checker.DefaultStuckWindow
	}
	if opts.UnavailableWindow <= 0 {
		opts.UnavailableWindow = checker.DefaultUnavailableWindow
	}
	if opts.Attempts <= 0 {
		opts.Attempts = checker.DefaultStuckAttempts
	}
	res := LivenessResult{Verdict: checker.Unknown}
	if len(h) == 0 {
		return res, nil
	}
	x := parse(h)
	end := int64(h[len(h)-1].Time)
	version := history.Version(h)
	var keys []string
	for _, c := range x.calls {
		if c.f == history.FAcquire && !slices.Contains(keys, c.key) {
			keys = append(keys, c.key)
		}
	}
	slices.Sort(keys)
	faults := nemesisFaults(h, version)
	faults.downs = downStretches(h, version, end)
	periods := majorities(h, version, end)
	judged := false
	for _, k := range keys {
		excuses, longest := x.excusesOf(k, faults, end, opts)
		// §4.5: stuck.
		if ok, f := x.stuck(k, excuses, longest, faults, end, opts); ok {
			judged = true
			if f != nil {
				res.Findings = append(res.Findings, *f)
			}
		}
		// §4.6: unavailable.
		for _, p := range periods {
			lo := p.from
			if p.back {
				lo += longest
			}
			if p.to-lo < int64(opts.UnavailableWindow) {
				continue
			}
			judged = true
			res.Findings = append(res.Findings, x.unavailable(k, excuses, lo, p.to, opts)...)
		}
	}
	if lost, ok := x.lostTasks(end); ok {
		judged = true
		res.Findings = append(res.Findings, lost...)
	}
	switch {
	case len(res.Findings) > 0:
		res.Verdict = checker.Invalid
	case judged:
		res.Verdict = checker.Valid
	}
	slices.SortFunc(res.Findings, func(a, b Finding) int {
		return strings.Compare(fmt.Sprintf("%s %s %020d", a.Key, a.Kind, a.Start), fmt.Sprintf("%s %s %020d", b.Key, b.Kind, b.Start))
	})
	return res, nil
}

// stretch is a half-open stretch of time [from, to).
type stretch struct{ from, to int64 }

// fault is a nemesis fault that took effect, in force over [from, to) (to
// is never when nothing healed it).
type fault struct {
	f        string
	skews    bool // a clock fault (its class)
	cut      bool // a cut (history.Op.HoldsRequests)
	moment   bool // a fault without a heal: in force at its time only
	from, to int64
}

// faultsSeen is what the nemesis ops say about faults.
type faultsSeen struct {
	faults []fault
	any    bool      // some fault or heal took effect
	last   int64     // the time of the last of them
	downs  []stretch // the down stretches (§4.5, "Sessions kept by a leader")
}

// downStretches lists the down stretches of §4.5 literally: from each
// availability record (version 3 on) whose down is not empty, or that
// cannot be read, to the next record whose down is empty, or to the end
// of the history.
func downStretches(h history.History, version int, end int64) []stretch {
	if version < 3 {
		return nil
	}
	var out []stretch
	from := int64(-1) // the start of the stretch in force, -1 when none
	for _, op := range h {
		if !op.IsAvailability() {
			continue
		}
		a, ok := history.AvailabilityOf(op)
		down := !ok || len(a.Down) > 0
		switch {
		case down && from < 0:
			from = int64(op.Time)
		case !down && from >= 0:
			out = append(out, stretch{from, int64(op.Time)})
			from = -1
		}
	}
	if from >= 0 {
		out = append(out, stretch{from, end})
	}
	return out
}

// sessionEnd is the end of a session lease that would end at e, with
// lease x, moved on by the down stretches (§4.5, "Sessions kept by a
// leader"), literally: the least end at or after e such that every down
// stretch that began before it ended at b with b + x at or before it,
// found by raising it until no stretch asks for more.
func sessionEnd(e, x int64, downs []stretch) int64 {
	for raised := true; raised && e != never; {
		raised = false
		for _, d := range downs {
			if d.from < e && d.to+x > e {
				e, raised = d.to+x, true
			}
		}
	}
	return e
}

// upParts returns the parts of [from, to) outside every down stretch
// (§4.5: a grant excuses no moment of a down stretch before its return).
func upParts(from, to int64, downs []stretch) []stretch {
	var out []stretch
	for t := from; t < to; {
		next, skip := to, int64(-1)
		for _, d := range downs {
			switch {
			case d.from <= t && t < d.to:
				skip = max(skip, d.to)
			case d.from > t && d.from < next:
				next = d.from
			}
		}
		if skip >= 0 {
			t = skip
			continue
		}
		out = append(out, stretch{t, next})
		t = next
	}
	return out
}

// tookEffect reports whether the nemesis op i is a fault or heal that took
// effect (§3): not a record, not an invoke, not failed.
func tookEffect(h history.History, i int, version int) bool {
	op := h[i]
	return op.IsNemesis() && !op.IsRecord() && op.Type != history.Invoke && !op.NemesisFailed(version)
}

// latestArrival is the latest arrival of the request of unknown outcome c,
// an acquire or a renewal (§4.5, "Requests held back by a cut"), literally:
// the least A at or after its completion (the end of the history when it
// is pending) such that for every stretch in which a cut was in force
// that began at or before A and ended at H at or after its invoke, H +
// min(H − invoke + RetransmitFirst, RetransmitMax) ≤ A, found by raising A
// until no stretch asks for more. A cut never healed ends at the end of
// the history.
func latestArrival(c *opCall, fs faultsSeen, end int64, opts LivenessOptions) int64 {
	first, most := int64(checker.DefaultRetransmitFirst), int64(checker.DefaultRetransmitMax)
	if opts.RetransmitFirst > 0 {
		first = int64(opts.RetransmitFirst)
	}
	if opts.RetransmitMax > 0 {
		most = int64(opts.RetransmitMax)
	}
	// The stretches: a cut's start to the moment no cut is in force.
	var cuts []stretch
	for _, f := range fs.faults {
		if !f.cut {
			continue
		}
		to := f.to
		if to == never {
			to = end
		}
		cuts = append(cuts, stretch{f.from, to})
	}
	slices.SortFunc(cuts, func(a, b stretch) int { return cmp.Compare(a.from, b.from) })
	var merged []stretch
	for _, s := range cuts {
		if n := len(merged); n > 0 && s.from <= merged[n-1].to {
			merged[n-1].to = max(merged[n-1].to, s.to)
			continue
		}
		merged = append(merged, s)
	}
	a := c.ret
	if a == never {
		a = end // pending at the end
	}
	for raised := true; raised; {
		raised = false
		for _, s := range merged {
			if s.from <= a && s.to >= c.call {
				if v := s.to + min(s.to-c.call+first, most); v > a {
					a, raised = v, true
				}
			}
		}
	}
	return a
}

// nemesisFaults finds every fault that took effect and the first later heal
// that took effect and heals it (the heal its op names, heal-all, or a
// Jepsen history's stop).
func nemesisFaults(h history.History, version int) faultsSeen {
	var fs faultsSeen
	for i, op := range h {
		if !tookEffect(h, i, version) {
			continue
		}
		fs.any, fs.last = true, int64(op.Time)
		if op.IsHealOp(version) || op.F == checker.JepsenStop {
			continue
		}
		heal, class := op.FaultOf(version)
		ft := fault{f: op.F, skews: class.SkewsClocks(), cut: op.HoldsRequests(version), from: int64(op.Time), to: never}
		if heal == "" {
			ft.to, ft.moment = ft.from, true
		}
		for j := i + 1; j < len(h) && heal != ""; j++ {
			if tookEffect(h, j, version) && (h[j].F == checker.JepsenStop || h[j].IsHealOp(version) && h[j].Heals(op, version)) {
				ft.to = int64(h[j].Time)
				break
			}
		}
		fs.faults = append(fs.faults, ft)
	}
	return fs
}

// period is a majority period [from, to]; back when it began with the
// majority coming back up.
type period struct {
	from, to int64
	back     bool
}

// majorities lists the majority periods of §4.6: for a history before
// version 3, from the start to its first nemesis op other than the header
// that did not fail; else the stretches in which the latest availability
// record (none: every node up) shows a majority up.
func majorities(h history.History, version int, end int64) []period {
	if version < 3 {
		for _, op := range h {
			if op.IsNemesis() && !op.IsHeader() && !op.NemesisFailed(version) {
				return []period{{0, int64(op.Time), false}}
			}
		}
		return []period{{0, end, false}}
	}
	var out []period
	up, from, back := true, int64(0), false
	for _, op := range h {
		if !op.IsAvailability() {
			continue
		}
		a, ok := history.AvailabilityOf(op)
		now := ok && a.Majority()
		switch {
		case up && !now:
			out = append(out, period{from, int64(op.Time), back})
		case !up && now:
			from, back = int64(op.Time), true
		}
		up = now
	}
	if up {
		out = append(out, period{from, end, back})
	}
	return out
}

// lastMajority reports whether the last availability record (none: every
// node up) shows a majority up.
func lastMajority(h history.History) bool {
	up := true
	for _, op := range h {
		if op.IsAvailability() {
			a, ok := history.AvailabilityOf(op)
			up = ok && a.Majority()
		}
	}
	return up
}

// excusesOf lists the excuses of key k (§4.5) and k's longest lease.
func (x *parsed) excusesOf(k string, fs faultsSeen, end int64, opts LivenessOptions) ([]stretch, int64) {
	var grants []*grant
	for _, g := range x.grants {
		if g.key == k {
			grants = append(grants, g)
		}
	}
	// The longest finite lease: each grant's latest renewal's lease
	// standing for its own.
	var longest int64
	never1, sessions, allSessions := false, true, true
	for _, g := range grants {
		allSessions = allSessions && g.session
		l := g.lease
		if r := x.latestRenewal(g); r != nil {
			l = x.renewLease(r)
		}
		if l >= 0 {
			longest = max(longest, l)
		}
		if g.lease < 0 {
			never1 = true
			sessions = sessions && g.session
		}
	}
	var out []stretch
	for _, g := range grants {
		to := max(g.ret, x.holdEnd(g, fs, end, opts))
		if b := x.beliefOf(g); b.end != never {
			to = max(to, b.end)
		}
		for _, g2 := range grants {
			if g2.inv > g.done {
				to = min(to, g2.ret)
			}
		}
		out = append(out, upParts(g.call, g.ret, fs.downs)...)
		out = append(out, stretch{g.ret, max(to, g.ret)})
	}
	for _, c := range x.calls {
		if c.f != history.FAcquire || c.key != k || c.typ != history.Info {
			continue
		}
		ttl := int64(c.invOp.TTL)
		var to int64
		switch {
		case ttl > 0 && !never1 && allSessions:
			lease := max(ttl, longest)
			to = sessionEnd(latestArrival(c, fs, end, opts)+lease, lease, fs.downs)
		case ttl > 0 && !never1:
			to = latestArrival(c, fs, end, opts) + max(ttl, longest)
		case ttl <= 0 || sessions:
			to = x.freedOf(c.proc)
		default:
			to = never
		}
		out = append(out, stretch{c.call, to})
	}
	for _, f := range fs.faults {
		if f.skews && !f.moment {
			to := never
			if f.to != never {
				to = f.to + longest
			}
			out = append(out, stretch{f.from, to})
		}
	}
	return out, longest
}

// latestRenewal is g's latest renew ok (§3), or nil.
func (x *parsed) latestRenewal(g *grant) *opCall {
	var r *opCall
	for _, c := range x.calls {
		if c.f == history.FRenew && c.typ == history.OK && x.grantOf(c) == g {
			r = c
		}
	}
	return r
}

// holdEnd is the hold end of g (§4.5), literally.
func (x *parsed) holdEnd(g *grant, fs faultsSeen, histEnd int64, opts LivenessOptions) int64 {
	lease := g.lease
	var e int64
	if g.doneOp.Lease != 0 {
		e = g.call // a recorded lease counts from the invoke
	} else {
		e = g.ret // a ttl standing for the lease counts from the grant
	}
	if r := x.latestRenewal(g); r != nil {
		lease, e = x.renewLease(r), r.call
	}
	e = scaled(e, lease, 0)
	// Renewals of unknown outcome may have taken effect.
	for _, c := range x.calls {
		if c.f != history.FRenew || !c.unknown || x.grantOf(c) != g {
			continue
		}
		l := x.renewLease(c)
		e = max(e, scaled(latestArrival(c, fs, histEnd, opts), l, 0))
		if lease != -1 && (l == -1 || l > lease) {
			lease = l
		}
	}
	released, lost := never, never
	for _, c := range x.calls {
		if c.key != g.key || c.proc != g.proc || x.grantOf(c) != g {
			continue
		}
		switch {
		case c.f == history.FRelease && c.typ == history.OK:
			released = min(released, c.ret)
		case c.f == history.FRelease && c.typ == history.Fail && strings.Contains(c.doneOp.Error, checker.NotHeldError):
			lost = min(lost, c.ret)
		case c.f == history.FLeaseLost && c.typ == history.OK:
			lost = min(lost, c.ret)
		}
	}
	crash := x.crashOf(g.proc)
	var end int64
	switch {
	case released != never:
		end = released
	case crash != never && g.session:
		end = crash
		if lease != -1 {
			end = sessionEnd(crash+lease, lease, fs.downs)
		}
	case crash != never:
		end = e
		if e == never {
			end = crash
		}
	case g.session:
		end = never
	default:
		end = e
	}
	return min(end, lost)
}

// stuck judges k by §4.5: whether it was judged, and the finding if stuck.
func (x *parsed) stuck(k string, excuses []stretch, longest int64, fs faultsSeen, end int64, opts LivenessOptions) (bool, *Finding) {
	for _, f := range fs.faults {
		if f.to == never {
			return false, nil // a fault in force at the end
		}
	}
	if history.Version(x.h) >= 3 && !lastMajority(x.h) {
		return false, nil
	}
	var settled int64
	if fs.any {
		settled = fs.last + longest
	}
	if end-settled < int64(opts.Window) {
		return false, nil
	}
	s := settled
	for _, e := range excuses {
		if e.to == never {
			return true, nil // held
		}
		s = max(s, e.to)
	}
	if end-s < int64(opts.Window) {
		return true, nil
	}
	asks := 0
	for _, c := range x.calls {
		if c.f != history.FAcquire || c.key != k {
			continue
		}
		if c.typ == history.Fail && c.ret >= s || c.done < 0 && end-c.call >= int64(opts.Window) {
			asks++
		}
	}
	if asks < opts.Attempts {
		return true, nil
	}
	return true, &Finding{Kind: checker.Stuck, Key: k, Start: s, End: end}
}

// unavailable finds the unavailable windows of k in [lo, hi] (§4.6): each
// maximal stretch that no excuse covers at any moment, at least
// opts.UnavailableWindow long, with at least opts.Attempts acquires
// refused in it.
func (x *parsed) unavailable(k string, excuses []stretch, lo, hi int64, opts LivenessOptions) []Finding {
	// The moments at which coverage can change.
	points := []int64{lo, hi}
	for _, e := range excuses {
		for _, t := range []int64{e.from, e.to} {
			if t > lo && t < hi {
				points = append(points, t)
			}
		}
	}
	slices.Sort(points)
	points = slices.Compact(points)
	covered := func(t int64) bool {
		for _, e := range excuses {
			if e.from <= t && t < e.to {
				return true
			}
		}
		return false
	}
	var out []Finding
	judge := func(a, b int64) {
		if b-a < int64(opts.UnavailableWindow) {
			return
		}
		n := 0
		for _, c := range x.calls {
			if c.f == history.FAcquire && c.key == k && c.typ == history.Fail && c.ret >= a && c.ret <= b {
				n++
			}
		}
		if n >= opts.Attempts {
			out = append(out, Finding{Kind: checker.Unavailable, Key: k, Start: a, End: b})
		}
	}
	start := int64(-1) // the start of the free stretch being walked, -1 when none
	for i := 0; i+1 < len(points); i++ {
		if covered(points[i]) {
			if start >= 0 {
				judge(start, points[i])
				start = -1
			}
			continue
		}
		if start < 0 {
			start = points[i]
		}
	}
	if start >= 0 {
		judge(start, hi)
	}
	return out
}
