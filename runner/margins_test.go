package runner_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/history"
	"github.com/jepsen-lite/jepsen-lite/reports"
	"github.com/jepsen-lite/jepsen-lite/runner"
)

// TestResultsHaveMargins runs Kleppmann's pause on one Redis and checks
// that results.json holds the margins of the run's history under the
// check's drift (checker.Margins), with the paused holder's write after its
// deadline as a negative write margin, and that the report has their line.
func TestResultsHaveMargins(t *testing.T) {
	sc := load(t, "redis-single-gc-pause")
	res, err := runner.Run(context.Background(), sc, runner.WithStore(t.TempDir()), runner.WithSeed(1), runner.WithTimeLimit(4*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(res.Dir, reports.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	var stored reports.Results
	if err := json.Unmarshal(b, &stored); err != nil {
		t.Fatal(err)
	}
	h, _, err := history.ReadFile(filepath.Join(res.Dir, reports.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	want := checker.Margins(h, checker.Options{Drift: float64(sc.Lock.Drift) / float64(sc.Lock.TTL)}.EffectiveDrift())
	if !reflect.DeepEqual(stored.Margins, want) || !reflect.DeepEqual(res.Results.Margins, want) {
		t.Fatalf("results.json margins %+v, the run's %+v; want %+v", stored.Margins, res.Results.Margins, want)
	}
	if len(want) != 1 || want[0].Write == nil || want[0].Write.Margin >= 0 {
		t.Errorf("margins %+v: want key k's write margin negative (the paused holder wrote after its until)", want)
	}
	page, err := os.ReadFile(filepath.Join(res.Dir, reports.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), `id="margins"`) {
		t.Error("report.html has no margins line")
	}
}
