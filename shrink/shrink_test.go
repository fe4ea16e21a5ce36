package shrink

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/nemesis"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

func TestDDMin(t *testing.T) {
	tests := []struct {
		name string
		n    int
		// fails holds of a set when it contains every item of need.
		need []int
		want []int
	}{
		{name: "one culprit of eight", n: 8, need: []int{5}, want: []int{5}},
		{name: "two culprits far apart", n: 8, need: []int{0, 7}, want: []int{0, 7}},
		{name: "three culprits", n: 10, need: []int{2, 3, 9}, want: []int{2, 3, 9}},
		{name: "every item", n: 3, need: []int{0, 1, 2}, want: []int{0, 1, 2}},
		{name: "none needed", n: 5, need: nil, want: nil},
		{name: "one of one", n: 1, need: []int{0}, want: []int{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tests := 0
			got := ddmin(tt.n, func(set []int) bool {
				tests++
				for _, x := range tt.need {
					if !slices.Contains(set, x) {
						return false
					}
				}
				return true
			})
			if !slices.Equal(got, tt.want) {
				t.Fatalf("ddmin = %v, want %v (%d tests)", got, tt.want, tests)
			}
		})
	}
}

// TestDDMinIsOneMinimal: with a failure that needs any two of a set of
// items, the result fails and no set one item smaller does.
func TestDDMinIsOneMinimal(t *testing.T) {
	bad := map[int]bool{1: true, 4: true, 6: true}
	fails := func(set []int) bool {
		k := 0
		for _, x := range set {
			if bad[x] {
				k++
			}
		}
		return k >= 2
	}
	got := ddmin(9, fails)
	if !fails(got) {
		t.Fatalf("ddmin = %v, which does not fail", got)
	}
	for i := range got {
		smaller := slices.Delete(slices.Clone(got), i, i+1)
		if fails(smaller) {
			t.Errorf("ddmin = %v is not 1-minimal: %v fails too", got, smaller)
		}
	}
}

// scenario returns a scenario of five client pauses, 8 workers, 10 s.
func scenario() *scenarios.Scenario {
	sc := &scenarios.Scenario{Name: "s", Workers: 8, Duration: 10 * time.Second}
	for i, d := range []time.Duration{2242, 733, 617, 930, 2381} {
		sc.Nemesis.Steps = append(sc.Nemesis.Steps, nemesis.Step{
			At: time.Duration(500+1800*i) * time.Millisecond, Fault: "client-pause", Targets: []string{"one"}, Duration: d * time.Millisecond})
	}
	return sc
}

// TestShrinkKeepsWhatTheFailureNeeds shrinks against trials whose failure
// needs a pause longer than the 1 s lease (steps 1 and 5 are) and two
// workers, and fails in 2 of every 3 runs: the search keeps one such step,
// shortens it to just above a second, lowers the workers to two, shortens
// the run, and counts its runs.
func TestShrinkKeepsWhatTheFailureNeeds(t *testing.T) {
	runs := 0
	trial := func(_ context.Context, sc *scenarios.Scenario) (Outcome, string, error) {
		runs++
		if runs%3 == 0 {
			return Passed, "", nil // a flaky miss
		}
		for _, st := range sc.Nemesis.Steps {
			if st.Duration > time.Second && sc.Workers >= 2 && sc.Duration >= st.At+st.Duration {
				return Failed, "", nil
			}
		}
		return Passed, "", nil
	}
	res, err := Shrink(context.Background(), scenario(), trial, Options{Tries: 3, Need: 2, Confirm: 6})
	if err != nil {
		t.Fatal(err)
	}
	got := res.Scenario
	if len(got.Nemesis.Steps) != 1 {
		t.Fatalf("steps %v, want one", got.Nemesis.Steps)
	}
	if d := got.Nemesis.Steps[0].Duration; d <= time.Second || d > 2*time.Second {
		t.Errorf("the step lasts %v, want just above the 1 s lease", d)
	}
	if got.Workers != 2 {
		t.Errorf("workers %d, want 2", got.Workers)
	}
	if end := got.Nemesis.Steps[0].At + got.Nemesis.Steps[0].Duration; got.Duration > end+1100*time.Millisecond || got.Duration < end {
		t.Errorf("run of %v, want within a second after the step's end %v", got.Duration, end)
	}
	if res.Runs != runs {
		t.Errorf("Runs %d, the trial ran %d times", res.Runs, runs)
	}
	if res.Confirmed != 6 || res.Failed != 4 {
		t.Errorf("confirmation %d of %d, want 4 of 6 (every third run misses)", res.Failed, res.Confirmed)
	}
	if len(res.Changes) == 0 {
		t.Error("no change described")
	}
	if res.Undecided != 0 || res.UndecidedRuns != 0 || res.ConfirmUndecided != 0 || res.Candidates == 0 {
		t.Errorf("%d of %d candidates undecided (%d runs, %d confirmation runs); want none of some", res.Undecided, res.Candidates, res.UndecidedRuns, res.ConfirmUndecided)
	}
	for _, c := range res.Changes {
		t.Log(c)
	}
}

// TestShrinkRefusesWhatDoesNotFail: a scenario whose runs pass, or say
// nothing, does not fail, and the error counts the runs that said nothing;
// a random schedule is refused.
func TestShrinkRefusesWhatDoesNotFail(t *testing.T) {
	never := func(context.Context, *scenarios.Scenario) (Outcome, string, error) { return Passed, "", nil }
	if _, err := Shrink(context.Background(), scenario(), never, Options{}); !errors.Is(err, ErrDoesNotFail) {
		t.Fatalf("Shrink = %v, want ErrDoesNotFail", err)
	}
	unknown := func(context.Context, *scenarios.Scenario) (Outcome, string, error) {
		return Undecided, "linearizable: timed out after 1m0s", nil
	}
	_, err := Shrink(context.Background(), scenario(), unknown, Options{})
	if !errors.Is(err, ErrDoesNotFail) || !strings.Contains(err.Error(), "2 undecided: linearizable: timed out after 1m0s") {
		t.Fatalf("Shrink of a scenario whose runs are undecided = %v, want ErrDoesNotFail counting 2 undecided runs", err)
	}
	random := scenario()
	random.Nemesis.Random = &nemesis.RandomSpec{}
	always := func(context.Context, *scenarios.Scenario) (Outcome, string, error) { return Failed, "", nil }
	if _, err := Shrink(context.Background(), random, always, Options{}); err == nil {
		t.Fatal("Shrink of a random schedule: no error")
	}
}

// TestShrinkStopsAtItsBudget: a budget of 3 runs ends the search with a
// scenario that still failed, marked exhausted.
func TestShrinkStopsAtItsBudget(t *testing.T) {
	always := func(context.Context, *scenarios.Scenario) (Outcome, string, error) { return Failed, "", nil }
	res, err := Shrink(context.Background(), scenario(), always, Options{Tries: 1, Need: 1, MaxRuns: 3, Confirm: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Exhausted || res.Runs != 4 {
		t.Fatalf("exhausted %v after %d runs, want true after 3 and a confirmation", res.Exhausted, res.Runs)
	}
	if res.Scenario == nil || res.Failed != 1 {
		t.Fatalf("result %+v: want the scenario found so far, failing its confirmation", res)
	}
}

// TestShrinkRefusesWhatIsNotConfirmed: a search whose candidates failed but
// whose smallest scenario then fails in none of its confirmation runs ends
// with ErrNotConfirmed, never with a result that looks like a failing case.
func TestShrinkRefusesWhatIsNotConfirmed(t *testing.T) {
	n := 0
	trial := func(context.Context, *scenarios.Scenario) (Outcome, string, error) {
		n++
		return outcome(n <= 3), "", nil // the search's three runs fail, the confirmation's pass
	}
	res, err := Shrink(context.Background(), scenario(), trial, Options{Tries: 1, Need: 1, MaxRuns: 3, Confirm: 2})
	if !errors.Is(err, ErrNotConfirmed) {
		t.Fatalf("Shrink = %v, want ErrNotConfirmed", err)
	}
	if res == nil || res.Failed != 0 || res.Confirmed != 2 {
		t.Fatalf("result %+v: want 0 of 2 confirmation runs failed", res)
	}
	once := 0
	flaky := func(context.Context, *scenarios.Scenario) (Outcome, string, error) {
		once++
		return outcome(once <= 3 || once == 5), "", nil // one confirmation run of two fails
	}
	if _, err := Shrink(context.Background(), scenario(), flaky, Options{Tries: 1, Need: 1, MaxRuns: 3, Confirm: 2}); err != nil {
		t.Fatalf("Shrink with 1 of 2 confirmation runs failing = %v, want nil", err)
	}
}

// TestShrinkPassesOnTrialErrors: an error of a trial ends the search with
// it, never counted as a pass.
func TestShrinkPassesOnTrialErrors(t *testing.T) {
	boom := errors.New("server did not start")
	n := 0
	trial := func(context.Context, *scenarios.Scenario) (Outcome, string, error) {
		n++
		if n > 4 {
			return Passed, "", boom
		}
		return Failed, "", nil
	}
	if _, err := Shrink(context.Background(), scenario(), trial, Options{}); !errors.Is(err, boom) {
		t.Fatalf("Shrink = %v, want %v", err, boom)
	}
}

// outcome is Failed when failed, else Passed.
func outcome(failed bool) Outcome {
	if failed {
		return Failed
	}
	return Passed
}

// budgetOut is why the fake trials' undecided runs are unknown.
const budgetOut = "linearizable: timed out after 1m0s"

// TestCandidateCounts runs one candidate against trials that say a given
// sequence of outcomes: it still fails on Need failures, passes only on
// more than Tries-Need decided passes, and is undecided otherwise, with its
// runs stopped as soon as that is known and its undecided runs counted.
func TestCandidateCounts(t *testing.T) {
	F, P, U := Failed, Passed, Undecided
	tests := []struct {
		name        string
		tries, need int
		runs        []Outcome // what the trial says, run by run
		want        Outcome
		wantRuns    int
		wantLog     string
	}{
		{name: "two failures", tries: 3, need: 2, runs: []Outcome{F, F}, want: F, wantRuns: 2, wantLog: "still fails"},
		{name: "two passes", tries: 3, need: 2, runs: []Outcome{P, P}, want: P, wantRuns: 2, wantLog: "passes"},
		{name: "a pass between failures", tries: 3, need: 2, runs: []Outcome{F, P, F}, want: F, wantRuns: 3, wantLog: "still fails"},
		{name: "a failure then passes", tries: 3, need: 2, runs: []Outcome{F, P, P}, want: P, wantRuns: 3, wantLog: "passes"},
		{name: "unknown, then two failures", tries: 3, need: 2, runs: []Outcome{U, F, F}, want: F, wantRuns: 3, wantLog: "still fails"},
		{name: "every run unknown", tries: 3, need: 2, runs: []Outcome{U, U}, want: U, wantRuns: 2,
			wantLog: "undecided (2 of 2 runs unknown: " + budgetOut + ")"},
		{name: "unknown, then a pass: a failure is out of reach, a pass not proved", tries: 3, need: 2, runs: []Outcome{U, P}, want: U, wantRuns: 2,
			wantLog: "undecided (1 of 2 runs unknown: " + budgetOut + ")"},
		{name: "one of each", tries: 3, need: 2, runs: []Outcome{F, U, P}, want: U, wantRuns: 3,
			wantLog: "undecided (1 of 3 runs unknown: " + budgetOut + ")"},
		{name: "four passes of five", tries: 5, need: 2, runs: []Outcome{P, P, P, P}, want: P, wantRuns: 4, wantLog: "passes"},
		{name: "an unknown and three passes of five", tries: 5, need: 2, runs: []Outcome{U, P, P, P}, want: U, wantRuns: 4,
			wantLog: "undecided (1 of 4 runs unknown: " + budgetOut + ")"},
		{name: "one try, unknown", tries: 1, need: 1, runs: []Outcome{U}, want: U, wantRuns: 1,
			wantLog: "undecided (1 of 1 runs unknown: " + budgetOut + ")"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ran := 0
			trial := func(context.Context, *scenarios.Scenario) (Outcome, string, error) {
				if ran >= len(tt.runs) {
					t.Fatalf("run %d: the candidate should have been decided after %d runs", ran+1, len(tt.runs))
				}
				ran++
				if tt.runs[ran-1] == Undecided {
					return Undecided, budgetOut, nil
				}
				return tt.runs[ran-1], "", nil
			}
			var log strings.Builder
			s := &search{ctx: context.Background(), trial: trial, opts: Options{Tries: tt.tries, Need: tt.need, Log: &log}.withDefaults(), res: &Result{}}
			got, err := s.fails(scenario(), "c", true)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want || ran != tt.wantRuns || s.res.Runs != ran {
				t.Errorf("%s after %d runs (Runs %d), want %s after %d", got, ran, s.res.Runs, tt.want, tt.wantRuns)
			}
			if want := "shrink: run " + fmt.Sprint(ran) + ": c: " + tt.wantLog + "\n"; log.String() != want {
				t.Errorf("log %q, want %q", log.String(), want)
			}
			unknown := 0
			for _, o := range tt.runs {
				if o == Undecided {
					unknown++
				}
			}
			wantUndecided := 0
			if tt.want == Undecided {
				wantUndecided = 1
			}
			if s.res.Candidates != 1 || s.res.Undecided != wantUndecided || s.res.UndecidedRuns != unknown {
				t.Errorf("%d candidates, %d undecided, %d undecided runs; want 1, %d, %d", s.res.Candidates, s.res.Undecided, s.res.UndecidedRuns, wantUndecided, unknown)
			}
			if (unknown > 0) != (s.res.FirstUnknown == budgetOut) {
				t.Errorf("FirstUnknown %q with %d undecided runs", s.res.FirstUnknown, unknown)
			}
		})
	}
}

// TestShrinkKeepsNoUndecidedCandidate shrinks against trials whose
// failure needs step 5 (a 2.38 s pause), whose candidates with step 1 (a
// 2.24 s pause) and without step 5 make the check run out of its budget,
// and whose others pass: the search keeps step 5 alone, keeps no candidate
// that was undecided, never says such a one passes, and counts them.
func TestShrinkKeepsNoUndecidedCandidate(t *testing.T) {
	runs := 0
	trial := func(_ context.Context, sc *scenarios.Scenario) (Outcome, string, error) {
		runs++
		out := Passed
		for _, st := range sc.Nemesis.Steps {
			switch {
			case st.Duration > 2300*time.Millisecond:
				return Failed, "", nil
			case st.Duration > 2*time.Second:
				out = Undecided
			}
		}
		if out == Undecided {
			return Undecided, budgetOut, nil
		}
		return out, "", nil
	}
	var log strings.Builder
	res, err := Shrink(context.Background(), scenario(), trial, Options{Tries: 3, Need: 2, Confirm: 3, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if steps := res.Scenario.Nemesis.Steps; len(steps) != 1 || steps[0].Duration != 2381*time.Millisecond {
		t.Errorf("steps %v, want step 5 alone", steps)
	}
	if res.Undecided == 0 || res.Undecided >= res.Candidates || res.UndecidedRuns < 2*res.Undecided || res.FirstUnknown != budgetOut {
		t.Errorf("%d of %d candidates undecided, %d undecided runs, first %q; want some of them, two runs each, %q",
			res.Undecided, res.Candidates, res.UndecidedRuns, res.FirstUnknown, budgetOut)
	}
	if want := "steps #1,#2 of 5: undecided (2 of 2 runs unknown: " + budgetOut + ")"; !strings.Contains(log.String(), want) {
		t.Errorf("the log does not say %q:\n%s", want, log.String())
	}
	undecided := strings.Count(log.String(), ": undecided (")
	if undecided != res.Undecided {
		t.Errorf("the log says undecided %d times, Result counts %d candidates:\n%s", undecided, res.Undecided, log.String())
	}
	if res.Runs != runs || res.Failed != 3 || res.Confirmed != 3 || res.ConfirmUndecided != 0 {
		t.Errorf("Runs %d (the trial ran %d), confirmation %d of %d (%d undecided); want 3 of 3", res.Runs, runs, res.Failed, res.Confirmed, res.ConfirmUndecided)
	}
}

// TestShrinkKeepsTheScenarioWhenEveryCandidateIsUndecided: a scenario
// that fails as given, each of whose smaller candidates makes the check run
// out of its budget, is kept as given, and the search says that every
// candidate was undecided.
func TestShrinkKeepsTheScenarioWhenEveryCandidateIsUndecided(t *testing.T) {
	given := scenario()
	same := func(sc *scenarios.Scenario) bool {
		return sc.Duration == given.Duration && sc.Workers == given.Workers && slices.EqualFunc(sc.Nemesis.Steps, given.Nemesis.Steps, func(a, b nemesis.Step) bool { return a.String() == b.String() })
	}
	trial := func(_ context.Context, sc *scenarios.Scenario) (Outcome, string, error) {
		if same(sc) {
			return Failed, "", nil
		}
		return Undecided, budgetOut, nil
	}
	var log strings.Builder
	res, err := Shrink(context.Background(), given, trial, Options{Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if !same(res.Scenario) || len(res.Changes) != 0 {
		t.Errorf("the search kept %d steps, %d workers, %v, changes %v; want the scenario as given", len(res.Scenario.Nemesis.Steps), res.Scenario.Workers, res.Scenario.Duration, res.Changes)
	}
	if res.Candidates == 0 || res.Undecided != res.Candidates || res.UndecidedRuns != 2*res.Candidates {
		t.Errorf("%d of %d candidates undecided, %d undecided runs; want every one, two runs each", res.Undecided, res.Candidates, res.UndecidedRuns)
	}
	if strings.Contains(log.String(), "passes") {
		t.Errorf("the log says a candidate passes:\n%s", log.String())
	}
	want := fmt.Sprintf("shrink: every candidate (%d) was undecided (%d runs unknown: %s): the scenario as given is kept\n", res.Candidates, res.UndecidedRuns, budgetOut)
	if !strings.Contains(log.String(), want) {
		t.Errorf("the log does not say %q:\n%s", want, log.String())
	}
	if res.Failed != 5 || res.Confirmed != 5 {
		t.Errorf("confirmation %d of %d, want 5 of 5", res.Failed, res.Confirmed)
	}
}

// TestShrinkCountsUndecidedConfirmationRuns: confirmation runs that are
// undecided are counted as such, not as passes, and confirmation runs that
// are all undecided confirm nothing.
func TestShrinkCountsUndecidedConfirmationRuns(t *testing.T) {
	tests := []struct {
		name                    string
		confirm                 []Outcome
		wantFailed, wantUnknown int
		wantErr                 error
	}{
		{name: "one failed, two undecided, one passed", confirm: []Outcome{Failed, Undecided, Undecided, Passed}, wantFailed: 1, wantUnknown: 2},
		{name: "every one undecided", confirm: []Outcome{Undecided, Undecided}, wantUnknown: 2, wantErr: ErrNotConfirmed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := 0
			trial := func(context.Context, *scenarios.Scenario) (Outcome, string, error) {
				n++
				if n <= 3 {
					return Failed, "", nil // the search's three runs
				}
				return tt.confirm[n-4], budgetOut, nil
			}
			res, err := Shrink(context.Background(), scenario(), trial, Options{Tries: 1, Need: 1, MaxRuns: 3, Confirm: len(tt.confirm)})
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("Shrink = %v, want %v", err, tt.wantErr)
			}
			if res.Confirmed != len(tt.confirm) || res.Failed != tt.wantFailed || res.ConfirmUndecided != tt.wantUnknown {
				t.Errorf("failed in %d of %d confirmation runs, %d undecided; want %d of %d, %d",
					res.Failed, res.Confirmed, res.ConfirmUndecided, tt.wantFailed, len(tt.confirm), tt.wantUnknown)
			}
		})
	}
}
