package reports

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

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
		{sec(2.20), sec(5.20), 9, 19, 2, sec(5.20)},   // its belief ends at until 5.2s
		{sec(10.10), sec(11.0), 24, 25, 1, sec(15.1)}, // p3, on worker 0's second row
	}
	if len(holds) != len(want) {
		t.Fatalf("holds = %d, want %d: %v", len(holds), len(want), holds)
	}
	for n, w := range want {
		s := holds[n]
		if s.Start != w.start || s.End != w.end || s.I != w.i || s.J != w.j || s.Row != w.row || s.Mark != w.until {
			t.Errorf("hold %d = %s row %d until %v, want %+v", n, describeSpan(s), s.Row, s.Mark, w)
		}
	}
	past := findSpans(tl, kindPastHold)
	if len(past) != 1 || past[0].Start != sec(5.20) || past[0].End != sec(6.00) {
		t.Errorf("past-until spans = %v, want one from 5.2s to 6s", past)
	}
	maybe := findSpans(tl, kindMaybe)
	if len(maybe) != 1 || maybe[0].Start != sec(5.60) || maybe[0].End != sec(9.60) || maybe[0].Row != 0 {
		t.Errorf("maybe-held spans = %v, want one from 5.6s to 9.6s (invoke 4.6s + ttl 5s) on row 0", maybe)
	}
	writes := findSpans(tl, kindWrite)
	if len(writes) != 2 || writes[0].Mark != sec(1.25) || writes[1].Mark != sec(2.35) {
		t.Errorf("writes = %v, want two with applied marks 1.25s and 2.35s", writes)
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

func TestBuildNemesis(t *testing.T) {
	v := func(x any) json.RawMessage { return history.JSONValue(x) }
	nem := func(at float64, f string, val json.RawMessage, errText string) history.Op {
		return history.Op{Time: sec(at), Process: -1, Type: history.Info, F: f, Value: val, Error: errText}
	}
	type iv struct {
		fault      string
		class      string
		start, end float64
		open, pt   bool
	}
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
		}, []iv{{"partition", "network", 1, 10, true, false}, {"failover", "failover", 9, 9, false, true}}},
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
		{"invoke gives the start", []history.Op{
			{Time: sec(0.5), Process: -1, Type: history.Invoke, F: "partition"}, nem(1, "partition", v("a"), ""), nem(2, "heal", v("a"), ""),
		}, []iv{{"partition", "network", 0.5, 2, false, false}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for i := range tc.ops {
				tc.ops[i].Index = i
			}
			got := buildNemesis(tc.ops, sec(10))
			if len(got) != len(tc.want) {
				t.Fatalf("got %d intervals %+v, want %d", len(got), got, len(tc.want))
			}
			for i, w := range tc.want {
				g := got[i]
				if g.Fault != w.fault || g.Class != w.class || g.Start != sec(w.start) || g.End != sec(w.end) || g.Open != w.open || g.Point != w.pt {
					t.Errorf("interval %d = %+v, want %+v", i, g, w)
				}
			}
		})
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
