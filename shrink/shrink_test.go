package shrink

import (
	"context"
	"errors"
	"slices"
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
	trial := func(_ context.Context, sc *scenarios.Scenario) (bool, error) {
		runs++
		if runs%3 == 0 {
			return false, nil // a flaky miss
		}
		for _, st := range sc.Nemesis.Steps {
			if st.Duration > time.Second && sc.Workers >= 2 && sc.Duration >= st.At+st.Duration {
				return true, nil
			}
		}
		return false, nil
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
	for _, c := range res.Changes {
		t.Log(c)
	}
}

func TestShrinkRefusesWhatDoesNotFail(t *testing.T) {
	never := func(context.Context, *scenarios.Scenario) (bool, error) { return false, nil }
	if _, err := Shrink(context.Background(), scenario(), never, Options{}); !errors.Is(err, ErrDoesNotFail) {
		t.Fatalf("Shrink = %v, want ErrDoesNotFail", err)
	}
	random := scenario()
	random.Nemesis.Random = &nemesis.RandomSpec{}
	always := func(context.Context, *scenarios.Scenario) (bool, error) { return true, nil }
	if _, err := Shrink(context.Background(), random, always, Options{}); err == nil {
		t.Fatal("Shrink of a random schedule: no error")
	}
}

// TestShrinkStopsAtItsBudget: a budget of 3 runs ends the search with a
// scenario that still failed, marked exhausted.
func TestShrinkStopsAtItsBudget(t *testing.T) {
	always := func(context.Context, *scenarios.Scenario) (bool, error) { return true, nil }
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
	trial := func(context.Context, *scenarios.Scenario) (bool, error) {
		n++
		return n <= 3, nil // the search's three runs fail, the confirmation's pass
	}
	res, err := Shrink(context.Background(), scenario(), trial, Options{Tries: 1, Need: 1, MaxRuns: 3, Confirm: 2})
	if !errors.Is(err, ErrNotConfirmed) {
		t.Fatalf("Shrink = %v, want ErrNotConfirmed", err)
	}
	if res == nil || res.Failed != 0 || res.Confirmed != 2 {
		t.Fatalf("result %+v: want 0 of 2 confirmation runs failed", res)
	}
	once := 0
	flaky := func(context.Context, *scenarios.Scenario) (bool, error) {
		once++
		return once <= 3 || once == 5, nil // one confirmation run of two fails
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
	trial := func(context.Context, *scenarios.Scenario) (bool, error) {
		n++
		if n > 4 {
			return false, boom
		}
		return true, nil
	}
	if _, err := Shrink(context.Background(), scenario(), trial, Options{}); !errors.Is(err, boom) {
		t.Fatalf("Shrink = %v, want %v", err, boom)
	}
}
