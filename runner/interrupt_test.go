package runner

import (
	"context"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/checker/synth"
	"github.com/jepsen-lite/jepsen-lite/reports"
)

// TestCheckStageInterrupted interrupts the check stage of a recorded run
// (its context ends, as at Ctrl-C): the verdict is unknown and says the
// check was interrupted and how to check the stored history later, and
// the report stage still writes results.json saying so, and a report.html.
func TestCheckStageInterrupted(t *testing.T) {
	st := newTestStore(t)
	st.log = log.New(io.Discard, "", 0)
	rec := st.startClock()
	opts := synth.Options{Workers: 4, Keys: 2, Ops: 50_000, TTL: time.Second, InfoRate: 0.01}
	for _, op := range synth.Generate(rand.New(rand.NewPCG(3, 4)), opts) {
		op.Applied, op.Until = 0, 0
		rec.Record(op)
	}
	rd := recorded{ops: rec.Len(), stats: st.counts.stats()}
	if err := st.finishHistory(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	results := &reports.Results{Scenario: "interrupted-check", Stats: rd.stats, Expected: &checker.Expectation{}}
	checkRecorded(ctx, results, st, rd, checker.Options{Timeout: time.Hour})
	if results.Verdict != checker.Unknown || len(results.Checkers) != 1 {
		t.Fatalf("interrupted check: verdict %s, checkers %+v; want unknown, one note", results.Verdict, results.Checkers)
	}
	note := results.Checkers[0].Note
	if !strings.Contains(note, "the check was interrupted") || !strings.Contains(note, "jepsen-lite check "+st.dir) {
		t.Errorf("note %q does not say the check was interrupted and how to check it later", note)
	}
	p := &plan{cfg: &config{store: filepath.Dir(st.dir)}}
	if err := report(ctx, p, st, rd, verdict{results: results}); err != nil {
		t.Fatal(err)
	}
	stored, err := reports.ReadResults(st.dir)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Verdict != checker.Unknown || len(stored.Checkers) != 1 || stored.Checkers[0].Note != note {
		t.Errorf("results.json: verdict %s, checkers %+v; want unknown with the note %q", stored.Verdict, stored.Checkers, note)
	}
	if _, err := os.Stat(filepath.Join(st.dir, reports.ReportFile)); err != nil {
		t.Errorf("no report after an interrupted check: %v", err)
	}
}
