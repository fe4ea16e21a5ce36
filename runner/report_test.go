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

// TestReportStageSummarizesLongHistories: the report stage writes the
// report of a history longer than reports.LongHistoryOps from its summary,
// read op by op from history.jsonl, and a shorter one's from the history
// read whole.
func TestReportStageSummarizesLongHistories(t *testing.T) {
	for _, tc := range []struct {
		name string
		ops  int
		long bool
	}{
		{"short", 2000, false},
		{"long", reports.LongHistoryOps + 1000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newTestStore(t)
			st.log = log.New(io.Discard, "", 0)
			rec := st.startClock()
			opts := synth.Options{Workers: 4, Keys: 2, Ops: tc.ops, TTL: 100 * time.Millisecond, InfoRate: 0.02}
			for _, op := range synth.Generate(rand.New(rand.NewPCG(1, 2)), opts) {
				// times of the generator's clock: the recorder stamps its
				// own, faster, which makes some grants early (anomalies to
				// draw)
				op.Applied, op.Until = 0, 0
				rec.Record(op)
			}
			rd := recorded{ops: rec.Len(), stats: st.counts.stats()}
			if err := st.finishHistory(); err != nil {
				t.Fatal(err)
			}
			results := &reports.Results{Scenario: "report-stage", Stats: rd.stats, Expected: &checker.Expectation{}}
			checkRecorded(context.Background(), results, st, rd, checker.Options{})
			if results.Verdict == checker.Unknown {
				t.Fatalf("the history was not checked: %+v", results.Checkers)
			}
			p := &plan{cfg: &config{store: filepath.Dir(st.dir)}}
			if err := report(context.Background(), p, st, rd, verdict{results: results}); err != nil {
				t.Fatal(err)
			}
			page, err := os.ReadFile(filepath.Join(st.dir, reports.ReportFile))
			if err != nil {
				t.Fatal(err)
			}
			if long := strings.Contains(string(page), `id="summary-note"`); long != tc.long {
				t.Errorf("a history of %d ops drawn in summary: %v, want %v", rd.ops, long, tc.long)
			}
		})
	}
}
