// live_report.go holds the end of the liveness report: what the end of the
// history settles, the verdict, and the stuck rule (docs/history.md §4.5).

package checker

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// result ends the history and returns its liveness report.
func (s *liveStream) result() LivenessResult {
	return s.report(s.queue.lost)
}

// report ends the history and returns its liveness report, the queue's
// part (whether the history has a capture op, the captures and the lost
// tasks) from queue.
func (s *liveStream) report(queue func() (bool, int, []Anomaly)) LivenessResult {
	res := LivenessResult{Grants: s.grants, Anomalies: []Anomaly{}}
	if s.ops == 0 {
		res.Verdict, res.Note = Unknown, "the history is empty"
		return res
	}
	s.finishAll()
	names := make([]string, 0, len(s.keys))
	for k := range s.keys {
		names = append(names, k)
	}
	slices.Sort(names)
	upAtEnd := s.avail.current != nil || s.avail.done
	if s.avail.current != nil {
		s.avail.current.to = s.end
		s.avail.periods = append(s.avail.periods, *s.avail.current)
		s.avail.current = nil
	}
	judged := 0
	var notes []string
	if s.avail.note != "" {
		notes = append(notes, s.avail.note)
	}
	for _, name := range names {
		k := s.keys[name]
		rg := liveRegime{never: k.never, sessions: k.sessions, L: max(k.longestKnownLease, k.longestLeaseAtEnd)}
		rg.sessionExcuses = s.sessionReach(k, rg)
		stuck, ok, note := s.stuck(k, rg, upAtEnd)
		if ok {
			judged++
		}
		if stuck != nil {
			res.Anomalies = append(res.Anomalies, *stuck)
		}
		if note != "" {
			notes = append(notes, note)
		}
		as, ok := s.unavailable(k, rg)
		if ok {
			judged++
		}
		res.Anomalies = append(res.Anomalies, as...)
	}
	captured, captures, lost := queue()
	if captured {
		judged++
		res.Captures = captures
		res.Anomalies = append(res.Anomalies, lost...)
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
	if res.Grants == 0 && !captured {
		res.Note = strings.TrimPrefix(res.Note+"; no acquire succeeded in the whole run", "; ")
	}
	return res
}

// finishAll ends the history: a renewal still outstanding is of unknown
// outcome, a belief still open runs to its until or on without end, every
// grant's excuse end is now known, a client still open never closes and a
// clock fault still in force lasts to the end.
func (s *liveStream) finishAll() {
	s.procs.each(func(_ int, p *liveProc) {
		for j := range p.keys {
			pk := &p.keys[j]
			g := pk.grant
			if g == nil {
				continue
			}
			if p.pending.valid && p.pending.fn == history.FRenew && p.pending.key == pk.key.name && pk.renewing && g.okIndex < p.pending.index {
				s.unknownRenewal(g, pk.renewAt, s.end, pk.renewTTL)
			}
			if c := g.contribution(); !g.leaseFinal && c >= 0 {
				pk.key.longestLeaseAtEnd = max(pk.key.longestLeaseAtEnd, c)
			}
			s.finishGrant(g)
		}
		if p.pending.valid && p.pending.fn == history.FAcquire {
			k := s.keys[p.pending.key]
			k.waiting = append(k.waiting, p.pending)
		}
	})
	s.ended = true
	if s.faults.cutting {
		s.faults.cutting = false
		s.faults.cuts = append(s.faults.cuts, span{s.faults.cutSince, s.end})
		s.healed(s.end)
	}
	if s.avail.down {
		s.downRecord(s.end, false) // a down stretch in force runs to the end
	}
	s.arrived()
	for _, k := range s.keys {
		slices.SortFunc(k.waiting, func(a, b livePending) int { return a.index - b.index })
		for _, g := range slices.Clone(k.openGrants) {
			k.trySettle(s, g)
			if g.end == Forever && k.heldGrant == nil {
				k.heldGrant = g
			}
		}
		for _, u := range k.unknownsAwaitingClose {
			if u.ttl <= 0 {
				k.maxEnd = Forever
				k.cover(s, u.invAt, Forever)
			}
		}
	}
	if s.faults.skewing {
		s.faults.skews = append(s.faults.skews, span{s.faults.skewSince, s.end})
	}
}

// held says who may rightly hold k for ever, "" when nobody: an acquire of
// unknown outcome whose excuse never ends (the first to complete), else a
// grant whose excuse never ends (the first).
func (k *liveKey) held() string {
	var u *liveUnknown
	for _, x := range k.unknownsAwaitingClose {
		if x.ttl <= 0 || k.never {
			u = x
			break
		}
	}
	if f := k.firstWithTTL; k.never && !k.sessions && f != nil && (u == nil || f.doneIndex < u.doneIndex) {
		u = f
	}
	switch {
	case u != nil:
		return fmt.Sprintf("worker %d's acquire of unknown outcome at %s may have taken it for ever", u.client, secs(u.invAt))
	case k.heldGrant != nil:
		return fmt.Sprintf("worker %d, granted it at %s, may rightly hold it still", k.heldGrant.client, secs(k.heldGrant.ret))
	}
	return ""
}

// text describes g for an anomaly's sentence: "worker 1's at 2.005s,
// whose process crashed at 2.010s".
func (g *liveGrant) text() string {
	t := fmt.Sprintf("worker %d's at %s", g.client, secs(g.ret))
	if g.life.crashed {
		t += fmt.Sprintf(", whose process crashed at %s", secs(g.life.at))
	}
	return t
}

// stuck judges whether key k, under its final reading rg, is stuck at the
// end of the history (docs/history.md §4.5): the anomaly when it is,
// whether k could be judged, and a note.
func (s *liveStream) stuck(k *liveKey, rg liveRegime, upAtEnd bool) (*Anomaly, bool, string) {
	fs := &s.faults
	if n := len(fs.inForce); n > 0 {
		op := &fs.inForce[n-1]
		return nil, false, fmt.Sprintf("%s not judged for stuck: a fault (%s at %s) was still in force at the end", k.name, op.F, secs(op.Time))
	}
	if !upAtEnd {
		return nil, false, fmt.Sprintf("%s not judged for stuck: no majority of the server nodes was up at the end", k.name)
	}
	var settled time.Duration
	if fs.anyFault {
		settled = fs.lastFault + rg.L
	}
	if s.end-settled < s.opts.Window {
		if !fs.anyFault {
			return nil, false, fmt.Sprintf("%s not judged for stuck: the run is shorter than %s", k.name, s.opts.Window)
		}
		return nil, false, fmt.Sprintf("%s not judged for stuck: the last fault at %s and its longest lease leave less than %s of the run", k.name, secs(fs.lastFault), s.opts.Window)
	}
	if held := k.held(); held != "" {
		return nil, true, fmt.Sprintf("%s held at the end: %s", k.name, held)
	}
	start := max(settled, k.maxEnd, k.allWithTTL.final(rg))
	for _, e := range rg.sessionExcuses {
		start = max(start, e.to)
	}
	if n := len(fs.skews); n > 0 {
		start = max(start, fs.skews[n-1].to+rg.L)
	}
	if s.end-start < s.opts.Window {
		return nil, true, ""
	}
	return s.stuckIn(k, start), true, ""
}

// stuckIn returns the stuck anomaly of k from start to the end, when
// enough acquires were refused at or after start or were still waiting at
// the end, having waited the window; nil otherwise.
func (s *liveStream) stuckIn(k *liveKey, start time.Duration) *Anomaly {
	open := k.openRegion()
	i, _ := open.count(start, Forever)
	failed := open.fails[i:]
	workers := map[int]bool{}
	for _, f := range failed {
		workers[f.client] = true
	}
	var still []livePending
	for _, w := range k.waiting {
		if s.end-w.at >= s.opts.Window {
			still = append(still, w)
			workers[w.client] = true
		}
	}
	if len(failed)+len(still) < s.opts.Attempts {
		return nil
	}
	var ops []int
	if n := len(failed); n > 0 {
		ops = []int{failed[0].inv, failed[0].done, failed[n-1].inv, failed[n-1].done}
	}
	for _, w := range still {
		ops = append(ops, w.index)
	}
	last := "no grant of it was ever recorded"
	if g := k.last; g != nil {
		ops = append([]int{g.invoke, g.okIndex}, ops...)
		last = "the last grant was " + g.text()
	}
	after := "every lease had run out"
	if s.faults.anyFault {
		after = fmt.Sprintf("the last fault (at %s) and every lease were over", secs(s.faults.lastFault))
	}
	return &Anomaly{
		Kind:   Stuck,
		Key:    k.name,
		Ops:    ops,
		Window: &Window{Start: start, End: s.end},
		Message: fmt.Sprintf("%s stuck from %s to the end at %s, nobody took it again: %s asked in vain (%s), once %s and with nobody believing it held %s; %s",
			k.name, secs(start), secs(s.end), plural(len(workers), "worker"), askedText(len(failed), len(still)), after, k.name, last),
	}
}
