package history

import (
	"io"
	"runtime"
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

// BenchmarkRecord1M records 1M ops through a Recorder streaming to a
// Writer, and reports the heap still in use once they are recorded (after a
// collection): what a long run's recorder holds.
func BenchmarkRecord1M(b *testing.B) {
	for b.Loop() {
		w := NewWriter(io.Discard)
		rec := NewRecorder(w)
		for i := 0; i < 1_000_000; i++ {
			rec.Record(Op{Process: i % 16, Client: i % 16, Type: OK, F: FWrite, Key: "k", Value: IntValue(int64(i))})
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.HeapInuse)/1e6, "MB-in-use")
		if rec.Len() != 1_000_000 {
			b.Fatal(rec.Len())
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
