package history

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestHostEventOf: what a host record says, and why a record that does not
// say it is not well-formed.
func TestHostEventOf(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		want    HostEvent
		wantErr string
	}{
		{"clock step ahead", `{"index":1,"time":3000,"process":-1,"type":"info","f":"clock-step","value":{"step":17000,"after":2950}}`,
			HostEvent{Kind: FClockStep, Time: 3000, Size: 17000, From: 2950}, ""},
		{"clock step back", `{"index":1,"time":3000,"process":-1,"type":"info","f":"clock-step","value":{"step":-250,"after":0}}`,
			HostEvent{Kind: FClockStep, Time: 3000, Size: -250, From: 0}, ""},
		{"stall", `{"index":1,"time":3600,"process":-1,"type":"info","f":"stall","value":{"stall":598}}`,
			HostEvent{Kind: FStall, Time: 3600, Size: 598, From: 3002}, ""},
		{"clock step without after", `{"index":1,"time":3000,"process":-1,"type":"info","f":"clock-step","value":{"step":17000}}`,
			HostEvent{}, "lacks step or after"},
		{"clock step after its record", `{"index":1,"time":3000,"process":-1,"type":"info","f":"clock-step","value":{"step":17000,"after":3001}}`,
			HostEvent{}, "not between 0 and its time"},
		{"negative stall", `{"index":1,"time":3000,"process":-1,"type":"info","f":"stall","value":{"stall":-1}}`,
			HostEvent{}, "has no stall"},
		{"value not an object", `{"index":1,"time":3000,"process":-1,"type":"info","f":"stall","value":5}`,
			HostEvent{}, "is not an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var op Op
			if err := op.UnmarshalJSON([]byte(tt.line)); err != nil {
				t.Fatal(err)
			}
			got, ok, err := HostEventOf(op)
			if !ok {
				t.Fatal("not taken for a host record")
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tt.wantErr)
				}
				h := History{Header(), op}
				var oe *OpError
				if verr := Validate(h); !errors.As(verr, &oe) || oe.Line != 2 {
					t.Fatalf("Validate: %v, want the error of line 2", verr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
			if !op.IsRecord() || op.IsHealOp(FormatVersion) {
				t.Error("a host record is not taken for a record, or is taken for a heal")
			}
		})
	}
}

// TestHostOps: the records the watch writes say what they were made of.
func TestHostOps(t *testing.T) {
	step := ClockStepOp(-3*time.Second, 2*time.Second)
	step.Time = 5 * time.Second
	if e, ok, err := HostEventOf(step); !ok || err != nil || e != (HostEvent{Kind: FClockStep, Time: 5 * time.Second, Size: -3 * time.Second, From: 2 * time.Second}) {
		t.Errorf("ClockStepOp read back as %+v, %v, %v", e, ok, err)
	}
	stall := StallOp(600 * time.Millisecond)
	stall.Time = time.Second
	if e, ok, err := HostEventOf(stall); !ok || err != nil || e != (HostEvent{Kind: FStall, Time: time.Second, Size: 600 * time.Millisecond, From: 400 * time.Millisecond}) {
		t.Errorf("StallOp read back as %+v, %v, %v", e, ok, err)
	}
	if _, ok, _ := HostEventOf(AvailabilityOp(Availability{Nodes: 3})); ok {
		t.Error("an availability record taken for a host record")
	}
	for _, tt := range []struct {
		e    HostEvent
		want string
	}{
		{HostEvent{Kind: FClockStep, Time: 4200 * time.Millisecond, Size: 17 * time.Second}, "host clock stepped +17s at 4.200s"},
		{HostEvent{Kind: FClockStep, Time: 4200 * time.Millisecond, Size: -250 * time.Millisecond}, "host clock stepped -250ms at 4.200s"},
		{HostEvent{Kind: FStall, Time: 3698 * time.Millisecond, Size: 598 * time.Millisecond, From: 3100 * time.Millisecond}, "harness stalled 598ms at 3.100s"},
	} {
		if got := tt.e.Describe(); got != tt.want {
			t.Errorf("Describe() = %q, want %q", got, tt.want)
		}
	}
}
