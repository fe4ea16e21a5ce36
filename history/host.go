package history

import (
	"encoding/json"
	"fmt"
	"time"
)

// The f values of the host records (format version 7): what the harness's
// watch of its own host saw during a run's driving phase. Like the
// availability record, each is a nemesis-process info op that records a
// state, not a fault or a heal, and changes no verdict (docs/history.md §1,
// "The host records").
const (
	// FClockStep is the record of a step of the host's wall clock against
	// its monotonic clock: its value is {"step": ns, "after": ns}, the
	// signed size of the step and the harness time after which it happened
	// (the watch's previous reading); the record's time is when the watch
	// saw it.
	FClockStep = "clock-step"
	// FStall is the record of a stall of the harness: the watch woke later
	// than it asked to by its value's "stall" ns. The record's time is when
	// it woke, the end of the stall, which began stall ns before.
	FStall = "stall"
)

// HostEvent is what one host record says: its kind (FClockStep or FStall),
// the harness time at which the watch saw it (the record's time), its size
// (a clock step's, signed: positive when the wall clock jumped ahead; a
// stall's length) and From, the earliest harness time at which it may have
// begun: a stall's start (Time − Size), or the watch's reading before the
// clock step.
type HostEvent struct {
	Kind string        `json:"kind"`
	Time time.Duration `json:"time_ns"`
	Size time.Duration `json:"size_ns"`
	From time.Duration `json:"from_ns"`
}

// IsHostRecord reports whether op is a host record: a clock step or a stall.
func (o Op) IsHostRecord() bool {
	return o.Process == NemesisProcess && (o.F == FClockStep || o.F == FStall)
}

// ClockStepOp returns the record of a clock step of size step, seen after
// harness time after.
func ClockStepOp(step, after time.Duration) Op {
	v := struct {
		Step int64 `json:"step"`
		// After is a time, never negative, so it is always written.
		After int64 `json:"after"`
	}{int64(step), int64(after)}
	return Op{Process: NemesisProcess, Type: Info, F: FClockStep, Value: JSONValue(v)}
}

// StallOp returns the record of a stall of length stall.
func StallOp(stall time.Duration) Op {
	v := struct {
		Stall int64 `json:"stall"`
	}{int64(stall)}
	return Op{Process: NemesisProcess, Type: Info, F: FStall, Value: JSONValue(v)}
}

// HostEventOf returns what the host record op says, or an error saying why
// its value is not a host record's; ok is false when op is no host record.
func HostEventOf(op Op) (e HostEvent, ok bool, err error) {
	if !op.IsHostRecord() {
		return HostEvent{}, false, nil
	}
	var raw struct {
		Step  *int64 `json:"step"`
		After *int64 `json:"after"`
		Stall *int64 `json:"stall"`
	}
	if err := json.Unmarshal(op.Value, &raw); err != nil {
		return HostEvent{}, true, fmt.Errorf("%s record's value %s is not an object", op.F, op.Value)
	}
	e = HostEvent{Kind: op.F, Time: op.Time}
	switch {
	case op.F == FClockStep && (raw.Step == nil || raw.After == nil):
		return HostEvent{}, true, fmt.Errorf("clock-step record's value %s lacks step or after", op.Value)
	case op.F == FClockStep && (*raw.After < 0 || time.Duration(*raw.After) > op.Time):
		return HostEvent{}, true, fmt.Errorf("clock-step record's after %d is not between 0 and its time %d", *raw.After, op.Time)
	case op.F == FClockStep:
		e.Size, e.From = time.Duration(*raw.Step), time.Duration(*raw.After)
	case raw.Stall == nil || *raw.Stall < 0:
		return HostEvent{}, true, fmt.Errorf("stall record's value %s has no stall of 0 ns or more", op.Value)
	default:
		e.Size = time.Duration(*raw.Stall)
		e.From = max(op.Time-e.Size, 0)
	}
	return e, true, nil
}

// Describe says what e was, in the words of the console and the report:
// "host clock stepped +17.000s at 4.200s", "harness stalled 598ms at
// 3.100s" (the stall's start).
func (e HostEvent) Describe() string {
	if e.Kind == FClockStep {
		sign := "+"
		if e.Size < 0 {
			sign = ""
		}
		return fmt.Sprintf("host clock stepped %s%v at %.3fs", sign, e.Size.Round(time.Millisecond), e.Time.Seconds())
	}
	return fmt.Sprintf("harness stalled %v at %.3fs", e.Size.Round(time.Millisecond), e.From.Seconds())
}

// Overlaps reports whether e may have happened within [from, to] of harness
// time: whether its span [From, Time] meets it.
func (e HostEvent) Overlaps(from, to time.Duration) bool {
	return e.From <= to && e.Time >= from
}
