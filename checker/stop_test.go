package checker

import (
	"context"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker/synth"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// TestStopNote holds the notes of a check whose context ended: its own
// budget, its caller's deadline and its caller's cancellation each say
// which.
func TestStopNote(t *testing.T) {
	tests := []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want string
	}{
		{"budget ran out", func() (context.Context, context.CancelFunc) {
			return withBudget(context.Background(), time.Nanosecond)
		}, "timed out after 1ns"},
		{"caller's deadline", func() (context.Context, context.CancelFunc) {
			parent, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
			ctx, cancelBudget := withBudget(parent, time.Hour)
			return ctx, func() { cancelBudget(); cancel() }
		}, "timed out"},
		{"interrupted", func() (context.Context, context.CancelFunc) {
			parent, cancel := context.WithCancel(context.Background())
			ctx, cancelBudget := withBudget(parent, time.Hour)
			cancel()
			return ctx, cancelBudget
		}, "interrupted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := tt.ctx()
			defer cancel()
			<-ctx.Done()
			if got := stopNote(ctx); got != tt.want {
				t.Errorf("stopNote = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestOutOfBudget tells a check out of its time budget from the other
// unknown verdicts: an interruption, a caller's deadline, a run that did
// not do what its scenario said, and a budget note on a decided result.
func TestOutOfBudget(t *testing.T) {
	tests := []struct {
		name    string
		results []Result
		want    bool
	}{
		{"a check out of its budget", []Result{{Name: "hold", Verdict: Valid}, {Name: "linearizable", Verdict: Unknown, Note: "key k: " + budgetError{time.Minute}.Error()}}, true},
		{"interrupted", []Result{{Name: "run", Verdict: Unknown, Note: "the check was interrupted"}}, false},
		{"its caller's deadline", []Result{{Name: "linearizable", Verdict: Unknown, Note: "timed out"}}, false},
		{"faults failed", []Result{{Name: "nemesis", Verdict: Unknown, Note: "the run did not do what its scenario said"}}, false},
		{"decided", []Result{{Name: "linearizable", Verdict: Valid, Note: "timed out after 1m0s"}}, false},
		{"none", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := OutOfBudget(tt.results); got != tt.want {
				t.Errorf("OutOfBudget = %v, want %v", got, tt.want)
			}
		})
	}
}

// bigSynthFile writes a synthetic history of ops ops of a correct lock
// and returns its path.
func bigSynthFile(t *testing.T, ops int) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "big.jsonl")
	opts := synth.Options{Workers: 16, Keys: 4, Ops: ops, InfoRate: 0.01, Tokens: true}
	if _, err := synth.WriteFile(file, rand.New(rand.NewPCG(7, 7)), opts); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestCheckFileInterrupted cancels the check of a big history as its first
// op is read: CheckFile returns ErrInterrupted, and its reading stops
// within a few chunks instead of reading the file to its end.
func TestCheckFileInterrupted(t *testing.T) {
	const ops = 600_000
	file := bigSynthFile(t, ops)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var read atomic.Int64
	opts := FileOptions{Options: Options{Timeout: time.Hour}, Rewrite: func(*history.Op) {
		if read.Add(1) == 1 {
			cancel()
		}
	}}
	_, err := CheckFile(ctx, file, opts)
	if !errors.Is(err, ErrInterrupted) || !errors.Is(err, context.Canceled) {
		t.Fatalf("CheckFile interrupted: err %v, want ErrInterrupted wrapping context.Canceled", err)
	}
	if n := read.Load(); n >= ops/2 {
		t.Errorf("read %d of %d ops after the interruption: the reading did not stop", n, ops)
	}
}

// TestCheckFileBudgetIsNotInterrupted runs a check past its budget: it is
// no error, and each check not decided is unknown and says it timed out
// after the budget; the reading stops there too, so the well-formedness
// check and the liveness report, which would judge the part read as the
// whole, are unknown and say how much was read, and no margin is given.
func TestCheckFileBudgetIsNotInterrupted(t *testing.T) {
	const ops = 200_000
	file := bigSynthFile(t, ops)
	res, err := CheckFile(context.Background(), file, FileOptions{Options: Options{Timeout: time.Nanosecond}})
	if err != nil {
		t.Fatalf("CheckFile past its budget: %v", err)
	}
	if res.Ops >= ops || !res.BudgetSpent {
		t.Errorf("read %d of %d ops past the budget (BudgetSpent %v), want the reading stopped", res.Ops, ops, res.BudgetSpent)
	}
	for _, r := range res.Results {
		if r.Verdict == Valid {
			t.Errorf("%s: valid past a budget of 1ns", r.Name)
		}
		if r.Verdict == Unknown && !strings.Contains(r.Note, "timed out after 1ns") {
			t.Errorf("%s: unknown with note %q, want it to say it timed out after 1ns", r.Name, r.Note)
		}
	}
	if wf := res.Results[0]; !strings.Contains(wf.Note, "ops of the history read") {
		t.Errorf("well-formed: note %q, want it to say how much was read", wf.Note)
	}
	if res.Liveness == nil || res.Liveness.Verdict != Unknown || !strings.HasPrefix(res.Liveness.Note, "not judged: timed out after 1ns") {
		t.Errorf("liveness past the budget: %+v, want unknown, not judged, timed out", res.Liveness)
	}
	if res.Margins != nil {
		t.Errorf("margins past the budget: %v, want none", res.Margins)
	}
}

// TestLinearizeStops checks that the linearizability search takes an ended
// context as running out of time, and that the model stops every step once
// told to, which is how a search porcupine runs ends within a step.
func TestLinearizeStops(t *testing.T) {
	grant := &lockOp{kind: kindGrant, proc: 1, client: 1, call: 0, ret: 10, lease: -1, crash: open, freed: open, freedIdx: open,
		invoke: 0, done: 1, retIdx: 1, crashIdx: open}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	one := piece{key: "k", ops: []*lockOp{grant}}
	if ok, _, timedOut := linearize(ctx, one, false); ok || !timedOut {
		t.Errorf("linearize with its context ended: ok %v, timedOut %v; want not ok, timed out", ok, timedOut)
	}
	if ok, undecided := decideOrder(ctx, one, one.ops); ok || !undecided {
		t.Errorf("decideOrder with its context ended: ok %v, undecided %v; want not ok, undecided", ok, undecided)
	}
	var stopped atomic.Bool
	model := pieceModel("k", one.start(), &stopped)
	if ok, _ := model.Step(model.Init(), grant, nil); !ok {
		t.Fatal("a first grant is not a legal step")
	}
	stopped.Store(true)
	if ok, _ := model.Step(model.Init(), grant, nil); ok {
		t.Error("a step was legal after the search was stopped")
	}
}
