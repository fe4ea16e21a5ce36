package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// spanKind is what a drawn interval of a lane shows.
type spanKind uint8

// The span kinds. The order is part of the data format read by report.js.
const (
	kindAcquire spanKind = iota
	kindRelease
	kindRenew
	kindRead
	kindWrite
	kindOther
	kindHold  // a checker.Belief: the process believed it held the lock
	kindMaybe // an acquire of unknown outcome may hold the lock on the server
	kindLeaseLost
	numKinds
)

var kindNames = [numKinds]string{"acquire", "release", "renew", "read", "write", "other", "hold", "maybe-held", "lease-lost"}

// outcome is how an op span ended.
type outcome uint8

// The outcomes. Open is an op that never completed before the history ended,
// and a hold whose belief nothing ended (checker.Forever).
const (
	outOK outcome = iota
	outFail
	outInfo
	outOpen
)

func outcomeOf(t history.Type) outcome {
	switch t {
	case history.OK:
		return outOK
	case history.Fail:
		return outFail
	case history.Info:
		return outInfo
	}
	return outOpen
}

// span is one interval on one row of the timeline.
type span struct {
	Row  int
	Kind spanKind
	Out  outcome
	// Applies is set on a write span that has an apply interval: Mark and
	// MarkEnd are then its checker.Write's Lo and Hi (MarkEnd is
	// checker.Forever for a write of unknown outcome).
	Applies bool
	Start   time.Duration
	End     time.Duration
	// I is the index of the op that opens the span (an invoke, or the
	// grant's ok for a hold); J the index of the op that closes it (a
	// completion, or the belief's EndOp for a hold), or -1.
	I, J int
	// Mark is the belief's until for a hold and the ok's `until` for an
	// acquire (zero when absent); the apply interval's start for a write.
	Mark    time.Duration
	MarkEnd time.Duration
	Token   uint64
	Key     string
	Err     string
}

// row is one sub-lane of a worker's lane: the processes drawn on it.
type row struct {
	Client    int
	Processes []int
	busyUntil time.Duration
}

// nemesisInterval is one fault shaded across every lane.
type nemesisInterval struct {
	Fault string // the fault's f, e.g. "partition"
	Class string // the colour family: the fault's class (history.FaultClass)
	heal  string // the f of the heal that ends it; "" for a moment
	Start time.Duration
	End   time.Duration
	// Open is set when no heal was recorded: the fault lasts to the end.
	Open bool
	// Point is set for faults that act at one instant (a moment, an armed
	// client pause).
	Point bool
	// Failed is set when the nemesis recorded an error injecting it.
	Failed bool
	// NotRun is set for a step of the schedule never reached before the
	// run ended (history.Op.NotRun): a failed point at its due time.
	NotRun bool
	// Late is how long after its due time a fault that took effect late
	// did (history.Op.LateBy), and HealLate the same of its heal; 0 when
	// on time (docs/history.md §1, "Steps that did not run as written").
	Late, HealLate time.Duration
	Value          string
	I, J           int // the fault's op and its heal's, or -1
}

// availabilityBand is a stretch in which some server nodes were down or cut
// off, by the nemesis's availability records.
type availabilityBand struct {
	Start, End time.Duration
	history.Availability
	I int // the record's op index
}

// buildAvailability returns the stretches in which the availability records
// of h (a history of format version 3 or later, whose records the checker
// reads) say that some server node was down, each until the next record or
// end.
func buildAvailability(h history.History, end time.Duration) []availabilityBand {
	if history.Version(h) < 3 {
		return nil
	}
	var out []availabilityBand
	open := false // the last band runs on until the next record
	for _, op := range h {
		if !op.IsAvailability() {
			continue
		}
		if open {
			out[len(out)-1].End = op.Time
		}
		a, ok := history.AvailabilityOf(op)
		open = ok && len(a.Down) > 0
		if open {
			out = append(out, availabilityBand{Start: op.Time, End: end, Availability: a, I: op.Index})
		}
	}
	return out
}

// timeline is everything the report draws in its timeline.
type timeline struct {
	// End is where the timeline ends: Last, or later where a belief still
	// open at the end of the history runs on to its until.
	End time.Duration
	// Last is the time of the history's last op.
	Last    time.Duration
	Rows    []row
	Spans   []span
	Nemesis []nemesisInterval
	// Availability is where the availability records say nodes were down.
	Availability []availabilityBand
	// Host are the host records' events (docs/history.md §1, "The host
	// records"), each drawn as a marker of its own, apart from the faults:
	// a clock step as a line at its time, a stall as the stretch it lasted.
	Host []history.HostEvent
	// facts are the checker's definitions the timeline draws (and the
	// task view of a queue run).
	facts *checker.Facts
}

// nemesisDuration reads a "duration" from a nemesis op's value: a Go
// duration string or a number of nanoseconds.
func nemesisDuration(v json.RawMessage) (time.Duration, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(v, &m) != nil {
		return 0, false
	}
	raw, ok := m["duration"]
	if !ok {
		return 0, false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		d, err := time.ParseDuration(s)
		return d, err == nil && d > 0
	}
	var n int64
	if json.Unmarshal(raw, &n) == nil && n > 0 {
		return time.Duration(n), true
	}
	return 0, false
}

// compactValue returns a one-line text of a JSON value, strings unquoted.
func compactValue(v json.RawMessage) string {
	if len(v) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return string(v)
	}
	return b.String()
}

// buildNemesis pairs each fault with its heal. Which heal ends a fault, and
// its class, are what its op says (history.Op.FaultOf: recorded in the op
// from format version 6 on, by the fault's name before), never a list of
// names here. A heal closes the oldest open fault it heals whose recorded
// value is the same (the nemesis records the fault's description on both);
// failing that, the oldest open fault it heals at all. "heal-all" closes
// everything. A fault with a duration in its value (a client pause) ends by
// itself; a moment (a fault without a heal) and an armed client pause are
// points; the rest stay open to end. Records (the header op, the availability records) are no
// faults and draw nothing here. A fault that did not take effect
// (history.Op.NemesisFailed) is a failed point, never a fault in force; a
// fault that took effect in part is drawn in force with its error; a heal
// that failed closes nothing (docs/history.md §1, "Faults that failed"). A
// step never reached (history.Op.NotRun), a fault's or a heal step's, is a
// failed point at its due time marked not run; a fault or heal that took
// effect late carries how late (Late, HealLate).
func buildNemesis(h history.History, end time.Duration) []nemesisInterval {
	version := history.Version(h)
	var out []nemesisInterval
	open := []int{} // indexes into out of faults still open
	invokeAt := map[string]time.Duration{}
	for _, op := range h {
		if !op.IsNemesis() || op.IsRecord() {
			continue
		}
		if op.Type == history.Invoke {
			invokeAt[op.F] = op.Time
			continue
		}
		start, ok := invokeAt[op.F]
		if !ok {
			start = op.Time
		}
		delete(invokeAt, op.F)
		if op.IsHealOp(version) && op.NotRun() {
			out = append(out, notRunPoint(op, string(history.ClassOther)))
			continue
		}
		if op.IsHealOp(version) {
			if !op.NemesisFailed(version) { // else the fault stays in force
				open = closeHealed(out, open, op)
			}
			continue
		}
		heal, class := op.FaultOf(version)
		if op.NotRun() {
			out = append(out, notRunPoint(op, string(class)))
			continue
		}
		iv := faultInterval(op, version, heal, class, start, end)
		out = append(out, iv)
		if iv.Open {
			open = append(open, len(out)-1)
		}
	}
	return out
}

// closeHealed ends at heal, a heal op that took effect, the faults of out
// it heals among open (indexes into out of the faults still open), and
// returns the faults still open. A heal-all ends every one; another heal
// ends the first open fault it heals with the same value, or else the
// first it heals; a heal of nothing open ends nothing.
func closeHealed(out []nemesisInterval, open []int, heal history.Op) []int {
	healLate, _ := heal.LateBy()
	if heal.F == history.FHealAll {
		for _, k := range open {
			out[k].End, out[k].Open, out[k].J, out[k].HealLate = heal.Time, false, heal.Index, healLate
		}
		return open[:0]
	}
	val := compactValue(heal.Value)
	closeIdx := -1
	for pass := 0; pass < 2 && closeIdx < 0; pass++ {
		for n, k := range open {
			if out[k].heal != heal.F {
				continue
			}
			if pass == 0 && out[k].Value != val {
				continue
			}
			closeIdx = n
			break
		}
	}
	if closeIdx < 0 {
		return open // a heal of nothing we saw: nothing to draw
	}
	k := open[closeIdx]
	out[k].End, out[k].Open, out[k].J, out[k].HealLate = heal.Time, false, heal.Index, healLate
	return append(open[:closeIdx], open[closeIdx+1:]...)
}

// faultInterval is the interval of op, a fault's completion whose invoke
// was at start, which heals with heal: a failed point when it did not take
// effect, a point when it is an armed client pause or has no heal, its
// duration for a client pause, and otherwise open, to end, until its heal.
func faultInterval(op history.Op, version int, heal string, class history.FaultClass, start, end time.Duration) nemesisInterval {
	iv := nemesisInterval{
		Fault: op.F, Class: string(class), heal: heal, Start: start, End: end,
		Value: compactValue(op.Value), I: op.Index, J: -1, Failed: op.NemesisFailed(version),
	}
	iv.Late, _ = op.LateBy()
	switch {
	case iv.Failed:
		iv.Value = strings.TrimSpace(iv.Value + " — failed: " + op.Error)
	case op.Error != "":
		iv.Value = strings.TrimSpace(iv.Value + " — in part: " + op.Error)
	}
	switch d, hasD := nemesisDuration(op.Value); {
	case iv.Failed:
		iv.Point, iv.End = true, op.Time
	case armed(op.Value):
		iv.Point, iv.End = true, op.Time
	case hasD:
		// A client pause ends by itself after its duration (its
		// client-resume, when recorded, marks the same moment).
		iv.End = min(op.Time+d, max(end, op.Time+d))
	case heal == "":
		iv.Point, iv.End = true, op.Time
	default:
		iv.Open = true
	}
	return iv
}

// notRunPoint draws the op of a step never reached (history.Op.NotRun) as a
// failed point of class at its due time.
func notRunPoint(op history.Op, class string) nemesisInterval {
	return nemesisInterval{
		Fault: op.F, Class: class, Start: *op.Due, End: *op.Due, Point: true, Failed: true, NotRun: true,
		Value: strings.TrimSpace(compactValue(op.Value) + " — " + op.Error), I: op.Index, J: -1,
	}
}

// armed reports whether a nemesis op's value marks a fault that was only
// armed (a client pause waits for its worker to reach its pause point; the
// worker records the pause itself when it begins, and its end).
func armed(value []byte) bool { return bytes.Contains(value, []byte(`"armed":true`)) }

// buildTimeline turns a history into lanes, spans and nemesis intervals.
//
// The holds it draws are the checker's own beliefs (checker.Analyze, the one
// implementation of docs/history.md §3), and a write's apply mark is the
// checker's apply interval, so the picture cannot disagree with the verdict.
// A belief that nothing ends (no release, lease-lost, crash, re-acquisition
// or until) runs to the end of the timeline and is marked open; the
// timeline runs to the history's last op or to the latest until a belief
// still open at the end of the history runs to, whichever is later.
//
// Each worker (client) has a lane; each process of the worker is drawn on a
// row of that lane, a new row only while an earlier process of the same
// worker may still hold the lock: while its belief (which ends at its crash
// at the latest), or the maybe-held span of an acquire of unknown outcome
// (until its invoke + ttl), or an op of it, is still drawn.
func buildTimeline(h history.History) timeline { return timelineOf(h, checker.Analyze(h)) }

// timelineOf is buildTimeline over facts already analyzed from h.
func timelineOf(h history.History, facts *checker.Facts) timeline {
	tl := timeline{facts: facts}
	for i := range h {
		tl.Last = max(tl.Last, h[i].Time)
	}
	tl.End = tl.Last
	for _, b := range facts.Beliefs {
		if b.End != checker.Forever {
			tl.End = max(tl.End, b.End)
		}
	}
	tl.Nemesis = buildNemesis(h, tl.End)
	tl.Availability = buildAvailability(h, tl.End)
	tl.Host = checker.HostEvents(h)
	tl.Rows, tl.Spans = drawLanes(h, facts.Writes, beliefHolds(h, facts), tl.End)
	return tl
}

// drawnHold is a belief as the timeline draws it: its grant's process,
// worker, key and token, its interval (End is checker.Forever for a belief
// that nothing ended), the until in force when it ended, and the indexes of
// the grant's ok (I) and of the op that ended it (J, -1 for none).
type drawnHold struct {
	Process, Client   int
	Key               string
	Token             uint64
	Start, End, Until time.Duration
	I, J              int
}

// beliefHolds returns the checker's beliefs of h (facts) as drawn holds.
func beliefHolds(h history.History, facts *checker.Facts) []drawnHold {
	out := make([]drawnHold, 0, len(facts.Beliefs))
	for _, b := range facts.Beliefs {
		g := &facts.Grants[b.Grant]
		d := drawnHold{Process: g.Process, Client: g.Client, Key: g.Key, Token: g.Token, Start: b.Start, End: b.End, Until: b.Until, I: h[g.OK].Index, J: -1}
		if b.EndOp >= 0 {
			d.J = h[b.EndOp].Index
		}
		out = append(out, d)
	}
	return out
}

// laneProc is what the lanes draw of one worker process.
type laneProc struct {
	client int
	first  time.Duration
	last   time.Duration // the end of anything drawn for it
	spans  []span
}

// laneBuilder collects the spans of each process before they are laid out
// on rows.
type laneBuilder struct {
	end   time.Duration
	procs map[int]*laneProc
	order []int
}

// drawLanes lays out the client ops of h (with writes, the checker's
// writes of h, for their apply intervals) and the holds on rows, up to
// end: the spans, sorted by start, and the rows they are drawn on.
func drawLanes(h history.History, writes []checker.Write, holds []drawnHold, end time.Duration) ([]row, []span) {
	lb := &laneBuilder{end: end, procs: map[int]*laneProc{}}
	lb.ops(h, writes)
	lb.holds(holds)
	return lb.layout()
}

func (lb *laneBuilder) proc(process, client int, first time.Duration) *laneProc {
	p := lb.procs[process]
	if p == nil {
		p = &laneProc{client: client, first: first}
		lb.procs[process] = p
		lb.order = append(lb.order, process)
	}
	return p
}

// ops draws the client ops of h: each invoke with its completion, a
// lease-lost as a mark, an acquire of unknown outcome's maybe-held span,
// and the ops still in flight at the end of h, run to the end.
func (lb *laneBuilder) ops(h history.History, writes []checker.Write) {
	// The checker's writes are in the order of their completions, those
	// that never completed last; next is the first not yet drawn.
	next := 0
	writeDoneAt := func(done int) *checker.Write {
		for next < len(writes) && writes[next].Done >= 0 && writes[next].Done < done {
			next++
		}
		if next < len(writes) && writes[next].Done == done {
			return &writes[next]
		}
		return nil
	}
	inflight := map[int]int{} // process -> position of its outstanding invoke
	for i := range h {
		op := &h[i]
		if op.IsNemesis() {
			continue
		}
		p := lb.proc(op.Process, op.Client, op.Time)
		p.last = max(p.last, op.Time)
		if op.Type == history.Invoke {
			inflight[op.Process] = i
			continue
		}
		at, ok := inflight[op.Process]
		if ok && h[at].F == op.F {
			delete(inflight, op.Process)
		} else {
			at = i // a completion without its invoke: draw it as a point
		}
		lb.completion(p, h, at, i, writeDoneAt)
	}
	lb.inflight(h, writes, inflight)
}

// completion draws the op of process p invoked at position at of h and
// completed at position i (at == i: a completion without its invoke,
// drawn as a point). writeDoneAt returns the checker's write completed at
// a position.
func (lb *laneBuilder) completion(p *laneProc, h history.History, at, i int, writeDoneAt func(int) *checker.Write) {
	inv, op, alone := &h[at], &h[i], at == i
	if op.F == history.FLeaseLost {
		p.spans = append(p.spans, span{Kind: kindLeaseLost, Out: outcomeOf(op.Type), Start: op.Time, End: op.Time,
			I: op.Index, J: -1, Key: op.Key})
		return
	}
	s := span{Kind: kindOf(op.F), Out: outcomeOf(op.Type), Start: inv.Time, End: op.Time,
		I: inv.Index, J: op.Index, Token: op.Token, Key: op.Key, Err: op.Error}
	if alone {
		s.J = -1
	}
	if s.Token == 0 {
		s.Token = inv.Token
	}
	switch {
	case op.F == history.FWrite && !alone:
		if w := writeDoneAt(i); w != nil && w.Invoke == at {
			s.setApply(w)
		}
	case op.F == history.FAcquire:
		s.Mark = op.Until
	}
	p.spans = append(p.spans, s)
	if op.F == history.FAcquire && op.Type == history.Info {
		maybeEnd := lb.end
		if inv.TTL > 0 {
			maybeEnd = min(inv.Time+inv.TTL, lb.end)
		}
		if maybeEnd > op.Time {
			p.spans = append(p.spans, span{Kind: kindMaybe, Out: outInfo, Start: op.Time, End: maybeEnd,
				I: inv.Index, J: op.Index, Key: op.Key})
			p.last = max(p.last, maybeEnd)
		}
	}
}

// inflight draws the ops still in flight at the end of h (inflight: the
// position of each process's outstanding invoke), running to the end.
func (lb *laneBuilder) inflight(h history.History, writes []checker.Write, inflight map[int]int) {
	pendingWrites := map[int]*checker.Write{} // by invoke position
	for k := range writes {
		if w := &writes[k]; w.Done < 0 {
			pendingWrites[w.Invoke] = w
		}
	}
	for _, pid := range lb.order {
		at, ok := inflight[pid]
		if !ok {
			continue
		}
		p, inv := lb.procs[pid], &h[at]
		s := span{Kind: kindOf(inv.F), Out: outOpen, Start: inv.Time, End: lb.end,
			I: inv.Index, J: -1, Token: inv.Token, Key: inv.Key}
		if w := pendingWrites[at]; w != nil && inv.F == history.FWrite {
			s.setApply(w)
		}
		p.spans = append(p.spans, s)
		p.last = lb.end
	}
}

// holds draws the holds on the rows of their grants' processes.
func (lb *laneBuilder) holds(holds []drawnHold) {
	for _, b := range holds {
		p := lb.proc(b.Process, b.Client, b.Start)
		s := span{Kind: kindHold, Out: outOK, Start: b.Start, End: b.End, I: b.I, J: b.J,
			Mark: b.Until, Token: b.Token, Key: b.Key}
		if b.End == checker.Forever {
			s.Out, s.End = outOpen, lb.end
		}
		p.spans = append(p.spans, s)
		p.last = max(p.last, s.End)
	}
}

// layout puts the processes on rows: clients in order; rows packed
// greedily per client.
func (lb *laneBuilder) layout() ([]row, []span) {
	order, procs := lb.order, lb.procs
	sort.SliceStable(order, func(a, b int) bool {
		pa, pb := procs[order[a]], procs[order[b]]
		if pa.client != pb.client {
			return pa.client < pb.client
		}
		return pa.first < pb.first
	})
	var rows []row
	var spans []span
	for _, pid := range order {
		p := procs[pid]
		r := -1
		for i := range rows {
			if rows[i].Client == p.client && rows[i].busyUntil <= p.first {
				r = i
				break
			}
		}
		if r < 0 {
			rows = append(rows, row{Client: p.client})
			r = len(rows) - 1
		}
		rows[r].Processes = append(rows[r].Processes, pid)
		rows[r].busyUntil = max(p.last, p.first)
		for _, s := range p.spans {
			s.Row = r
			spans = append(spans, s)
		}
	}
	// Rows of one client must be adjacent; they are, as long as rows are
	// created in client order, which the sort above guarantees.
	sort.SliceStable(spans, func(a, b int) bool { return spans[a].Start < spans[b].Start })
	return rows, spans
}

// setApply gives a write span the checker's apply interval of w: the moment
// (Exact) or the window in which an accepted write took effect, the moment a
// rejected write was refused when the history gives it (a rejected write
// took no effect), and for a write of unknown outcome its invoke on, without
// end (it may also never have taken effect).
func (s *span) setApply(w *checker.Write) {
	if w.Status == checker.Rejected && !w.Exact {
		return
	}
	s.Applies, s.Mark, s.MarkEnd = true, w.Lo, w.Hi
}

func kindOf(f string) spanKind {
	switch f {
	case history.FAcquire:
		return kindAcquire
	case history.FRelease:
		return kindRelease
	case history.FRenew:
		return kindRenew
	case history.FRead:
		return kindRead
	case history.FWrite:
		return kindWrite
	}
	return kindOther
}

// timelineJSON is the compact form of a timeline embedded in report.html and
// read by report.js. Times are microseconds. Spans are sorted by start and
// stored column-wise: S the start as a delta from the previous span's start,
// D the duration, C the code row*64 + kind*4 + outcome, I the opening op's
// index as a delta from the previous span's, J the closing op's index minus
// the opening one (0: none). Sparse columns give the marks (until), the
// writes' apply intervals, the tokens and the errors of the spans that have
// them.
type timelineJSON struct {
	End   int64     `json:"end"`
	Rows  []rowJSON `json:"rows"`
	Kinds []string  `json:"kinds"`
	S     []int64   `json:"s"`
	D     []int64   `json:"d"`
	C     []int     `json:"c"`
	I     []int     `json:"i"`
	J     []int     `json:"j"`
	// MarkSpan/MarkAt: span index delta and time (µs) of marks: the until
	// of a hold or an acquire.
	MarkSpan []int   `json:"ms"`
	MarkAt   []int64 `json:"mv"`
	// ApplySpan/ApplyLo/ApplyLen: span index delta of a write with an apply
	// interval (checker.Write's Lo..Hi), the interval's start as an offset
	// from the span's start and its length (µs); the length is -1 for a
	// write of unknown outcome: from Lo on, without end, or never. For a
	// rejected write the entry is the moment it was refused, where the
	// history gives it (it took no effect); a write without an entry has no
	// such moment.
	ApplySpan []int   `json:"as"`
	ApplyLo   []int64 `json:"al"`
	ApplyLen  []int64 `json:"ad"`
	// TokSpan/Tok: span index delta and fencing token.
	TokSpan []int    `json:"ts"`
	Tok     []uint64 `json:"tv"`
	// ErrSpan/Err: span index delta and an index into Errors.
	ErrSpan []int    `json:"es"`
	Err     []int    `json:"ev"`
	Errors  []string `json:"errors"`
	// Keys is set when the history has more than one key; KeySpan/Key then
	// give each keyed span's key index.
	Keys    []string      `json:"keys,omitempty"`
	KeySpan []int         `json:"ks,omitempty"`
	Key     []int         `json:"kv,omitempty"`
	Nemesis []nemesisJSON `json:"nemesis"`
	// Avail lists the stretches in which the availability records say
	// some server node was down.
	Avail []availJSON `json:"avail"`
	// Host lists the host records' markers.
	Host []hostJSON `json:"host"`
	// Named lists the spans (by index) that an anomaly names; report.js
	// never folds them into an aggregate.
	Named []int `json:"named"`
	// Summary is set when the history is drawn in summary: the spans are
	// then those of its detail windows.
	Summary *summaryJSON `json:"summary,omitempty"`
}

type rowJSON struct {
	Client    int   `json:"w"`
	Processes []int `json:"p"`
}

// availJSON is one availabilityBand: times in µs, the server nodes counted,
// those down, whether a majority was up, and the record's op index.
type availJSON struct {
	Start    int64    `json:"s"`
	End      int64    `json:"e"`
	Nodes    int      `json:"n"`
	Down     []string `json:"down"`
	Majority bool     `json:"maj"`
	I        int      `json:"i"`
}

// hostJSON is one host event (history.HostEvent) as report.js draws it:
// its kind (history.FClockStep or history.FStall), its span in µs (a clock
// step is drawn at its end, the time the watch saw it) and its sentence.
type hostJSON struct {
	Kind  string `json:"k"`
	Start int64  `json:"s"`
	End   int64  `json:"e"`
	Text  string `json:"t"`
}

type nemesisJSON struct {
	Fault  string `json:"f"`
	Class  string `json:"c"`
	Start  int64  `json:"s"`
	End    int64  `json:"e"`
	Open   bool   `json:"open,omitempty"`
	Point  bool   `json:"pt,omitempty"`
	Failed bool   `json:"failed,omitempty"`
	// NotRun marks a step never reached; Late and HealLate are how late
	// (µs) the fault and its heal took effect after their due times.
	NotRun   bool   `json:"nr,omitempty"`
	Late     int64  `json:"late,omitempty"`
	HealLate int64  `json:"hlate,omitempty"`
	Value    string `json:"v,omitempty"`
	I        int    `json:"i"`
	J        int    `json:"j"`
}

// maxErrorSpans bounds how many error texts the report embeds.
const maxErrorSpans = 50000

func us(d time.Duration) int64 { return int64(d / time.Microsecond) }

// compact encodes tl for report.js; named holds the op indexes anomalies name.
func (tl timeline) compact(named map[int]bool) timelineJSON {
	n := len(tl.Spans)
	out := timelineJSON{
		End: us(tl.End), S: make([]int64, n), D: make([]int64, n), C: make([]int, n),
		I: make([]int, n), J: make([]int, n), Named: []int{},
		MarkSpan: []int{}, MarkAt: []int64{}, ApplySpan: []int{}, ApplyLo: []int64{}, ApplyLen: []int64{}, TokSpan: []int{}, Tok: []uint64{},
		ErrSpan: []int{}, Err: []int{}, Errors: []string{}, Nemesis: []nemesisJSON{}, Avail: []availJSON{}, Host: []hostJSON{},
	}
	out.Kinds = kindNames[:]
	for _, r := range tl.Rows {
		out.Rows = append(out.Rows, rowJSON{Client: r.Client, Processes: r.Processes})
	}
	e := &spanEncoder{out: &out, n: n, named: named, errIdx: map[string]int{}}
	e.keys(tl.Spans)
	for k := range tl.Spans {
		e.add(k, &tl.Spans[k])
	}
	tl.compactRecords(&out)
	return out
}

// spanEncoder encodes a timeline's spans into out, one after the other:
// each column that not every span has holds, per span that has it, the
// distance from the previous such span (the prev fields).
type spanEncoder struct {
	out                                                   *timelineJSON
	n                                                     int            // the number of spans
	named                                                 map[int]bool   // the op indexes anomalies name
	errIdx                                                map[string]int // error text -> index into out.Errors
	keySet                                                map[string]int // key -> index into out.Keys
	multiKey                                              bool
	prevStart                                             int64
	prevI, prevMark, prevApply, prevTok, prevErr, prevKey int
}

// keys lists the spans' keys in out.Keys in the order they first appear,
// and none when there is only one.
func (e *spanEncoder) keys(spans []span) {
	e.keySet = map[string]int{}
	for _, s := range spans {
		if _, ok := e.keySet[s.Key]; !ok && s.Key != "" {
			e.keySet[s.Key] = len(e.out.Keys)
			e.out.Keys = append(e.out.Keys, s.Key)
		}
	}
	e.multiKey = len(e.out.Keys) > 1
	if !e.multiKey {
		e.out.Keys = nil
	}
}

// add encodes span s, the k-th.
func (e *spanEncoder) add(k int, s *span) {
	out := e.out
	st := us(s.Start)
	out.S[k] = st - e.prevStart
	e.prevStart = st
	out.D[k] = us(s.End) - st
	out.C[k] = s.Row*64 + int(s.Kind)*4 + int(s.Out)
	out.I[k] = s.I - e.prevI
	e.prevI = s.I
	if s.J >= 0 {
		out.J[k] = s.J - s.I
	}
	e.marks(k, s, st)
	if s.Token > 0 && (s.Kind == kindHold || s.Kind == kindAcquire || s.Kind == kindWrite || e.n < 200000) {
		out.TokSpan = append(out.TokSpan, k-e.prevTok)
		out.Tok = append(out.Tok, s.Token)
		e.prevTok = k
	}
	if s.Err != "" && len(out.ErrSpan) < maxErrorSpans {
		e.err(k, s.Err)
	}
	if e.multiKey && s.Key != "" {
		out.KeySpan = append(out.KeySpan, k-e.prevKey)
		out.Key = append(out.Key, e.keySet[s.Key])
		e.prevKey = k
	}
	if e.named[s.I] || (s.J >= 0 && e.named[s.J]) {
		out.Named = append(out.Named, k)
	}
}

// marks encodes the mark of span s, the k-th, which starts at st (µs): the
// window in which it applies, or the moment it marks.
func (e *spanEncoder) marks(k int, s *span, st int64) {
	out := e.out
	if s.Applies {
		out.ApplySpan = append(out.ApplySpan, k-e.prevApply)
		out.ApplyLo = append(out.ApplyLo, us(s.Mark)-st)
		d := int64(-1)
		if s.MarkEnd != checker.Forever {
			d = us(s.MarkEnd) - us(s.Mark)
		}
		out.ApplyLen = append(out.ApplyLen, d)
		e.prevApply = k
	} else if s.Mark > 0 {
		out.MarkSpan = append(out.MarkSpan, k-e.prevMark)
		out.MarkAt = append(out.MarkAt, us(s.Mark))
		e.prevMark = k
	}
}

// err encodes the error text of the k-th span, each text listed once in
// out.Errors.
func (e *spanEncoder) err(k int, text string) {
	out := e.out
	i, ok := e.errIdx[text]
	if !ok {
		i = len(out.Errors)
		e.errIdx[text] = i
		out.Errors = append(out.Errors, text)
	}
	out.ErrSpan = append(out.ErrSpan, k-e.prevErr)
	out.Err = append(out.Err, i)
	e.prevErr = k
}

// compactRecords encodes tl's faults, availability and host records into
// out.
func (tl timeline) compactRecords(out *timelineJSON) {
	for _, iv := range tl.Nemesis {
		out.Nemesis = append(out.Nemesis, nemesisJSON{
			Fault: iv.Fault, Class: iv.Class, Start: us(iv.Start), End: us(iv.End), Open: iv.Open,
			Point: iv.Point, Failed: iv.Failed, NotRun: iv.NotRun, Late: us(iv.Late), HealLate: us(iv.HealLate), Value: iv.Value, I: iv.I, J: iv.J,
		})
	}
	for _, b := range tl.Availability {
		out.Avail = append(out.Avail, availJSON{Start: us(b.Start), End: us(b.End), Nodes: b.Nodes, Down: b.Down, Majority: b.Majority(), I: b.I})
	}
	for _, e := range tl.Host {
		out.Host = append(out.Host, hostJSON{Kind: e.Kind, Start: us(e.From), End: us(e.Time), Text: e.Describe()})
	}
}

// anomalyJSON is one anomaly as report.js needs it: its ops and the time
// window they span, and a liveness anomaly's own window (the checker's), in
// µs, which report.js shades.
type anomalyJSON struct {
	Checker string `json:"checker"`
	Kind    string `json:"kind"`
	Key     string `json:"key,omitempty"`
	Ops     []int  `json:"ops"`
	Message string `json:"message"`
	// Host is the anomaly's host note (checker.Anomaly.Host).
	Host string `json:"host,omitempty"`
	// Follows counts the anomalies that follow from this one's cause
	// (checker.Anomaly.Follows); Followers gives each one's ops.
	Follows   int       `json:"follows,omitempty"`
	Followers [][]int   `json:"followers,omitempty"`
	From      int64     `json:"from"`
	To        int64     `json:"to"`
	Window    *[2]int64 `json:"window,omitempty"`
}

// anomalyWindows lists every anomaly of results with the time window of the
// ops it names (and of the spans those ops belong to).
func anomalyWindows(results []checker.Result, h history.History, tl timeline) []anomalyJSON {
	byIndex := func(i int) (history.Op, bool) {
		if i >= 0 && i < len(h) && h[i].Index == i {
			return h[i], true
		}
		k := sort.Search(len(h), func(k int) bool { return h[k].Index >= i })
		if k < len(h) && h[k].Index == i {
			return h[k], true
		}
		return history.Op{}, false
	}
	spanOf := map[int][2]time.Duration{}
	want := map[int]bool{}
	for _, r := range results {
		for _, a := range r.Anomalies {
			for _, i := range a.Ops {
				want[i] = true
			}
		}
	}
	for _, s := range tl.Spans {
		for _, i := range []int{s.I, s.J} {
			if i >= 0 && want[i] {
				w, ok := spanOf[i]
				if !ok {
					w = [2]time.Duration{s.Start, s.End}
				}
				spanOf[i] = [2]time.Duration{min(w[0], s.Start), max(w[1], s.End)}
			}
		}
	}
	out := []anomalyJSON{}
	for _, r := range results {
		for _, a := range r.Anomalies {
			aj := anomalyJSON{Checker: r.Name, Kind: a.Kind, Key: a.Key, Ops: a.Ops, Message: a.Message, Host: a.Host, Follows: a.Follows, Followers: a.Followers, From: -1, To: -1}
			if aj.Ops == nil {
				aj.Ops = []int{}
			}
			var from, to time.Duration = -1, -1
			for _, i := range a.Ops {
				lo, hi := time.Duration(-1), time.Duration(-1)
				if w, ok := spanOf[i]; ok {
					lo, hi = w[0], w[1]
				} else if op, ok := byIndex(i); ok {
					lo, hi = op.Time, op.Time
				} else {
					continue
				}
				if from < 0 || lo < from {
					from = lo
				}
				if hi > to {
					to = hi
				}
			}
			if w := a.Window; w != nil {
				aj.Window = &[2]int64{us(w.Start), us(w.End)}
				if from < 0 || w.Start < from {
					from = w.Start
				}
				to = max(to, w.End)
			}
			if from >= 0 {
				aj.From, aj.To = us(from), us(to)
			}
			out = append(out, aj)
		}
	}
	return out
}

// describeSpan is a one-line text of a span, used by tests and titles.
func describeSpan(s span) string {
	return fmt.Sprintf("%s/%d %v..%v i=%d j=%d", kindNames[s.Kind], s.Out, s.Start, s.End, s.I, s.J)
}
