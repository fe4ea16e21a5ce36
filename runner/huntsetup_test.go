package runner_test

import (
	"context"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/hunt"
	"github.com/jepsen-lite/jepsen-lite/reports"
	"github.com/jepsen-lite/jepsen-lite/runner"
)

// TestHuntSetupFailures hunts with a backend that starts no cluster (its
// Start fails), so no server runs: a run whose cluster will not start
// after validation passed is a stored run of unknown verdict with its
// setup error, each kind makes hunt.MaxSetupFailures of them and gives the
// rest up, and no kind is called not applicable; a backend that validation
// finds cannot run the system makes every kind not applicable with
// nothing started and nothing stored.
func TestHuntSetupFailures(t *testing.T) {
	tests := []struct {
		name    string
		systems []string // the systems the backend declares it runs
		// want for each row: its runs, and whether it is not applicable
		runs          int
		notApplicable bool
	}{
		{name: "a cluster that will not start", systems: []string{"redis"}, runs: hunt.MaxSetupFailures},
		{name: "a system the backend does not run", systems: []string{"postgres"}, notApplicable: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store := t.TempDir()
			b := &refusingBackend{systems: tc.systems}
			rep, err := runner.Hunt(context.Background(), load(t, "redis-single-baseline"), hunt.Options{Faults: []string{"kill"}, Runs: 5},
				runner.WithStore(store), runner.WithBackendOf(b))
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Rows) != 2 {
				t.Fatalf("rows %+v, want none and kill", rep.Rows)
			}
			for _, r := range rep.Rows {
				if r.Runs != tc.runs || r.Unknown != tc.runs || r.SetupFailed != tc.runs || (r.NotApplicable != "") != tc.notApplicable {
					t.Errorf("%s: %+v; want %d runs, all unknown with failed setups, not applicable: %v", r.Fault, r, tc.runs, tc.notApplicable)
				}
				if gaveUp := strings.Contains(r.SetupGaveUp, "this backend starts nothing"); gaveUp == tc.notApplicable {
					t.Errorf("%s: gave up %q; want the backend's error: %v", r.Fault, r.SetupGaveUp, !tc.notApplicable)
				}
			}
			var stored []string
			filepath.WalkDir(store, func(path string, d fs.DirEntry, err error) error {
				if err == nil && d.Name() == reports.ResultsFile {
					if res, rerr := reports.ReadResults(filepath.Dir(path)); rerr != nil || !strings.Contains(res.SetupError, "this backend starts nothing") {
						t.Errorf("%s: %+v, %v; want the setup's error", path, res, rerr)
					}
					stored = append(stored, path)
				}
				return nil
			})
			if want := 2 * tc.runs; len(stored) != want || b.starts != want {
				t.Errorf("%d runs stored, %d clusters asked to start; want %d", len(stored), b.starts, want)
			}
		})
	}
}
