package history

import (
	"testing"
)

// TestHold checks that an op committed through Hold bears the time from the
// Hold and comes before every op recorded while it was held, and that a
// released Hold records nothing.
func TestHold(t *testing.T) {
	rec := NewRecorder()
	rec.Record(Op{Process: 0, Type: Invoke, F: FAcquire})
	held := rec.Hold()
	recorded := make(chan Op)
	go func() { recorded <- rec.Record(Op{Process: 0, Type: OK, F: FAcquire}) }()
	committed := held.Commit(AvailabilityOp(Availability{Nodes: 1, Down: []string{"n1"}}))
	later := <-recorded
	if committed.Index != 1 || later.Index != 2 || committed.Time > later.Time {
		t.Fatalf("committed %+v, recorded meanwhile %+v: want the committed op first and no later", committed, later)
	}
	rec.Hold().Release()
	if h := rec.History(); len(h) != 3 || Validate(h) != nil {
		t.Fatalf("history after a released hold: %+v (%v)", h, Validate(h))
	}
}
