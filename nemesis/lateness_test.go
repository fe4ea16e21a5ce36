package nemesis

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// TestLateness holds the lateness rule (docs/history.md §1, "Steps that did
// not run as written") to cases: the time from a step's due time to its
// beginning counts, except the time in which the nemesis's other faults and
// heals acted, one at a time.
func TestLateness(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	type act struct{ begin, end time.Duration }
	tests := []struct {
		name       string
		actions    []act
		due, begin time.Duration
		want       time.Duration
	}{
		{"nothing acted: all of the wait counts", nil, ms(1000), ms(1400), ms(400)},
		{"on time", nil, ms(1000), ms(1000), 0},
		{"waited for the heal acting when it fell due", []act{{ms(900), ms(2500)}}, ms(1000), ms(2500), 0},
		{"waited for a chain of actions, one at a time", []act{{ms(900), ms(2500)}, {ms(2500), ms(4000)}}, ms(1000), ms(4000), 0},
		{"the gaps between actions count", []act{{ms(900), ms(1500)}, {ms(2000), ms(2200)}}, ms(1000), ms(3000), ms(1300)},
		{"an action over before its time is no excuse", []act{{ms(100), ms(500)}}, ms(1000), ms(2000), ms(1000)},
		{"an action begun after its time is waited for", []act{{ms(1200), ms(1900)}}, ms(1000), ms(2000), ms(300)},
		{"a step due at 0 is never late", nil, 0, ms(5000), 0},
		{"the end heal, timed by no step, is never late", nil, noDue, ms(5000), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l actionLog
			for _, a := range tt.actions {
				l.add(a.begin, a.end)
			}
			if got := l.lateness(tt.due, tt.begin); got != tt.want {
				t.Fatalf("lateness(due %v, begin %v) after %v = %v, want %v", tt.due, tt.begin, tt.actions, got, tt.want)
			}
		})
	}
}

// TestStepsNotReachedAreRecorded runs a schedule whose last steps fall after
// the end of the run: each is recorded, when Run returns, as a fail op of
// its fault (a heal step's, of that heal) with its due time and an error
// saying it was not run, and listed by StepIssues; the steps that ran are
// not.
func TestStepsNotReachedAreRecorded(t *testing.T) {
	env, rec := outageEnv(t, fiveMasters())
	r := NewRunner(env)
	schedule := Schedule{
		{At: 0, Fault: "kill", Targets: []string{"n1"}},
		{At: time.Hour, Fault: "pause", Targets: []string{"n2"}, Duration: time.Second},
		{At: 2 * time.Hour, Fault: "heal-all"},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := r.Run(ctx, time.Now(), schedule); err != nil {
		t.Fatalf("Run: %v", err)
	}
	var notRun []history.Op
	for _, op := range rec.History() {
		if op.NotRun() {
			notRun = append(notRun, op)
		}
	}
	if len(notRun) != 2 {
		t.Fatalf("%d ops record a step not run, want 2: %+v", len(notRun), notRun)
	}
	for i, want := range []struct {
		f     string
		class history.FaultClass
		due   time.Duration
	}{{"pause", history.ClassPause, time.Hour}, {"heal-all", "", 2 * time.Hour}} {
		op := notRun[i]
		if op.F != want.f || op.Class != want.class || op.Heal != "" || *op.Due != want.due {
			t.Errorf("op %+v (due %v), want a fail op of %s of class %q, no heal, due %v", op, *op.Due, want.f, want.class, want.due)
		}
		if !strings.HasPrefix(op.Error, "not run: the run ended before its time") || !strings.Contains(op.Error, want.due.String()) {
			t.Errorf("the error %q does not say that the step was not run and when it was due", op.Error)
		}
		if !op.NemesisFailed(history.FormatVersion) {
			t.Errorf("a step not run is not a fault that did not take effect: %+v", op)
		}
	}
	issues := r.StepIssues()
	if len(issues) != 2 || !issues[0].NotRun || !issues[1].NotRun || issues[0].Step.Fault != "pause" || issues[1].Step.Fault != "heal-all" {
		t.Fatalf("StepIssues = %+v, want the pause and the heal-all, not run", issues)
	}
}

// TestLateStepsCarryTheirDue runs a schedule on a clock that started 1.2 s
// before Run did, so that its steps begin a second or more after their
// time with nothing else acting: each fault, and the heal that ends it after
// its duration, is recorded with its due time and listed late by at least
// 900ms; a step due at 0 is never late.
func TestLateStepsCarryTheirDue(t *testing.T) {
	env, rec := outageEnv(t, fiveMasters())
	r := NewRunner(env)
	schedule := Schedule{
		{At: 0, Fault: "pause", Targets: []string{"n1"}},
		{At: 100 * time.Millisecond, Fault: "kill", Targets: []string{"n2"}, Duration: 100 * time.Millisecond},
	}
	start := rec.Start()
	time.Sleep(time.Until(start.Add(1200 * time.Millisecond)))
	if err := r.Run(context.Background(), start, schedule); err != nil {
		t.Fatalf("Run: %v", err)
	}
	dues := map[string]time.Duration{}
	for _, op := range rec.History() {
		if op.Due == nil {
			continue
		}
		late, ok := op.LateBy()
		if !ok || late < 900*time.Millisecond {
			t.Errorf("op %+v carries a due of %v but is not late by 900ms (%v, %v)", op, *op.Due, late, ok)
		}
		dues[op.F] = *op.Due
	}
	if dues["kill"] != 100*time.Millisecond || dues["start"] != 200*time.Millisecond || len(dues) != 2 {
		t.Fatalf("the ops carry the dues %v, want the kill's 100ms and its start's 200ms, and no other", dues)
	}
	issues := r.StepIssues()
	if len(issues) != 2 {
		t.Fatalf("StepIssues = %+v, want the kill and its heal", issues)
	}
	for i, heal := range []bool{false, true} {
		is := issues[i]
		if is.Step.Fault != "kill" || is.Heal != heal || is.NotRun || is.Late < 900*time.Millisecond {
			t.Errorf("issue %d = %+v, want the kill (heal %v) late by 900ms or more", i, is, heal)
		}
	}
}

// TestLateHealStepIsOneIssue runs, late, a heal-all step that heals two
// faults: each heal op carries the step's due time, and the step is listed
// once.
func TestLateHealStepIsOneIssue(t *testing.T) {
	env, rec := outageEnv(t, fiveMasters())
	r := NewRunner(env)
	schedule := Schedule{
		{At: 0, Fault: "pause", Targets: []string{"n1"}},
		{At: 100 * time.Millisecond, Fault: "pause", Targets: []string{"n3"}},
		{At: 150 * time.Millisecond, Fault: "heal-all"},
	}
	start := rec.Start()
	time.Sleep(time.Until(start.Add(1200 * time.Millisecond)))
	if err := r.Run(context.Background(), start, schedule); err != nil {
		t.Fatalf("Run: %v", err)
	}
	var due []string
	for _, op := range rec.History() {
		if op.Due != nil {
			due = append(due, op.F+"@"+op.Due.String())
		}
	}
	if want := []string{"pause@100ms", "resume@150ms", "resume@150ms"}; strings.Join(due, " ") != strings.Join(want, " ") {
		t.Fatalf("the ops carry the dues %q, want %q", due, want)
	}
	issues := r.StepIssues()
	if len(issues) != 2 || issues[0].Step.Fault != "pause" || issues[1].Step.Fault != "heal-all" || issues[1].Heal || issues[1].Late < 900*time.Millisecond {
		t.Fatalf("StepIssues = %+v, want the pause of n3 and the heal-all, once, late by 900ms or more", issues)
	}
}
