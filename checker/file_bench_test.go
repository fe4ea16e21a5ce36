package checker

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker/synth"
)

// benchFile writes the benchmark history (bigOptions) to a file and returns
// its path.
func benchFile(b *testing.B) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "h.jsonl")
	n, err := synth.WriteFile(path, rand.New(rand.NewPCG(1, 1)), bigOptions)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(n), "ops")
	return path
}

// BenchmarkCheckFile1M measures CheckFile, the streaming check of a stored
// history, over the 1M-op benchmark history: reading, every checker and
// the liveness report.
func BenchmarkCheckFile1M(b *testing.B) {
	path := benchFile(b)
	b.ResetTimer()
	for b.Loop() {
		res, err := CheckFile(context.Background(), path, FileOptions{})
		if err != nil || Overall(res.Results) != Valid {
			b.Fatalf("err %v, results %+v", err, res.Results)
		}
	}
}

// BenchmarkCheckFileHeap1M reports the most live heap CheckFile holds
// while it checks the 1M-op history, sampled every millisecond after a
// collection every 1% of heap growth (GOGC=1), as peak-MB.
func BenchmarkCheckFileHeap1M(b *testing.B) {
	path := benchFile(b)
	defer debug.SetGCPercent(debug.SetGCPercent(1))
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var peak uint64
	b.ResetTimer()
	for b.Loop() {
		runtime.GC()
		done := make(chan struct{})
		go func() {
			t := time.NewTicker(time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-t.C:
					metrics.Read(sample)
					peak = max(peak, sample[0].Value.Uint64())
				}
			}
		}()
		_, err := CheckFile(context.Background(), path, FileOptions{})
		close(done)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-MB")
}
