package reports

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/checker/synth"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// benchHistory1M is the checker's synthetic history of 1,000,000 ops (16
// workers, 4 keys, 1% info, fencing tokens, a fault every ~1000 ops) with
// one planted double hold, and its checked results.
func benchHistory1M(b *testing.B) (history.History, *Results) {
	h := synth.Generate(rand.New(rand.NewPCG(1, 2)), synth.Options{Workers: 16, Keys: 4, Ops: 1_000_000, TTL: time.Second, InfoRate: 0.01, Tokens: true, NemesisEvery: 1000})
	if bad, err := synth.Inject(rand.New(rand.NewPCG(3, 4)), h, checker.DoubleHold); err == nil {
		h = bad
	}
	res := checker.Check(context.Background(), h, checker.Options{})
	return h, &Results{Scenario: "synthetic-1m", Seed: 1, Verdict: checker.Overall(res), Checkers: res, Stats: CountStats(h)}
}

// writeBenchRun writes the run directory of benchHistory1M to dir and
// returns its number of anomalies; the history is not kept.
func writeBenchRun(b *testing.B, dir string) int {
	h, r := benchHistory1M(b)
	if err := synth.Write(filepath.Join(dir, HistoryFile), h); err != nil {
		b.Fatal(err)
	}
	if err := WriteResults(dir, r); err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, c := range r.Checkers {
		n += len(c.Anomalies)
	}
	return n
}

// BenchmarkWriteHTML1M writes the report of a 1,000,000-op run directory
// (benchHistory1M), which it draws in summary, reading history.jsonl op by
// op, and reports the size of report.html. Targets: under 10 s and under
// 10 MB.
func BenchmarkWriteHTML1M(b *testing.B) {
	dir := b.TempDir()
	anomalies := writeBenchRun(b, dir)
	runtime.GC()
	b.ResetTimer()
	for b.Loop() {
		if err := WriteHTML(dir); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	data, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(len(data))/1e6, "MB-report")
	if anomalies == 0 || !bytes.Contains(data, []byte("double-hold")) || !bytes.Contains(data, []byte(`id="summary-note"`)) {
		b.Error("the report of the 1M-op run is not drawn in summary with its double-hold")
	}
}

// BenchmarkWriteHTMLHeap1M reports the most heap WriteHTML holds over what
// was in use before it, writing the report of the 1M-op run directory
// (the collector runs after every 1% of growth, so the heap in use is
// close to what is live).
func BenchmarkWriteHTMLHeap1M(b *testing.B) {
	dir := b.TempDir()
	writeBenchRun(b, dir)
	defer debug.SetGCPercent(debug.SetGCPercent(1))
	b.ResetTimer()
	for b.Loop() {
		runtime.GC()
		peak := peakHeap(func() {
			if err := WriteHTML(dir); err != nil {
				b.Fatal(err)
			}
		})
		b.ReportMetric(peak/1e6, "MB-peak-heap")
	}
}

// peakHeap runs fn and returns the most heap in use while it ran, above
// what was in use when it began, sampled every millisecond.
func peakHeap(fn func()) float64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	heap := func() float64 {
		metrics.Read(sample)
		return float64(sample[0].Value.Uint64())
	}
	base := heap()
	peak := base
	done, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				peak = max(peak, heap())
			}
		}
	}()
	fn()
	close(done)
	<-sampled
	return peak - base
}

// BenchmarkRenderHTMLExact1M renders the report of benchHistory1M as a
// short history's is drawn, every op, from the history in memory, for
// comparison with BenchmarkWriteHTML1M.
func BenchmarkRenderHTMLExact1M(b *testing.B) {
	h, r := benchHistory1M(b)
	var n countingWriter
	b.ResetTimer()
	for b.Loop() {
		n = 0
		if err := RenderHTML(&n, ReportInput{Results: *r, History: h}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)/1e6, "MB-report")
}

// countingWriter counts the bytes written to it.
type countingWriter int

func (w *countingWriter) Write(p []byte) (int, error) {
	*w += countingWriter(len(p))
	return len(p), nil
}

// BenchmarkOpenReport1M opens the report of the 1M-op run directory in
// headless Chromium and reports the time from navigating to it until its
// timeline is drawn. REPORTS_BENCH_REPORT names another report.html to
// open instead (the report of a longer run).
func BenchmarkOpenReport1M(b *testing.B) {
	page := os.Getenv("REPORTS_BENCH_REPORT")
	if page == "" {
		dir := b.TempDir()
		writeBenchRun(b, dir)
		if err := WriteHTML(dir); err != nil {
			b.Fatal(err)
		}
		page = filepath.Join(dir, ReportFile)
	}
	br := startBrowser(b)
	var total time.Duration
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		br.open("about:blank#")
		b.StartTimer()
		start := time.Now()
		br.call("Page.navigate", map[string]any{"url": "file://" + page})
		br.waitFor(`document.readyState === "complete" && window.jepsenLiteReport && document.querySelector("#timeline svg")`)
		total += time.Since(start)
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s-to-drawn")
}
