package checker

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
	"github.com/jepsen-lite/jepsen-lite/nemesis"
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

// waits adds acquires by processes 1 to 3, invoked at ms, still waiting
// at the end of the history.
func (b *livenessHistory) waits(ms int) *livenessHistory {
	for p := 1; p <= 3; p++ {
		b.add(ms, history.Op{Process: p, Client: p % 4, Type: history.Invoke, F: history.FAcquire, Key: "k", TTL: time.Second})
	}
	return b
}

// header adds the header op of a format version 3 history, whose nemesis
// records availability.
func (b *livenessHistory) header() *livenessHistory { return b.add(0, history.Header()) }

// avail adds an availability record: nodes server nodes, down the ones down.
func (b *livenessHistory) avail(ms, nodes int, down ...string) *livenessHistory {
	return b.add(ms, history.AvailabilityOp(history.Availability{Nodes: nodes, Down: down}))
}

// fault adds a nemesis op f; a fault kind's op carries its class and heal
// (nemesis.Facts), as the nemesis records it from format version 6 on.
func (b *livenessHistory) fault(ms int, f string) *livenessHistory {
	op := history.Op{Process: history.NemesisProcess, Type: history.Info, F: f}
	if k, ok := nemesis.FactsOf(f); ok {
		op.Class, op.Heal = k.Class, k.Heal
	}
	return b.add(ms, op)
}

// failed adds a nemesis op f that did not take effect: a fail op with its
// error (format version 4).
func (b *livenessHistory) failed(ms int, f string) *livenessHistory {
	op := history.Op{Process: history.NemesisProcess, Type: history.Fail, F: f, Error: "could not"}
	if k, ok := nemesis.FactsOf(f); ok {
		op.Class = k.Class
	}
	return b.add(ms, op)
}

// noExpiry, oneSecond and bothKinds shorten livenessCases: a lease that
// never expires, one of a second, and the two liveness kinds of a lock.
var (
	noExpiry  = history.NoLease
	oneSecond = time.Second
	bothKinds = []string{Stuck, Unavailable}
)

// livenessCase is a history TestLiveness judges, with the verdict, the
// anomaly kinds and a part of the note it must get.
type livenessCase struct {
	name    string
	h       *livenessHistory
	verdict Verdict
	kinds   []string // exactly the anomaly kinds, sorted
	note    string   // a part of the note, when there must be one
}

// livenessCases are TestLiveness's cases.
var livenessCases = []livenessCase{
	{"a lock that never expires, its holder crashed: stuck, and unavailable with every node up",
		new(livenessHistory).grant(0, 0, noExpiry, false).op(10, 0, history.FWrite, history.Info).fails(100, 2500),
		Invalid, bothKinds, ""},
	{"grants until the end: not stuck, but unavailable between them",
		new(livenessHistory).grant(0, 0, noExpiry, false).op(10, 0, history.FRelease, history.OK).fails(100, 1000).grant(1500, 1, noExpiry, false).op(1510, 1, history.FRelease, history.OK).fails(1600, 2300).grant(2400, 2, noExpiry, false).op(2410, 2, history.FRelease, history.OK),
		Invalid, []string{Unavailable}, ""},
	{"grants less than a second apart: neither",
		new(livenessHistory).grant(0, 0, noExpiry, false).op(10, 0, history.FRelease, history.OK).fails(100, 900).grant(1000, 1, noExpiry, false).op(1010, 1, history.FRelease, history.OK).fails(1100, 1900).grant(2000, 2, noExpiry, false).op(2010, 2, history.FRelease, history.OK),
		Valid, nil, ""},
	{"a live holder of a lock that never expires: held, not stuck",
		new(livenessHistory).grant(0, 0, noExpiry, false).fails(100, 2500),
		Valid, nil, "held at the end"},
	{"a live session holder: held, not stuck",
		new(livenessHistory).grant(0, 0, 2*oneSecond, true).fails(100, 2500),
		Valid, nil, "held at the end"},
	{"a ttl lock whose holder crashed, refused long after its lease: stuck",
		new(livenessHistory).grant(0, 0, oneSecond, false).op(10, 0, history.FWrite, history.Info).fails(100, 3500),
		Invalid, bothKinds, ""},
	{"a ttl lock refused only within its lease and a little after: not stuck",
		new(livenessHistory).grant(0, 0, oneSecond, false).op(10, 0, history.FWrite, history.Info).fails(100, 1800),
		Valid, nil, ""},
	{"a crashed session's lease counts from the crash",
		new(livenessHistory).grant(0, 0, 2*oneSecond, true).fails(100, 900).op(1000, 0, history.FWrite, history.Info).fails(1100, 3500),
		Valid, nil, ""},
	{"a crashed session refused long after its lease: stuck",
		new(livenessHistory).grant(0, 0, 2*oneSecond, true).fails(100, 900).op(1000, 0, history.FWrite, history.Info).fails(1100, 4500),
		Invalid, bothKinds, ""},
	{"a crashed session holder of a lock without a lease frees it at the crash",
		new(livenessHistory).grant(0, 0, noExpiry, true).op(10, 0, history.FWrite, history.Info).fails(100, 2000),
		Invalid, bothKinds, ""},
	{"an acquire of unknown outcome may hold the lock for its ttl",
		new(livenessHistory).grant(0, 0, oneSecond, false).op(10, 0, history.FRelease, history.OK).op(100, 5, history.FAcquire, history.Info).fails(200, 1600),
		Valid, nil, ""},
	{"the last fault and the longest lease leave too little of the run, and the history does not say which nodes were up",
		new(livenessHistory).grant(0, 0, oneSecond, false).op(10, 0, history.FWrite, history.Info).fails(100, 800).fault(900, "heal").fails(1000, 2800),
		Unknown, nil, "not judged"},
	{"too few attempts",
		new(livenessHistory).grant(0, 0, noExpiry, false).op(10, 0, history.FWrite, history.Info).op(100, 1, history.FAcquire, history.Fail).op(2000, 2, history.FAcquire, history.Fail),
		Valid, nil, ""},
	{"a live session holder superseded by later grants does not hold it",
		new(livenessHistory).grant(0, 0, 2*oneSecond, true).grant(3000, 1, noExpiry, false).op(3010, 1, history.FRelease, history.OK).fails(3100, 5000),
		Invalid, bothKinds, ""},
	{"no grant at all",
		new(livenessHistory).fails(0, 2000),
		Invalid, bothKinds, "no acquire succeeded"},
	{"workers still waiting at the end behind a crashed holder that never frees it: stuck",
		new(livenessHistory).grant(0, 0, noExpiry, false).op(10, 0, history.FWrite, history.Info).waits(100).op(2500, 4, history.FRead, history.OK),
		Invalid, []string{Stuck}, ""},
	{"workers waiting for less than the window at the end: not stuck",
		new(livenessHistory).grant(0, 0, noExpiry, false).op(10, 0, history.FWrite, history.Info).waits(1800).op(2500, 4, history.FRead, history.OK),
		Valid, nil, ""},
	{"workers waiting behind a live holder: held, not stuck",
		new(livenessHistory).grant(0, 0, noExpiry, false).waits(100).op(2500, 0, history.FRead, history.OK),
		Valid, nil, "held at the end"},
	{"a kept crash ends the holder's process: its session lives on, but nobody rightly holds the lock",
		new(livenessHistory).grant(0, 0, 2*oneSecond, true).add(10, history.Op{Process: 0, Client: 0, Type: history.Invoke, F: history.FRelease, Key: "k"}).
			add(15, history.Op{Process: 0, Client: 0, Type: history.Info, F: history.FRelease, Key: "k", Kept: true}).fails(100, 3500),
		Invalid, bothKinds, ""},

	// unavailable, with the nemesis's availability records
	{"refused for 3 s with every node up and nobody holding it: unavailable, not stuck",
		new(livenessHistory).header().grant(0, 0, oneSecond, false).op(10, 0, history.FRelease, history.OK).fails(100, 3100).grant(3200, 1, oneSecond, false).op(3210, 1, history.FRelease, history.OK),
		Invalid, []string{Unavailable}, ""},
	{"the same refusals while a worker's clock is skewed: its lease may outlast what was recorded, not judged",
		new(livenessHistory).header().grant(0, 0, oneSecond, false).op(10, 0, history.FRelease, history.OK).fault(50, "client-clock").fails(100, 3100).fault(3150, "client-clock-reset").grant(3200, 1, oneSecond, false).op(3210, 1, history.FRelease, history.OK),
		Valid, nil, ""},
	{"refusals more than the longest lease after the clock was reset are judged again",
		new(livenessHistory).header().grant(0, 0, oneSecond, false).op(10, 0, history.FRelease, history.OK).fault(20, "clock-bump").fault(40, "clock-reset").fails(100, 3100).grant(3200, 1, oneSecond, false).op(3210, 1, history.FRelease, history.OK),
		Invalid, []string{Unavailable}, ""},
	{"Redlock with 3 of 5 masters killed during the refusals: no majority, nothing to judge there",
		new(livenessHistory).header().grant(0, 0, oneSecond, false).op(10, 0, history.FRelease, history.OK).avail(50, 5, "n1", "n2", "n3").fault(51, "kill").fails(100, 3100).avail(3150, 5).fault(3151, "start").grant(3300, 1, oneSecond, false).op(3310, 1, history.FRelease, history.OK),
		Unknown, nil, ""},
	{"2 of 5 masters killed: a majority is up, so the refusals count",
		new(livenessHistory).header().grant(0, 0, oneSecond, false).op(10, 0, history.FRelease, history.OK).avail(50, 5, "n1", "n2").fault(51, "kill").fails(100, 3100).avail(3150, 5).fault(3151, "start").grant(3300, 1, oneSecond, false).op(3310, 1, history.FRelease, history.OK),
		Invalid, []string{Unavailable}, "not judged for stuck"},
	{"refusals excused by a live holder's lease",
		new(livenessHistory).header().grant(0, 0, 5*oneSecond, false).fails(100, 3100).op(3200, 0, history.FRelease, history.OK).grant(3300, 1, oneSecond, false).op(3310, 1, history.FRelease, history.OK),
		Valid, nil, ""},
	{"refused for less than the bound",
		new(livenessHistory).header().grant(0, 0, oneSecond, false).op(10, 0, history.FRelease, history.OK).fails(100, 900).grant(950, 1, oneSecond, false).op(960, 1, history.FRelease, history.OK).fails(1000, 1900).grant(1900, 2, oneSecond, false).op(1910, 2, history.FRelease, history.OK),
		Valid, nil, ""},
	// A fault in force at the end (here with the majority down) leaves
	// the refusals after it unexplained either way: not judged for
	// stuck (this case was stuck when "the last fault plus the longest
	// lease" was taken as the end of the faults' effects).
	{"a stuck tail with a fault in force at the end is not judged",
		new(livenessHistory).header().grant(0, 0, noExpiry, false).op(10, 0, history.FWrite, history.Info).avail(20, 3, "n1", "n2").fault(21, "partition").fails(100, 2500),
		Unknown, nil, "still in force at the end"},
	{"a restart that failed leaves the kill in force: not judged for stuck",
		new(livenessHistory).header().grant(0, 0, noExpiry, false).op(10, 0, history.FWrite, history.Info).avail(20, 3, "n1", "n2").fault(21, "kill").failed(50, "start").fails(100, 2500),
		Unknown, nil, "still in force at the end"},
	{"a kill that failed was never in force, and the last fault or heal that took effect is the restart of another",
		new(livenessHistory).header().grant(0, 0, noExpiry, false).op(10, 0, history.FWrite, history.Info).avail(20, 3, "n1").fault(21, "kill").fault(30, "start").avail(31, 3).failed(50, "kill").fails(100, 2500),
		Invalid, bothKinds, ""},
	{"a Jepsen history's stop ends every fault in force",
		new(livenessHistory).grant(0, 0, noExpiry, false).op(10, 0, history.FWrite, history.Info).fault(21, "partition").fault(30, JepsenStop).fails(100, 2500),
		Invalid, []string{Stuck}, "unavailable judged only before its first fault"},
	{"heal-all ends every fault in force",
		new(livenessHistory).header().grant(0, 0, noExpiry, false).op(10, 0, history.FWrite, history.Info).fault(21, "latency").fault(22, "clock-bump").fault(30, history.FHealAll).fails(100, 2500),
		Invalid, bothKinds, ""},
	{"a clock fault in force excuses refusals within the longest lease after its heal",
		new(livenessHistory).header().grant(0, 0, oneSecond, false).op(10, 0, history.FRelease, history.OK).fault(21, "clock-bump").fails(100, 1400).fault(1450, "clock-reset").fails(1500, 2400).grant(2500, 1, oneSecond, false).op(2510, 1, history.FRelease, history.OK),
		Valid, nil, ""},
	{"a kept crash ends the rightful hold of a lock without a lease, although its session lives on",
		new(livenessHistory).grant(0, 0, noExpiry, true).add(10, history.Op{Process: 0, Client: 0, Type: history.Invoke, F: history.FWrite, Key: "k"}).add(15, history.Op{Process: 0, Client: 0, Type: history.Info, F: history.FWrite, Key: "k", Kept: true}).fails(100, 2000),
		Invalid, bothKinds, ""},
	{"waiters still pending at the end, invoked before the release: stuck",
		new(livenessHistory).grant(0, 0, noExpiry, false).waits(50).op(100, 0, history.FRelease, history.OK).op(2000, 0, history.FRead, history.OK),
		Invalid, []string{Stuck}, ""},
	{"a stuck tail after the partition healed, is stuck, and unavailable once the majority is back",
		new(livenessHistory).header().grant(0, 0, noExpiry, false).op(10, 0, history.FWrite, history.Info).avail(20, 3, "n1", "n2").fault(21, "partition").fault(50, "heal").avail(51, 3).fails(100, 2500),
		Invalid, []string{Stuck, Unavailable}, ""},
	{"a history before version 3 with faults: unavailable judged only before its first fault",
		new(livenessHistory).grant(0, 0, oneSecond, false).op(10, 0, history.FRelease, history.OK).fails(100, 900).fault(950, "kill").fails(1000, 3000).fault(3050, "start").grant(3100, 1, oneSecond, false).op(3110, 1, history.FRelease, history.OK),
		Unknown, nil, "does not record which nodes were up"},
	{"a record that cannot be read: nothing known until the next",
		new(livenessHistory).header().add(50, history.Op{Process: history.NemesisProcess, Type: history.Info, F: history.FAvailability, Value: []byte(`{"down":["n1"]}`)}).fails(100, 3000).avail(3050, 3).grant(3100, 1, oneSecond, false).op(3110, 1, history.FRelease, history.OK),
		Valid, nil, ""},
}

func TestLiveness(t *testing.T) {
	tests := livenessCases
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := history.Validate(tt.h.h); err != nil {
				t.Fatalf("test history is malformed: %v", err)
			}
			res := Liveness(tt.h.h, LivenessOptions{})
			var kinds []string
			for _, a := range res.Anomalies {
				if !slices.Contains(kinds, a.Kind) {
					kinds = append(kinds, a.Kind)
				}
			}
			slices.Sort(kinds)
			if res.Verdict != tt.verdict || !slices.Equal(kinds, tt.kinds) {
				t.Fatalf("verdict %s %v, want %s %v (note %q, anomalies %+v)", res.Verdict, kinds, tt.verdict, tt.kinds, res.Note, res.Anomalies)
			}
			if !strings.Contains(res.Note, tt.note) {
				t.Fatalf("note %q does not say %q", res.Note, tt.note)
			}
			for _, a := range res.Anomalies {
				if a.Key != "k" || len(a.Ops) < 4 || a.Message == "" || a.Window == nil || a.Window.End-a.Window.Start < time.Second {
					t.Fatalf("anomaly %+v: want k with its ops, a sentence and a window of at least 1s", a)
				}
				if !strings.HasPrefix(a.Message, "k "+a.Kind+" from ") {
					t.Fatalf("sentence %q does not begin with what it is", a.Message)
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

// TestUnavailableWindow checks the window and the ops an unavailable anomaly
// names: 3 of 5 nodes killed at 1 s and started at 2 s, a longest lease of
// 2 s, refusals from 0.2 s to 6.4 s and a grant at 6.5 s: the window begins
// at 4 s (the start plus the longest lease) and ends at the grant's call;
// the ops are the last grant before it and the first and last refused
// acquires inside it.
func TestUnavailableWindow(t *testing.T) {
	b := new(livenessHistory).header().grant(0, 0, 2*time.Second, false).op(10, 0, history.FRelease, history.OK).fails(200, 1000).
		avail(1000, 5, "n1", "n2", "n3").fault(1001, "kill").fails(1100, 2000).avail(2000, 5).fault(2001, "start").fails(2100, 6500).
		grant(6500, 1, 2*time.Second, false).op(6510, 1, history.FRelease, history.OK)
	if err := history.Validate(b.h); err != nil {
		t.Fatal(err)
	}
	res := Liveness(b.h, LivenessOptions{})
	if len(res.Anomalies) != 1 || res.Anomalies[0].Kind != Unavailable {
		t.Fatalf("anomalies %+v, want one unavailable", res.Anomalies)
	}
	a := res.Anomalies[0]
	if want := (Window{Start: 4 * time.Second, End: 6500 * time.Millisecond}); *a.Window != want {
		t.Fatalf("window %+v, want %+v", *a.Window, want)
	}
	if len(a.Ops) != 6 || a.Ops[0] != 1 || a.Ops[1] != 2 {
		t.Fatalf("ops %v, want the grant 1, 2 and the first and last refusals", a.Ops)
	}
	first, last := b.h[a.Ops[2]], b.h[a.Ops[5]]
	if first.Time != 4*time.Second || first.Type != history.Invoke || last.Time != 6405*time.Millisecond || last.Type != history.Fail {
		t.Fatalf("first refusal %+v, last %+v: want the acquire invoked at 4s and the refusal at 6.405s", first, last)
	}
	for _, want := range []string{"k unavailable from 4.000s to 6.500s with all 5 server nodes up", "25 acquires by 3 workers failed", "the last grant before it was worker 0's at 0.005s"} {
		if !strings.Contains(a.Message, want) {
			t.Errorf("sentence %q does not say %q", a.Message, want)
		}
	}
	// A longer bound finds nothing.
	if res := Liveness(b.h, LivenessOptions{UnavailableWindow: 3 * time.Second}); len(res.Anomalies) != 0 {
		t.Fatalf("with a 3s bound: %+v, want none", res.Anomalies)
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

// TestStuckSentenceCountsWaiters checks that a stuck window's sentence says
// how the workers asked: refused, and still waiting at the end.
func TestStuckSentenceCountsWaiters(t *testing.T) {
	b := new(livenessHistory).grant(0, 0, history.NoLease, false).op(10, 0, history.FWrite, history.Info).
		op(100, 5, history.FAcquire, history.Fail).waits(200).op(2500, 4, history.FRead, history.OK)
	res := Liveness(b.h, LivenessOptions{})
	if !res.Has(Stuck) {
		t.Fatalf("not stuck: %+v", res)
	}
	for _, a := range res.Anomalies {
		if a.Kind != Stuck {
			continue
		}
		want := "nobody took it again: 3 workers asked in vain (1 acquire failed and 3 were still waiting at the end)"
		if !strings.Contains(a.Message, want) {
			t.Fatalf("sentence %q does not say %q", a.Message, want)
		}
		for _, inv := range []int{6, 7, 8} { // the waiters' invokes
			if !slices.Contains(a.Ops, inv) {
				t.Fatalf("ops %v do not name the waiting acquire %d", a.Ops, inv)
			}
		}
	}
}

// TestUnavailableSentenceOneNode checks the sentence of a window on a
// one-node cluster.
func TestUnavailableSentenceOneNode(t *testing.T) {
	b := new(livenessHistory).header().avail(0, 1).grant(0, 0, time.Second, false).op(10, 0, history.FRelease, history.OK).
		fails(100, 3100).grant(3200, 1, time.Second, false).op(3210, 1, history.FRelease, history.OK)
	res := Liveness(b.h, LivenessOptions{})
	for _, a := range res.Anomalies {
		if a.Kind == Unavailable {
			if !strings.Contains(a.Message, "with its one server node up:") {
				t.Fatalf("sentence %q does not say its one node was up", a.Message)
			}
			return
		}
	}
	t.Fatalf("no unavailable window: %+v", res)
}
