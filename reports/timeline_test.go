package reports

import (
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/checker/synth"
	"github.com/jepsen-lite/jepsen-lite/history"
)

func findSpans(tl timeline, kind spanKind) []span {
	var out []span
	for _, s := range tl.Spans {
		if s.Kind == kind {
			out = append(out, s)
		}
	}
	return out
}

func TestBuildTimelineLanesAndHolds(t *testing.T) {
	h := invalidHistory()
	tl := buildTimeline(h)

	if tl.End != sec(11.10) {
		t.Errorf("End = %v, want 11.1s", tl.End)
	}
	// Worker 0: p0 then p2 on one row; p3 starts while p2's acquire of
	// unknown outcome may still hold the lock, so it gets a second row.
	wantRows := []row{{Client: 0, Processes: []int{0, 2}}, {Client: 0, Processes: []int{3}}, {Client: 1, Processes: []int{1}}}
	if len(tl.Rows) != len(wantRows) {
		t.Fatalf("rows = %+v, want %+v", tl.Rows, wantRows)
	}
	for i, w := range wantRows {
		if tl.Rows[i].Client != w.Client || !slices.Equal(tl.Rows[i].Processes, w.Processes) {
			t.Errorf("row %d = %+v, want %+v", i, tl.Rows[i], w)
		}
	}

	holds := findSpans(tl, kindHold)
	want := []struct {
		start, end time.Duration
		i, j, row  int
		until      time.Duration
	}{
		{sec(0.12), sec(3.00), 1, 12, 0, sec(5.10)},   // released at 3.0s, before its until
		{sec(2.20), sec(5.20), 9, -1, 2, sec(5.20)},   // its belief ends at until 5.2s, no op ends it
		{sec(10.10), sec(11.0), 24, 25, 1, sec(15.1)}, // p3, on worker 0's second row
	}
	if len(holds) != len(want) {
		t.Fatalf("holds = %d, want %d: %v", len(holds), len(want), holds)
	}
	for n, w := range want {
		s := holds[n]
		if s.Start != w.start || s.End != w.end || s.I != w.i || s.J != w.j || s.Row != w.row || s.Mark != w.until || s.Out != outOK {
			t.Errorf("hold %d = %s row %d until %v, want %+v", n, describeSpan(s), s.Row, s.Mark, w)
		}
	}
	maybe := findSpans(tl, kindMaybe)
	if len(maybe) != 1 || maybe[0].Start != sec(5.60) || maybe[0].End != sec(9.60) || maybe[0].Row != 0 {
		t.Errorf("maybe-held spans = %v, want one from 5.6s to 9.6s (invoke 4.6s + ttl 5s) on row 0", maybe)
	}
	writes := findSpans(tl, kindWrite)
	if len(writes) != 2 {
		t.Fatalf("writes = %v, want two", writes)
	}
	for n, at := range []time.Duration{sec(1.25), sec(2.35)} {
		if w := writes[n]; !w.Applies || w.Mark != at || w.MarkEnd != at {
			t.Errorf("write %d = %s applies %v %v..%v, want exactly at its applied time %v", n, describeSpan(w), w.Applies, w.Mark, w.MarkEnd, at)
		}
	}
	var crashed int
	for _, s := range tl.Spans {
		if s.Out == outInfo && s.Kind != kindMaybe {
			crashed++
		}
	}
	if crashed != 2 {
		t.Errorf("info op spans = %d, want 2 (the release of p0 and the acquire of p2)", crashed)
	}
	for k := 1; k < len(tl.Spans); k++ {
		if tl.Spans[k].Start < tl.Spans[k-1].Start {
			t.Fatalf("spans not sorted by start at %d", k)
		}
	}
}

// nemesisOp is a nemesis op completed at second at, its fault declared.
func nemesisOp(at float64, f string, val json.RawMessage, errText string) history.Op {
	return declared(history.Op{Time: sec(at), Process: -1, Type: history.Info, F: f, Value: val, Error: errText})
}

// wantInterval is a fault interval a test expects, its times in seconds.
type wantInterval struct {
	fault      string
	class      string
	start, end float64
	open, pt   bool
}

// checkBuildNemesis checks buildNemesis's intervals of ops, on a timeline
// ending at 10 s, against want.
func checkBuildNemesis(t *testing.T, ops []history.Op, want []wantInterval) {
	t.Helper()
	for i := range ops {
		ops[i].Index = i
	}
	got := buildNemesis(ops, sec(10))
	if len(got) != len(want) {
		t.Fatalf("got %d intervals %+v, want %d", len(got), got, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Fault != w.fault || g.Class != w.class || g.Start != sec(w.start) || g.End != sec(w.end) || g.Open != w.open || g.Point != w.pt {
			t.Errorf("interval %d = %+v, want %+v", i, g, w)
		}
	}
}

func TestBuildNemesis(t *testing.T) {
	v := func(x any) json.RawMessage { return history.JSONValue(x) }
	nem := nemesisOp
	failed := func(op history.Op) history.Op { op.Type = history.Fail; return op }
	type iv = wantInterval
	tests := []struct {
		name string
		ops  []history.Op
		want []iv
	}{
		{"heal pairs by value", []history.Op{
			nem(1, "partition", v("a"), ""), nem(2, "partition", v("b"), ""), nem(3, "heal", v("b"), ""), nem(4, "heal", v("a"), ""),
		}, []iv{{"partition", "network", 1, 4, false, false}, {"partition", "network", 2, 3, false, false}}},
		{"heal by kind when values differ", []history.Op{
			nem(1, "pause", v("n1"), ""), nem(2, "resume", v("something else"), ""),
		}, []iv{{"pause", "pause", 1, 2, false, false}}},
		{"each fault its own heal", []history.Op{
			nem(1, "kill", v("n2"), ""), nem(2, "clock-bump", v("n1"), ""), nem(3, "clock-reset", v("n1"), ""), nem(5, "start", v("n2"), ""),
		}, []iv{{"kill", "kill", 1, 5, false, false}, {"clock-bump", "clock", 2, 3, false, false}}},
		{"heal-all closes everything", []history.Op{
			nem(1, "partition", v("a"), ""), nem(2, "pause", v("n1"), ""), nem(3, "heal-all", nil, ""),
		}, []iv{{"partition", "network", 1, 3, false, false}, {"pause", "pause", 2, 3, false, false}}},
		{"unmatched lasts to the end", []history.Op{
			nem(1, "partition", v("a"), ""), nem(9, "failover", v("n1"), ""),
		}, []iv{{"partition", "network", 1, 10, true, false}, {"failover", "failover", 9, 10, true, false}}},
		{"version 5: a reset's heal ends the reset, not an earlier partition", []history.Op{
			nem(1, "partition", v("a"), ""), nem(2, "reset", v("b"), ""), nem(3, "heal", v("b"), ""), nem(5, "heal", v("a"), ""),
		}, []iv{{"partition", "network", 1, 5, false, false}, {"reset", "network", 2, 3, false, false}}},
		{"version 6: a moment is a point that no heal ends", []history.Op{
			history.Header(), {Time: sec(1), Process: -1, Type: history.Info, F: "bitflip", Class: history.ClassOther, Value: v("n1")}, nem(2, "heal", v("n1"), ""),
		}, []iv{{"bitflip", "other", 1, 1, false, true}}},
		{"version 6: a fault kind this reader does not know pairs with the heal it names", []history.Op{
			history.Header(), {Time: sec(1), Process: -1, Type: history.Info, F: "disk-stall", Heal: "disk-resume", Class: history.ClassPause, Value: v("n1")},
			nem(2, "heal", v("n1"), ""), nem(3, "disk-resume", v("n1"), ""),
		}, []iv{{"disk-stall", "pause", 1, 3, false, false}}},
		{"client pause ends by its duration", []history.Op{
			nem(1, "client-pause", v(map[string]any{"duration": "2.5s"}), ""),
		}, []iv{{"client-pause", "client-pause", 1, 3.5, false, false}}},
		{"armed client pause is a point, its resume no fault", []history.Op{
			nem(1, "client-pause", v(map[string]any{"workers": []int{0}, "duration": "2s", "armed": true}), ""),
			nem(2, "client-pause", v(map[string]any{"worker": 0, "duration": "2s"}), ""),
			nem(4, "client-resume", v(map[string]any{"worker": 0, "duration": "2s"}), ""),
		}, []iv{{"client-pause", "client-pause", 1, 1, false, true}, {"client-pause", "client-pause", 2, 4, false, false}}},
		{"failed fault is a point", []history.Op{
			nem(1, "clock-bump", v("n1"), "clock skew unavailable for etcd"),
		}, []iv{{"clock-bump", "clock", 1, 1, false, true}}},
		{"version 4: a fault that failed is a point", []history.Op{
			history.Header(), failed(nem(1, "clock-bump", v("n1"), "etcd is a Go binary")),
		}, []iv{{"clock-bump", "clock", 1, 1, false, true}}},
		{"version 4: a fault that took effect in part is in force", []history.Op{
			history.Header(), nem(1, "kill", v("n1,n2"), "cannot kill n2"), nem(3, "start", v("n1,n2"), ""),
		}, []iv{{"kill", "kill", 1, 3, false, false}}},
		{"version 4: a heal that failed leaves its fault in force", []history.Op{
			history.Header(), nem(1, "kill", v("n1"), ""), failed(nem(3, "start", v("n1"), "address in use")),
		}, []iv{{"kill", "kill", 1, 10, true, false}}},
		{"invoke gives the start", []history.Op{
			{Time: sec(0.5), Process: -1, Type: history.Invoke, F: "partition"}, nem(1, "partition", v("a"), ""), nem(2, "heal", v("a"), ""),
		}, []iv{{"partition", "network", 0.5, 2, false, false}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { checkBuildNemesis(t, tc.ops, tc.want) })
	}
}

func TestCompactRoundTrip(t *testing.T) {
	h := invalidHistory()
	tl := buildTimeline(h)
	c := tl.compact(map[int]bool{1: true, 9: true})
	var start int64
	idx := 0
	for k := range c.S {
		start += c.S[k]
		idx += c.I[k]
		s := tl.Spans[k]
		if start != us(s.Start) || start+c.D[k] != us(s.End) || idx != s.I {
			t.Fatalf("span %d decodes to start %d dur %d i %d, want %s", k, start, c.D[k], idx, describeSpan(s))
		}
		if c.C[k] != s.Row*64+int(s.Kind)*4+int(s.Out) {
			t.Fatalf("span %d code %d", k, c.C[k])
		}
		if (c.J[k] == 0) != (s.J < 0) || (s.J >= 0 && idx+c.J[k] != s.J) {
			t.Fatalf("span %d j %d, want %d", k, c.J[k], s.J)
		}
	}
	namedOps := map[int]bool{}
	for _, k := range c.Named {
		namedOps[tl.Spans[k].I] = true
		namedOps[tl.Spans[k].J] = true
	}
	if !namedOps[1] || !namedOps[9] {
		t.Errorf("named spans %v cover ops %v, want 1 and 9", c.Named, namedOps)
	}
	if len(c.Nemesis) != 3 {
		t.Errorf("nemesis = %+v, want partition, clock-bump, client-pause", c.Nemesis)
	}
}

// wop is a worker op of process p (worker p) on key k.
func wop(at float64, p int, typ history.Type, f string, set ...func(*history.Op)) history.Op {
	op := history.Op{Time: sec(at), Process: p, Client: p, Type: typ, F: f, Key: "k"}
	for _, s := range set {
		s(&op)
	}
	return op
}

func withUntil(at float64) func(*history.Op) { return func(o *history.Op) { o.Until = sec(at) } }
func withTTL(d float64) func(*history.Op)    { return func(o *history.Op) { o.TTL = sec(d) } }
func withApplied(at float64) func(*history.Op) {
	return func(o *history.Op) { o.Applied = sec(at) }
}

func indexed(ops []history.Op) history.History {
	for i := range ops {
		ops[i].Index = i
	}
	return ops
}

// assertHoldsAreBeliefs checks that the hold spans of tl are exactly the
// beliefs checker.Analyze finds in h: one per grant, on its process's row,
// over [Start, End) (to the end of the timeline, marked open, for a belief
// that nothing ends), from the grant's ok to the op that ended the belief,
// with the until in force.
func assertHoldsAreBeliefs(t *testing.T, h history.History, tl timeline) {
	t.Helper()
	facts := checker.Analyze(h)
	holds := map[int]span{}
	for _, s := range findSpans(tl, kindHold) {
		if _, dup := holds[s.I]; dup {
			t.Errorf("two holds open at op %d", s.I)
		}
		holds[s.I] = s
	}
	if len(holds) != len(facts.Beliefs) {
		t.Errorf("%d holds drawn, the checker has %d beliefs", len(holds), len(facts.Beliefs))
	}
	for _, b := range facts.Beliefs {
		g := facts.Grants[b.Grant]
		s, ok := holds[h[g.OK].Index]
		if !ok {
			t.Errorf("belief of the grant at op %d is not drawn", h[g.OK].Index)
			continue
		}
		wantEnd, wantOut, wantJ := b.End, outOK, -1
		if b.End == checker.Forever {
			wantEnd, wantOut = tl.End, outOpen
		}
		if b.EndOp >= 0 {
			wantJ = h[b.EndOp].Index
		}
		if s.Start != b.Start || s.End != wantEnd || s.Out != wantOut || s.J != wantJ || s.Mark != b.Until || s.Key != g.Key || s.Token != g.Token {
			t.Errorf("hold %s out %d until %v, the checker's belief is [%v, %v) end op %d reason %d until %v",
				describeSpan(s), s.Out, s.Mark, b.Start, b.End, b.EndOp, b.Reason, b.Until)
		}
		if !slices.Contains(tl.Rows[s.Row].Processes, g.Process) {
			t.Errorf("hold %s drawn on row %d (%v), not on process %d's", describeSpan(s), s.Row, tl.Rows[s.Row].Processes, g.Process)
		}
		if b.End != checker.Forever && b.End > tl.End {
			t.Errorf("the timeline ends at %v, before the belief's end %v", tl.End, b.End)
		}
	}
}

// TestTimelineDrawsTheCheckersBeliefs: the picture can never disagree with
// the verdict. Every hold drawn is a checker.Belief, on hand-written
// histories and on the checker's fixtures; the header op draws no fault.
func TestTimelineDrawsTheCheckersBeliefs(t *testing.T) {
	type hold = wantHold
	tests := []beliefsCase{
		{name: "open belief without until runs to the end of the timeline", ops: []history.Op{
			wop(1.0, 0, history.Invoke, "acquire", withTTL(5)), wop(1.1, 0, history.OK, "acquire"),
			wop(2.0, 1, history.Invoke, "read"), wop(3.0, 1, history.OK, "read"),
		}, holds: []hold{{1.1, 3.0, -1, 0, true}}, end: 3.0},
		{name: "open belief with until is drawn to its until, not cut at the last op", fixture: "open-belief-last-line.jsonl",
			holds: []hold{{1.0, 5.85, -1, 5.85, false}, {2.0, 6.85, -1, 6.85, false}}, end: 6.85},
		{name: "renew ok with a later until extends the hold to it", ops: []history.Op{
			wop(1.0, 0, history.Invoke, "acquire", withTTL(1)), wop(1.1, 0, history.OK, "acquire", withUntil(2.0)),
			wop(1.5, 0, history.Invoke, "renew", withTTL(3)), wop(1.6, 0, history.OK, "renew", withUntil(4.0)),
			wop(5.0, 0, history.Invoke, "release"), wop(5.1, 0, history.OK, "release"),
		}, holds: []hold{{1.1, 4.0, -1, 4.0, false}}},
		{name: "renewed hold ends at the release before the new until", ops: []history.Op{
			wop(1.0, 0, history.Invoke, "acquire", withTTL(1)), wop(1.1, 0, history.OK, "acquire", withUntil(2.0)),
			wop(1.5, 0, history.Invoke, "renew", withTTL(3)), wop(1.6, 0, history.OK, "renew", withUntil(4.0)),
			wop(3.0, 0, history.Invoke, "release"), wop(3.1, 0, history.OK, "release"),
		}, holds: []hold{{1.1, 3.0, 4, 4.0, false}}},
		{name: "a renewal back after the until does not revive the hold", ops: []history.Op{
			wop(1.0, 0, history.Invoke, "acquire", withTTL(1)), wop(1.1, 0, history.OK, "acquire", withUntil(2.0)),
			wop(1.9, 0, history.Invoke, "renew", withTTL(3)), wop(2.5, 0, history.OK, "renew", withUntil(4.0)),
			wop(5.0, 0, history.Invoke, "release"), wop(5.1, 0, history.OK, "release"),
		}, holds: []hold{{1.1, 2.0, -1, 2.0, false}}},
		{name: "renewed-lease-early-grant fixture", fixture: "renewed-lease-early-grant.jsonl",
			holds: []hold{{1.1, 4.48, -1, 4.48, false}, {3.5, 4.98, -1, 4.98, false}}},
		{name: "a crash, a lease-lost and a re-acquisition end beliefs", ops: []history.Op{
			wop(1.0, 0, history.Invoke, "acquire"), wop(1.1, 0, history.OK, "acquire"),
			wop(1.5, 0, history.Invoke, "acquire"), wop(1.6, 0, history.OK, "acquire"),
			wop(2.0, 0, history.Invoke, "lease-lost"), wop(2.0, 0, history.OK, "lease-lost"),
			wop(3.0, 0, history.Invoke, "acquire"), wop(3.1, 0, history.OK, "acquire"),
			wop(3.5, 0, history.Invoke, "write"), wop(4.0, 0, history.Info, "write"),
		}, holds: []hold{{1.1, 1.6, 3, 0, false}, {1.6, 2.0, 4, 0, false}, {3.1, 4.0, 9, 0, false}}},
		{name: "the header op draws nothing in the nemesis lane", ops: []history.Op{
			history.Header(),
			wop(1.0, 0, history.Invoke, "acquire", withTTL(5)), wop(1.1, 0, history.OK, "acquire", withUntil(6)),
			wop(2.0, 0, history.Invoke, "release"), wop(2.1, 0, history.OK, "release"),
		}, holds: []hold{{1.1, 2.0, 3, 6, false}}, end: 2.1, nemesis: []string{}},
		{name: "the header op beside a fault", ops: []history.Op{
			history.Header(),
			declared(history.Op{Time: sec(0.5), Process: -1, Type: history.Info, F: "partition", Value: history.JSONValue("a")}),
			wop(1.0, 0, history.Invoke, "acquire", withTTL(5)), wop(1.1, 0, history.OK, "acquire"),
			{Time: sec(1.5), Process: -1, Type: history.Info, F: "heal", Value: history.JSONValue("a")},
		}, holds: []hold{{1.1, 1.5, -1, 0, true}}, nemesis: []string{"partition"}},
		{name: "guarded-late-reply-read-proves-order fixture", fixture: "guarded-late-reply-read-proves-order.jsonl",
			holds: []hold{{1.0, 5.85, -1, 5.85, false}, {7.0, 7.7, 14, 11.85, false}}},
		{name: "valid-handover fixture", fixture: "valid-handover.jsonl"},
		{name: "session-lease-lost-then-other fixture", fixture: "session-lease-lost-then-other.jsonl"},
		{name: "crash-then-new-process fixture", fixture: "crash-then-new-process.jsonl"},
		{name: "the report's own history", ops: invalidHistory()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { checkTimelineBeliefs(t, tc) })
	}
}

// wantHold is a hold a test expects drawn, its times in seconds.
type wantHold struct {
	start, end float64
	j          int
	until      float64
	open       bool
}

// beliefsCase is a history whose timeline TestTimelineDrawsTheCheckersBeliefs
// checks.
type beliefsCase struct {
	name    string
	ops     []history.Op // or:
	fixture string       // a file of checker/testdata
	holds   []wantHold   // nil: only compared with the checker
	end     float64      // the timeline's end, when nonzero
	nemesis []string     // the faults drawn, when not nil
}

// checkTimelineBeliefs checks that the timeline of tc's history draws the
// checker's beliefs, and tc's holds, end and faults where it gives them.
func checkTimelineBeliefs(t *testing.T, tc beliefsCase) {
	t.Helper()
	h := indexed(slices.Clone(tc.ops))
	if tc.fixture != "" {
		var err error
		if h, _, err = history.ReadFile(filepath.Join("..", "checker", "testdata", tc.fixture)); err != nil {
			t.Fatal(err)
		}
	}
	if err := history.Validate(h); err != nil {
		t.Fatalf("not well-formed: %v", err)
	}
	tl := buildTimeline(h)
	assertHoldsAreBeliefs(t, h, tl)
	if tc.holds != nil {
		got := findSpans(tl, kindHold)
		if len(got) != len(tc.holds) {
			t.Fatalf("holds = %v, want %d", got, len(tc.holds))
		}
		for n, w := range tc.holds {
			s := got[n]
			if s.Start != sec(w.start) || s.End != sec(w.end) || s.J != w.j || s.Mark != sec(w.until) || (s.Out == outOpen) != w.open {
				t.Errorf("hold %d = %s until %v open %v, want %+v", n, describeSpan(s), s.Mark, s.Out == outOpen, w)
			}
		}
	}
	if tc.end != 0 && tl.End != sec(tc.end) {
		t.Errorf("timeline ends at %v, want %v", tl.End, sec(tc.end))
	}
	if tc.nemesis != nil {
		faults := []string{}
		for _, iv := range tl.Nemesis {
			faults = append(faults, iv.Fault)
		}
		if !slices.Equal(faults, tc.nemesis) {
			t.Errorf("nemesis = %+v, want %v", tl.Nemesis, tc.nemesis)
		}
		if c := tl.compact(nil); len(c.Nemesis) != len(tc.nemesis) {
			t.Errorf("encoded nemesis = %+v, want %v", c.Nemesis, tc.nemesis)
		}
	}
}

// TestTimelineHoldsMatchCheckerOnEveryFixture compares the holds drawn with
// the checker's beliefs on every well-formed fixture of checker/testdata
// and on a synthetic run with crashes and faults.
func TestTimelineHoldsMatchCheckerOnEveryFixture(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "checker", "testdata", "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			h, _, err := history.ReadFile(f)
			if err != nil || history.Validate(h) != nil {
				t.Skip("not well-formed: the checker gives no verdict")
			}
			assertHoldsAreBeliefs(t, h, buildTimeline(h))
		})
	}
	t.Run("synthetic", func(t *testing.T) {
		h := synth.Generate(rand.New(rand.NewPCG(5, 6)), synth.Options{Workers: 6, Keys: 2, Ops: 20000, TTL: time.Second,
			InfoRate: 0.02, Tokens: true, NemesisEvery: 500})
		assertHoldsAreBeliefs(t, h, buildTimeline(h))
	})
}

// TestTimelineWriteApplyIntervals: a write's mark is the checker's apply
// interval: a point where `applied` is given, the whole call otherwise, from
// the invoke on without end for a write of unknown outcome, none for a
// rejected write whose moment is unknown.
func TestTimelineWriteApplyIntervals(t *testing.T) {
	v := func(n int64) func(*history.Op) { return func(o *history.Op) { o.Value = history.IntValue(n) } }
	h := indexed([]history.Op{
		wop(1.0, 0, history.Invoke, "acquire"), wop(1.1, 0, history.OK, "acquire"),
		wop(1.2, 0, history.Invoke, "write", v(1)), wop(1.5, 0, history.OK, "write", v(1)), // guarded: no applied
		wop(2.0, 0, history.Invoke, "write", v(2)), wop(2.4, 0, history.OK, "write", v(2), withApplied(2.3)),
		wop(3.0, 0, history.Invoke, "write", v(3)), wop(3.2, 0, history.Fail, "write", v(3)),
		wop(4.0, 0, history.Invoke, "write", v(4)), wop(4.2, 0, history.Fail, "write", v(4), withApplied(4.1)),
		wop(5.0, 0, history.Invoke, "write", v(5)), wop(5.5, 0, history.Info, "write"),
		wop(6.0, 1, history.Invoke, "write", v(6)), // never completes
		wop(7.0, 2, history.Invoke, "read"), wop(7.5, 2, history.OK, "read", v(1)),
	})
	if err := history.Validate(h); err != nil {
		t.Fatal(err)
	}
	tl := buildTimeline(h)
	type apply struct {
		applies bool
		lo, hi  time.Duration
	}
	want := []apply{
		{true, sec(1.2), sec(1.5)},
		{true, sec(2.3), sec(2.3)},
		{false, 0, 0},
		{true, sec(4.1), sec(4.1)},
		{true, sec(5.0), checker.Forever},
		{true, sec(6.0), checker.Forever},
	}
	writes := findSpans(tl, kindWrite)
	if len(writes) != len(want) {
		t.Fatalf("writes = %v, want %d", writes, len(want))
	}
	for n, w := range want {
		s := writes[n]
		if s.Applies != w.applies || (w.applies && (s.Mark != w.lo || s.MarkEnd != w.hi)) {
			t.Errorf("write %d = %s apply %v %v..%v, want %+v", n, describeSpan(s), s.Applies, s.Mark, s.MarkEnd, w)
		}
	}
	// The encoding report.js reads: span, offset from its start, length
	// (-1: no end).
	c := tl.compact(nil)
	k := 0
	var got [][3]int64
	for q := range c.ApplySpan {
		k += c.ApplySpan[q]
		if tl.Spans[k].Kind != kindWrite {
			t.Fatalf("apply entry %d on span %s", q, describeSpan(tl.Spans[k]))
		}
		got = append(got, [3]int64{us(tl.Spans[k].Start), c.ApplyLo[q], c.ApplyLen[q]})
	}
	wantC := [][3]int64{{us(sec(1.2)), 0, us(sec(0.3))}, {us(sec(2.0)), us(sec(0.3)), 0}, {us(sec(4.0)), us(sec(4.1)) - us(sec(4.0)), 0},
		{us(sec(5.0)), 0, -1}, {us(sec(6.0)), 0, -1}}
	if !slices.Equal(got, wantC) {
		t.Errorf("apply columns = %v, want %v", got, wantC)
	}
	if len(c.MarkSpan) != 0 {
		t.Errorf("marks = %v: writes carry no until, and no acquire here has one", c.MarkSpan)
	}
}
