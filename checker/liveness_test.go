package checker

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// livenessHistory builds a history from ops given as times in milliseconds.
type livenessHistory struct{ h history.History }

func (b *livenessHistory) add(ms int, op history.Op) *livenessHistory {
	op.Index = len(b.h)
	op.Time = time.Duration(ms) * time.Millisecond
	b.h = append(b.h, op)
	return b
}

// grant adds an acquire of k by process p (worker p % 4) from ms to ms+5.
func (b *livenessHistory) grant(ms, p int, lease time.Duration, session bool) *livenessHistory {
	b.add(ms, history.Op{Process: p, Client: p % 4, Type: history.Invoke, F: history.FAcquire, Key: "k", TTL: time.Second})
	return b.add(ms+5, history.Op{Process: p, Client: p % 4, Type: history.OK, F: history.FAcquire, Key: "k", Lease: lease, Session: session})
}

// op adds an invoke and its completion of type t.
func (b *livenessHistory) op(ms, p int, f string, t history.Type) *livenessHistory {
	b.add(ms, history.Op{Process: p, Client: p % 4, Type: history.Invoke, F: f, Key: "k", TTL: time.Second})
	return b.add(ms+5, history.Op{Process: p, Client: p % 4, Type: t, F: f, Key: "k"})
}

// fails adds failed acquires by processes 1 to 3 every 100 ms from ms to end.
func (b *livenessHistory) fails(ms, end int) *livenessHistory {
	for t, p := ms, 1; t < end; t, p = t+100, p%3+1 {
		b.op(t, p, history.FAcquire, history.Fail)
	}
	return b
}

func TestLiveness(t *testing.T) {
	never, second := history.NoLease, time.Second
	tests := []struct {
		name    string
		h       *livenessHistory
		verdict Verdict
		note    string // a part of the note, when there must be one
	}{
		{"a lock that never expires, its holder crashed: stuck",
			new(livenessHistory).grant(0, 0, never, false).op(10, 0, history.FWrite, history.Info).fails(100, 2500),
			Invalid, ""},
		{"grants until the end: not stuck",
			new(livenessHistory).grant(0, 0, never, false).op(10, 0, history.FRelease, history.OK).fails(100, 1000).grant(1500, 1, never, false).op(1510, 1, history.FRelease, history.OK).fails(1600, 2300).grant(2400, 2, never, false).op(2410, 2, history.FRelease, history.OK),
			Valid, ""},
		{"a live holder of a lock that never expires: held, not stuck",
			new(livenessHistory).grant(0, 0, never, false).fails(100, 2500),
			Valid, "held at the end"},
		{"a live session holder: held, not stuck",
			new(livenessHistory).grant(0, 0, 2*second, true).fails(100, 2500),
			Valid, "held at the end"},
		{"a ttl lock whose holder crashed, refused long after its lease: stuck",
			new(livenessHistory).grant(0, 0, second, false).op(10, 0, history.FWrite, history.Info).fails(100, 3500),
			Invalid, ""},
		{"a ttl lock refused only within its lease and a little after: not stuck",
			new(livenessHistory).grant(0, 0, second, false).op(10, 0, history.FWrite, history.Info).fails(100, 1800),
			Valid, ""},
		{"a crashed session's lease counts from the crash",
			new(livenessHistory).grant(0, 0, 2*second, true).fails(100, 900).op(1000, 0, history.FWrite, history.Info).fails(1100, 3500),
			Valid, ""},
		{"a crashed session refused long after its lease: stuck",
			new(livenessHistory).grant(0, 0, 2*second, true).fails(100, 900).op(1000, 0, history.FWrite, history.Info).fails(1100, 4500),
			Invalid, ""},
		{"a crashed session holder of a lock without a lease frees it at the crash",
			new(livenessHistory).grant(0, 0, never, true).op(10, 0, history.FWrite, history.Info).fails(100, 2000),
			Invalid, ""},
		{"an acquire of unknown outcome may hold the lock for its ttl",
			new(livenessHistory).grant(0, 0, second, false).op(10, 0, history.FRelease, history.OK).op(100, 5, history.FAcquire, history.Info).fails(200, 1600),
			Valid, ""},
		{"the last fault and the longest lease leave too little of the run",
			new(livenessHistory).grant(0, 0, second, false).op(10, 0, history.FWrite, history.Info).fails(100, 1900).add(2000, history.Op{Process: history.NemesisProcess, Type: history.Info, F: "heal"}).fails(2100, 3500),
			Unknown, "not judged"},
		{"too few attempts",
			new(livenessHistory).grant(0, 0, never, false).op(10, 0, history.FWrite, history.Info).op(100, 1, history.FAcquire, history.Fail).op(2000, 2, history.FAcquire, history.Fail),
			Valid, ""},
		{"a live session holder superseded by later grants does not hold it",
			new(livenessHistory).grant(0, 0, 2*second, true).grant(3000, 1, never, false).op(3010, 1, history.FRelease, history.OK).fails(3100, 5000),
			Invalid, ""},
		{"no grant at all",
			new(livenessHistory).fails(0, 2000),
			Invalid, "no acquire succeeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := history.Validate(tt.h.h); err != nil {
				t.Fatalf("test history is malformed: %v", err)
			}
			res := Liveness(tt.h.h, LivenessOptions{})
			if res.Verdict != tt.verdict {
				t.Fatalf("verdict %s, want %s (note %q, anomalies %+v)", res.Verdict, tt.verdict, res.Note, res.Anomalies)
			}
			if !strings.Contains(res.Note, tt.note) {
				t.Fatalf("note %q does not say %q", res.Note, tt.note)
			}
			for _, a := range res.Anomalies {
				if a.Kind != Stuck || a.Key != "k" || len(a.Ops) < 4 || a.Message == "" {
					t.Fatalf("anomaly %+v: want a stuck k with its ops and a sentence", a)
				}
				for _, i := range a.Ops {
					if i < 0 || i >= len(tt.h.h) {
						t.Fatalf("anomaly names op %d of %d", i, len(tt.h.h))
					}
				}
			}
			grants := 0
			for _, op := range tt.h.h {
				if op.F == history.FAcquire && op.Type == history.OK {
					grants++
				}
			}
			if res.Grants != grants {
				t.Fatalf("grants %d, want %d", res.Grants, grants)
			}
		})
	}
}

// TestCheckWithLiveness checks that the shared-facts path gives the same
// liveness as Liveness, and none for a malformed history.
func TestCheckWithLiveness(t *testing.T) {
	h := new(livenessHistory).grant(0, 0, history.NoLease, false).op(10, 0, history.FWrite, history.Info).fails(100, 2500).h
	results, live := CheckWithLiveness(context.Background(), h, Options{}, LivenessOptions{})
	if Overall(results) != Valid || live == nil || !reflect.DeepEqual(*live, Liveness(h, LivenessOptions{})) {
		t.Fatalf("verdict %s, liveness %+v; want valid and %+v", Overall(results), live, Liveness(h, LivenessOptions{}))
	}
	bad := append(history.History{}, h...)
	bad[2].Process = 7 // a completion without an invoke
	if _, live := CheckWithLiveness(context.Background(), bad, Options{}, LivenessOptions{}); live != nil {
		t.Fatalf("liveness %+v of a malformed history, want none", live)
	}
}
