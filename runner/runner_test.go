package runner_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/history"
	"github.com/jepsen-lite/jepsen-lite/reports"
	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

func names() scenarios.Names { return runner.Names() }

func load(t *testing.T, name string) *scenarios.Scenario {
	t.Helper()
	sc, err := scenarios.Load(name, names())
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// TestGCPauseScenarios runs the walking skeleton's scenarios end to end
// against a real redis-server and requires each to end as it expects, and
// the stored history to give the same verdict when checked again offline.
func TestGCPauseScenarios(t *testing.T) {
	tests := []struct {
		scenario string
		verdict  checker.Verdict
		kinds    []string
	}{
		{"redis-single-gc-pause", checker.Invalid, []string{checker.StaleWrite, checker.LostUpdate}},
		{"redis-fenced-gc-pause", checker.Valid, nil},
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			store := t.TempDir()
			res, err := runner.Run(context.Background(), load(t, tt.scenario), runner.WithStore(store), runner.WithSeed(1), runner.WithTimeLimit(4*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			r := res.Results
			if r.Verdict != tt.verdict || !r.ExpectationMet {
				t.Fatalf("verdict %s, expectation met %v; checkers: %+v", r.Verdict, r.ExpectationMet, r.Checkers)
			}
			var found []string
			for _, c := range r.Checkers {
				for _, a := range c.Anomalies {
					found = append(found, a.Kind)
					if len(a.Ops) == 0 || a.Message == "" {
						t.Errorf("anomaly %s has no ops or no sentence: %+v", a.Kind, a)
					}
				}
			}
			for _, k := range tt.kinds {
				if !slices.Contains(found, k) {
					t.Errorf("anomaly %s not found; found %v", k, found)
				}
			}
			if tt.verdict == checker.Valid && len(found) > 0 {
				t.Errorf("a valid run reported anomalies %v", found)
			}
			// Offline, from the store alone, the verdict is the same.
			h, info, err := history.ReadFile(filepath.Join(store, reports.LatestLink, reports.HistoryFile))
			if err != nil {
				t.Fatal(err)
			}
			if info.Truncated {
				t.Error("a finished run's history is truncated")
			}
			if err := history.Validate(h); err != nil {
				t.Errorf("the recorded history is malformed: %v", err)
			}
			if last := h[len(h)-1]; !last.IsEnd() {
				t.Errorf("the history's last op is %+v, want the end record", last)
			} else if n := len(h); n > 1 && h[n-2].Time > last.Time {
				t.Errorf("the end record at %v comes before the op before it at %v", last.Time, h[n-2].Time)
			}
			if v := history.Version(h); v != history.FormatVersion || r.HistoryVersion != v {
				t.Errorf("history version %d (results.json says %d), want %d from its header op", v, r.HistoryVersion, history.FormatVersion)
			}
			again := checker.Overall(checker.Check(context.Background(), h, checker.Options{}))
			if again != r.Verdict {
				t.Errorf("offline verdict %s, run verdict %s", again, r.Verdict)
			}
			assertReportMatchesStore(t, res.Dir)
			for _, f := range []string{reports.ScenarioFile, reports.ResultsFile, reports.RunLogFile, "n1.log"} {
				if _, err := os.Stat(filepath.Join(res.Dir, f)); err != nil {
					t.Errorf("run dir lacks %s: %v", f, err)
				}
			}
		})
	}
}

// TestSeedIsRecordedAndReplayed checks that the resolved scenario.yaml holds
// the seed and schedule, and that replaying a run dir reproduces both.
func TestSeedIsRecordedAndReplayed(t *testing.T) {
	store := t.TempDir()
	sc := load(t, "redis-single-gc-pause")
	first, err := runner.Run(context.Background(), sc, runner.WithStore(store), runner.WithSeed(42), runner.WithTimeLimit(1500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	replayed := load(t, first.Dir)
	if replayed.Seed != 42 {
		t.Fatalf("stored seed %d, want 42", replayed.Seed)
	}
	second, err := runner.Run(context.Background(), replayed, runner.WithStore(store))
	if err != nil {
		t.Fatal(err)
	}
	a, err := os.ReadFile(filepath.Join(first.Dir, reports.ScenarioFile))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(second.Dir, reports.ScenarioFile))
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != string(b) {
		t.Errorf("replay resolved a different scenario:\n%s\n---\n%s", a, b)
	}
	if len(replayed.Nemesis.Steps) == 0 {
		t.Error("the stored scenario lost its fault schedule")
	}
}

// TestGuardedResource runs the etcd pause with the register kept in etcd and
// every write guarded by the lock key: the paused worker's late write must
// never be accepted (etcd refuses it, a failed write naming the stale token,
// or it is still waiting behind TCP's retransmission of what was sent during
// the cut when the worker's deadline ends it, an unknown outcome), and the
// resource must stay exact while the double hold is still reported. Which of
// the two the late write meets depends on the retransmission timer, not on
// the seed; clients' TestGuardedResource checks etcd's refusal itself.
func TestGuardedResource(t *testing.T) {
	store := t.TempDir()
	res, err := runner.Run(context.Background(), load(t, "etcd-mutex-guarded"), runner.WithStore(store), runner.WithSeed(1))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Results.ExpectationMet {
		t.Fatalf("verdict %s, expectation not met: %+v", res.Results.Verdict, res.Results.Checkers)
	}
	h, _, err := history.ReadFile(filepath.Join(res.Dir, reports.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	resumed := -1 // the index of the paused worker's resume
	late := -1    // the index of its late write's invoke
	for _, op := range h {
		// The harness cannot see when etcd applied a guarded write.
		if op.F == history.FWrite && op.Applied != 0 {
			t.Errorf("op %d: a guarded write records applied %v", op.Index, op.Applied)
		}
		switch {
		case op.IsNemesis() && op.F == "client-resume":
			resumed = op.Index
		case resumed >= 0 && late < 0 && op.Process == 0 && op.F == history.FWrite && op.Type == history.Invoke:
			late = op.Index
		case late >= 0 && op.Process == 0 && op.F == history.FWrite && op.Type != history.Invoke:
			refused := op.Type == history.Fail && strings.Contains(op.Error, "stale fencing token")
			if !refused && op.Type != history.Info {
				t.Fatalf("op %d: the paused worker's late write ended %s %q; want refused for its stale token, or unknown", op.Index, op.Type, op.Error)
			}
			return
		}
	}
	t.Fatalf("no late write of the paused worker completed (resume at op %d, write invoked at op %d)", resumed, late)
}
