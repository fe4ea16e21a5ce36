package reports

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/checker/synth"
)

// BenchmarkWriteHTML1M writes the report of a 1,000,000-op run directory
// (the checker's synthetic history: 16 workers, 4 keys, 1% info, fencing
// tokens, one planted double hold so that anomalies are listed) and reports
// the size of report.html. Targets: under 10 s and under 20 MB.
func BenchmarkWriteHTML1M(b *testing.B) {
	dir := b.TempDir()
	h := synth.Generate(rand.New(rand.NewPCG(1, 2)), synth.Options{Workers: 16, Keys: 4, Ops: 1_000_000, TTL: time.Second, InfoRate: 0.01, Tokens: true, NemesisEvery: 1000})
	if bad, err := synth.Inject(rand.New(rand.NewPCG(3, 4)), h, checker.DoubleHold); err == nil {
		h = bad
	}
	if err := synth.Write(filepath.Join(dir, HistoryFile), h); err != nil {
		b.Fatal(err)
	}
	res := checker.Check(context.Background(), h, checker.Options{})
	r := &Results{Scenario: "synthetic-1m", Seed: 1, Verdict: checker.Overall(res), Checkers: res, Stats: CountStats(h)}
	if err := WriteResults(dir, r); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if err := WriteHTML(dir); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	st, err := os.Stat(filepath.Join(dir, ReportFile))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(st.Size())/1e6, "MB-report")
	anomalies := 0
	for _, c := range res {
		anomalies += len(c.Anomalies)
	}
	data, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		b.Fatal(err)
	}
	if anomalies > 0 && !bytes.Contains(data, []byte("double-hold")) {
		b.Error("the report of the 1M-op run does not list its double-hold")
	}
}
