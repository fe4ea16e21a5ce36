package history

import (
	"slices"
	"testing"
)

func TestAvailabilityRecord(t *testing.T) {
	op := AvailabilityOp(Availability{Nodes: 5, Down: []string{"n1", "n3"}})
	if string(op.Value) != `{"nodes":5,"down":["n1","n3"]}` || op.F != FAvailability || op.Process != NemesisProcess || op.Type != Info {
		t.Fatalf("record %+v (value %s)", op, op.Value)
	}
	if empty := AvailabilityOp(Availability{Nodes: 3}); string(empty.Value) != `{"nodes":3,"down":[]}` {
		t.Fatalf("a record with no node down is %s, want down: []", empty.Value)
	}
	a, ok := AvailabilityOf(op)
	if !ok || a.Nodes != 5 || !slices.Equal(a.Down, []string{"n1", "n3"}) || a.Up() != 3 || !a.Majority() {
		t.Fatalf("AvailabilityOf = %+v, %v", a, ok)
	}
	for _, bad := range []string{`{"down":["n1"]}`, `{"nodes":1,"down":["n1","n2"]}`, `"n1"`, `{"nodes":"5"}`} {
		op := Op{Process: NemesisProcess, Type: Info, F: FAvailability, Value: []byte(bad)}
		if a, ok := AvailabilityOf(op); ok {
			t.Errorf("AvailabilityOf(%s) = %+v, want no record", bad, a)
		}
	}
	if _, ok := AvailabilityOf(Op{Process: 0, F: FAvailability, Value: op.Value}); ok {
		t.Error("a worker op is no availability record")
	}
}

func TestRecordsAreNoFaults(t *testing.T) {
	tests := []struct {
		op     Op
		record bool
	}{
		{Header(), true},
		{AvailabilityOp(Availability{Nodes: 3}), true},
		{Op{Process: NemesisProcess, Type: Info, F: "kill"}, false},
		{Op{Process: NemesisProcess, Type: Info, F: "start"}, false},
		{Op{Process: 1, Type: Invoke, F: FAvailability}, false},
	}
	for _, tt := range tests {
		if got := tt.op.IsRecord(); got != tt.record {
			t.Errorf("%s: IsRecord = %v, want %v", tt.op.F, got, tt.record)
		}
		if tt.record && IsHeal(tt.op.F) {
			t.Errorf("%s: a record is no heal", tt.op.F)
		}
	}
}
