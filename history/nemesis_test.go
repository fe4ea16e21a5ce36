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
		if tt.record && (tt.op.IsHealOp(5) || tt.op.IsHealOp(FormatVersion)) {
			t.Errorf("%s: a record is no heal", tt.op.F)
		}
	}
}

// TestFaultOf reads a fault op's heal and class: from version 6 on from the
// op itself, so a fault kind no earlier version knew is read as it says, and
// before that by its name, the facts of those versions.
func TestFaultOf(t *testing.T) {
	tests := []struct {
		name      string
		op        Op
		version   int
		heal      string
		class     FaultClass
		isHeal    bool
		healsWith string // a heal f that ends it
	}{
		{"version 6 fault", Op{Process: NemesisProcess, Type: Info, F: "disk-stall", Heal: "disk-resume", Class: ClassPause}, 6, "disk-resume", ClassPause, false, "disk-resume"},
		{"version 6 moment", Op{Process: NemesisProcess, Type: Info, F: "bitflip", Class: ClassOther}, 6, "", ClassOther, false, ""},
		{"version 6 heal", Op{Process: NemesisProcess, Type: Info, F: "disk-resume"}, 6, "", ClassOther, true, ""},
		{"version 5 reset by its name", Op{Process: NemesisProcess, Type: Info, F: "reset"}, 5, "heal", ClassNetwork, false, "heal"},
		{"version 5 kill by its name", Op{Process: NemesisProcess, Type: Info, F: "kill"}, 5, "start", ClassKill, false, "start"},
		{"version 5 clock-strobe by its name", Op{Process: NemesisProcess, Type: Info, F: "clock-strobe"}, 5, "clock-reset", ClassClock, false, "clock-reset"},
		{"version 5 sentinel-failover by its name", Op{Process: NemesisProcess, Type: Info, F: "sentinel-failover"}, 5, "heal", ClassFailover, false, "heal"},
		{"version 5 heal by its name", Op{Process: NemesisProcess, Type: Info, F: "clock-reset"}, 5, "heal", ClassOther, true, ""},
		{"version 1 Jepsen crash", Op{Process: NemesisProcess, Type: Info, F: "crash"}, 1, "heal", ClassKill, false, "heal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.op.IsHealOp(tt.version); got != tt.isHeal {
				t.Fatalf("IsHealOp = %v, want %v", got, tt.isHeal)
			}
			if tt.isHeal {
				return
			}
			heal, class := tt.op.FaultOf(tt.version)
			if heal != tt.heal || class != tt.class {
				t.Fatalf("FaultOf = %q, %q, want %q, %q", heal, class, tt.heal, tt.class)
			}
			all := Op{Process: NemesisProcess, Type: Info, F: FHealAll}
			if !all.Heals(tt.op, tt.version) {
				t.Error("heal-all does not end it")
			}
			if tt.healsWith != "" && !(Op{Process: NemesisProcess, Type: Info, F: tt.healsWith}).Heals(tt.op, tt.version) {
				t.Errorf("%s does not end it", tt.healsWith)
			}
			if (Op{Process: NemesisProcess, Type: Info, F: "resume-other"}).Heals(tt.op, tt.version) {
				t.Error("another fault's heal ends it")
			}
		})
	}
}

// TestFaultFieldsRoundTrip writes a fault op's heal and class and reads them
// back, by the fast decoder and by encoding/json.
func TestFaultFieldsRoundTrip(t *testing.T) {
	op := Op{Index: 3, Time: 7, Process: NemesisProcess, Type: Info, F: "kill", Heal: "start", Class: ClassKill, Value: []byte(`{"nodes":["n1"]}`)}
	b := AppendJSON(nil, op)
	if want := `{"index":3,"time":7,"process":-1,"type":"info","f":"kill","heal":"start","class":"kill","value":{"nodes":["n1"]}}`; string(b) != want {
		t.Fatalf("encoded %s, want %s", b, want)
	}
	for name, line := range map[string][]byte{"fast": b, "slow": append([]byte(" "), []byte(`{"class":"kill","heal":"st\u0061rt","index":3,"time":7,"process":-1,"type":"info","f":"kill","value":{"nodes":["n1"]}}`)...)} {
		var got Op
		if err := got.UnmarshalJSON(line); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.Heal != "start" || got.Class != ClassKill || got.F != "kill" {
			t.Errorf("%s: decoded %+v", name, got)
		}
	}
}
