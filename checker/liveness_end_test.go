package checker

import (
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// TestEndRecordCountsPendingWaits checks that a history's end record says
// how long the acquires still pending at its end waited: four waiters
// invoked before the last fault's settling, with nothing recorded after it
// but the end record, asked in vain until it (stuck); without the end
// record the history ends too soon after the last fault to judge.
func TestEndRecordCountsPendingWaits(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	h := history.History{history.Header()}
	add := func(op history.Op) {
		op.Index = len(h)
		h = append(h, op)
	}
	// Worker 0 takes the lock with a 500 ms session lease and crashes,
	// keeping its client (its session, and the lock, live on).
	add(history.Op{Time: ms(10), Process: 0, Client: 0, Type: history.Invoke, F: history.FAcquire, Key: "k", TTL: ms(500)})
	add(history.Op{Time: ms(20), Process: 0, Client: 0, Type: history.OK, F: history.FAcquire, Key: "k", Lease: ms(500), Session: true})
	add(history.Op{Time: ms(30), Process: 0, Client: 0, Type: history.Invoke, F: history.FRelease, Key: "k"})
	add(history.Op{Time: ms(40), Process: 0, Client: 0, Type: history.Info, F: history.FRelease, Key: "k", Kept: true, Error: "connection reset"})
	add(history.Op{Time: ms(50), Process: -1, Type: history.Info, F: "reset"})
	add(history.Op{Time: ms(100), Process: -1, Type: history.Info, F: "heal"})
	for w := 1; w <= 4; w++ {
		add(history.Op{Time: ms(200 + w), Process: w, Client: w, Type: history.Invoke, F: history.FAcquire, Key: "k", TTL: ms(500)})
	}
	without := Liveness(h, LivenessOptions{})
	if without.Has(Stuck) {
		t.Fatalf("without the end record: %+v, want not stuck (the history ends 104 ms after the waits began)", without)
	}
	add(history.EndOp())
	h[len(h)-1].Time = ms(5000)
	with := Liveness(h, LivenessOptions{})
	if !with.Has(Stuck) {
		t.Fatalf("with the end record at 5s: %+v, want stuck (four workers waited in vain for 4.8 s)", with)
	}
}
