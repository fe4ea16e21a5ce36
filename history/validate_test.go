package history

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	inv := func(p int, f string) Op { return Op{Process: p, Client: p, Type: Invoke, F: f, Key: "k"} }
	done := func(p int, ty Type, f string) Op { return Op{Process: p, Client: p, Type: ty, F: f, Key: "k"} }
	nem := func(ty Type, f string) Op { return Op{Process: NemesisProcess, Type: ty, F: f} }
	applied := func(op Op, at time.Duration) Op { op.Applied = at; return op }
	val := func(op Op, v string) Op { op.Value = []byte(v); return op }
	tests := []struct {
		name    string
		ops     []Op
		badAt   int // -1: well-formed
		message string
	}{
		{"empty", nil, -1, ""},
		{"pairs and nemesis", []Op{inv(0, FAcquire), nem(Info, "partition"), inv(1, FAcquire), done(1, Fail, FAcquire), done(0, OK, FAcquire), nem(Invoke, "heal"), nem(OK, "heal")}, -1, ""},
		{"crash then new process", []Op{inv(0, FAcquire), done(0, Info, FAcquire), inv(16, FAcquire), done(16, OK, FAcquire)}, -1, ""},
		{"lone nemesis completion", []Op{nem(OK, "kill")}, -1, ""},
		{"completion without invoke", []Op{done(0, OK, FAcquire)}, 0, "without an outstanding invoke"},
		{"completion of another f", []Op{inv(0, FAcquire), done(0, OK, FRelease)}, 1, "outstanding invoke (op 0) is acquire"},
		{"two outstanding", []Op{inv(0, FAcquire), inv(0, FRelease)}, 1, "while its acquire (op 0) is outstanding"},
		{"invoke after info", []Op{inv(0, FAcquire), done(0, Info, FAcquire), inv(0, FAcquire)}, 2, "after it crashed"},
		{"unknown type", []Op{{Process: 0, Type: "done", F: FRead}}, 0, "unknown type"},
		{"negative process", []Op{{Process: -2, Type: Invoke, F: FRead}}, 0, "negative"},
		{"no f", []Op{{Process: 0, Type: Invoke}}, 0, "no f"},
		{"write applied inside its window", []Op{inv(0, FWrite), applied(done(0, OK, FWrite), 5)}, -1, ""},
		{"write applied at its invoke and at its completion", []Op{inv(0, FWrite), applied(done(0, OK, FWrite), 10), inv(1, FWrite), applied(done(1, Fail, FWrite), 30)}, -1, ""},
		{"write applied before its invoke", []Op{inv(0, FAcquire), done(0, OK, FAcquire), inv(0, FWrite), applied(done(0, OK, FWrite), 15)}, 3, "applied at 15, outside its own window from its invoke (op 2) at 20 to its completion at 30"},
		{"write applied after its completion", []Op{inv(0, FWrite), applied(done(0, Fail, FWrite), 11)}, 1, "applied at 11, outside its own window"},
		{"queue ops", []Op{TasksOp([]TaskSpec{{Task: "t1", Queue: "k"}}), val(inv(0, FCapture), `2`), val(done(0, OK, FCapture), `[{"task":"t1","token":3}]`), val(inv(0, FSetStatus), `"done"`), done(0, OK, FSetStatus), val(inv(1, FReap), `100`), val(done(1, OK, FReap), `["t1"]`)}, -1, ""},
		{"capture without a limit", []Op{inv(0, FCapture)}, 0, "capture's limit  is not a positive integer"},
		{"capture of a task without an id", []Op{val(inv(0, FCapture), `1`), val(done(0, OK, FCapture), `[{"token":3}]`)}, 1, "captured tasks: task 0 has no id"},
		{"reap of a number", []Op{inv(1, FReap), val(done(1, OK, FReap), `3`)}, 1, "reaped tasks"},
		{"set-status without a status", []Op{inv(0, FSetStatus)}, 0, "status  is not a string"},
		{"task table with a negative budget", []Op{val(nem(Info, FTasks), `[{"task":"t1","queue":"q","budget":-1}]`)}, 0, `task "t1" has a negative budget -1`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := make(History, len(tc.ops))
			for i, op := range tc.ops {
				op.Index = i
				op.Time = 10 * timeUnit(i)
				h[i] = op
			}
			err := Validate(h)
			if tc.badAt < 0 {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			var oe *OpError
			if !errors.As(err, &oe) || oe.Index != tc.badAt || oe.Line != tc.badAt+1 || !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tc.message) {
				t.Fatalf("Validate = %v, want an OpError at op %d containing %q", err, tc.badAt, tc.message)
			}
		})
	}
}

func timeUnit(i int) time.Duration { return time.Duration(i) }

func TestValidateIndexAndTime(t *testing.T) {
	h := History{{Index: 0, Time: 5, Process: 0, Type: Invoke, F: FRead}, {Index: 2, Time: 6, Process: 0, Type: OK, F: FRead}}
	if err := Validate(h); err == nil || !strings.Contains(err.Error(), "index is 2, want 1") {
		t.Fatalf("gap in indexes: %v", err)
	}
	h[1].Index = 1
	h[1].Time = 4
	if err := Validate(h); err == nil || !strings.Contains(err.Error(), "line 2 (op 1): time 4 is before") {
		t.Fatalf("time going back: %v", err)
	}
	h[1].Time = 5
	if err := Validate(h); err != nil {
		t.Fatalf("equal times: %v", err)
	}
}
