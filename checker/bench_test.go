package checker

import (
	"context"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/jepsen-lite/jepsen-lite/checker/synth"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// bigOptions is the benchmark history of docs/performance.md ("Checker and history"):
// 1,000,000 ops, 16 workers, 4 keys, 1% unknown outcomes, fenced.
var bigOptions = synth.Options{Workers: 16, Keys: 4, Ops: 1_000_000, TTL: time.Second, InfoRate: 0.01, Tokens: true}

func benchHistory(b *testing.B, opts synth.Options) history.History {
	b.Helper()
	h := synth.Generate(rand.New(rand.NewPCG(1, 1)), opts)
	b.ReportMetric(float64(len(h)), "ops")
	return h
}

func BenchmarkCheck1M(b *testing.B) {
	h := benchHistory(b, bigOptions)
	b.ResetTimer()
	for b.Loop() {
		res := Check(context.Background(), h, Options{})
		if v := Overall(res); v != Valid {
			b.Fatalf("verdict %s: %+v", v, res)
		}
	}
}

// BenchmarkLiveness1M measures the liveness report (apart from the verdict)
// over the same history as BenchmarkCheck1M.
func BenchmarkLiveness1M(b *testing.B) {
	h := benchHistory(b, bigOptions)
	b.ResetTimer()
	for b.Loop() {
		if l := Liveness(h, LivenessOptions{}); l.Verdict == Invalid || l.Grants == 0 {
			b.Fatalf("liveness %s with %d grants: %+v", l.Verdict, l.Grants, l.Anomalies)
		}
	}
}

// BenchmarkLivenessAllUp1M measures the liveness report over the benchmark
// history made a version 3 history (a header op in front) without
// availability records: every node is up throughout, so the unavailable
// rule judges every stretch between grants. (The plain benchmark history
// has no header and begins with a nemesis op, so there the rule judges
// nothing.)
func BenchmarkLivenessAllUp1M(b *testing.B) {
	h := append(history.History{history.Header()}, benchHistory(b, bigOptions)...)
	for i := range h {
		h[i].Index = i
	}
	b.ResetTimer()
	for b.Loop() {
		if l := Liveness(h, LivenessOptions{}); l.Verdict == Invalid || l.Grants == 0 {
			b.Fatalf("liveness %s with %d grants: %+v", l.Verdict, l.Grants, l.Anomalies[0])
		}
	}
}

// BenchmarkCheckWithLiveness1M is BenchmarkCheck1M with the liveness report
// over the same facts: what every run and `jepsen-lite check` do.
func BenchmarkCheckWithLiveness1M(b *testing.B) {
	h := benchHistory(b, bigOptions)
	b.ResetTimer()
	for b.Loop() {
		res, live := CheckWithLiveness(context.Background(), h, Options{}, LivenessOptions{})
		if v := Overall(res); v != Valid || live == nil || live.Verdict == Invalid {
			b.Fatalf("verdict %s, liveness %+v", v, live)
		}
	}
}

func BenchmarkCheckEach1M(b *testing.B) {
	h := benchHistory(b, bigOptions)
	for _, c := range Checkers(Options{}) {
		b.Run(c.Name(), func(b *testing.B) {
			for b.Loop() {
				if r := c.Check(context.Background(), h); r.Verdict != Valid {
					b.Fatalf("%s: %s %s", c.Name(), r.Verdict, r.Note)
				}
			}
		})
	}
}

func BenchmarkCheck100kSingleKey(b *testing.B) {
	h := benchHistory(b, synth.Options{Workers: 16, Keys: 1, Ops: 100_000, TTL: time.Second, InfoRate: 0.01, Tokens: true})
	b.ResetTimer()
	for b.Loop() {
		if v := Overall(Check(context.Background(), h, Options{})); v != Valid {
			b.Fatalf("verdict %s", v)
		}
	}
}

// BenchmarkPlainPorcupine1M runs the same model over the same history as
// porcupine alone would: one partition per key, no cuts (the same ops the
// cut check sees, from splitPieces, put back together per key), capped at
// the timeout below.
func BenchmarkPlainPorcupine1M(b *testing.B) {
	h := benchHistory(b, bigOptions)
	const limit = 2 * time.Minute
	b.ResetTimer()
	for b.Loop() {
		res, elapsed := plainPorcupine(h, limit)
		b.ReportMetric(elapsed.Seconds(), "s/check")
		b.Logf("plain porcupine: %s after %v (cap %v)", res, elapsed, limit)
	}
}

func plainPorcupine(h history.History, limit time.Duration) (porcupine.CheckResult, time.Duration) {
	var ops []porcupine.Operation
	keys := map[*lockOp]string{}
	for _, p := range splitPieces(h, DefaultDrift) {
		for _, lo := range p.ops {
			keys[lo] = p.key
			ops = append(ops, porcupine.Operation{ClientId: lo.client, Input: lo, Call: lo.call, Return: lo.ret})
		}
	}
	model := pieceModel("", lockState{holder: -1}, nil)
	model.Partition = func(all []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		for _, o := range all {
			k := keys[o.Input.(*lockOp)]
			byKey[k] = append(byKey[k], o)
		}
		var out [][]porcupine.Operation
		for _, p := range byKey {
			out = append(out, p)
		}
		return out
	}
	start := time.Now()
	res := porcupine.CheckOperationsTimeout(model, ops, limit)
	return res, time.Since(start)
}

// BenchmarkLinearizabilityHeap1M runs the linearizability check over the
// benchmark history and reports the most heap it used above the history
// itself (sampled every millisecond, with the collector running after every
// 1% of growth, so that the heap follows what is live): the pieces it
// holds at once.
func BenchmarkLinearizabilityHeap1M(b *testing.B) {
	h := benchHistory(b, bigOptions)
	defer debug.SetGCPercent(debug.SetGCPercent(1))
	c := &LinearizabilityChecker{Drift: DefaultDrift}
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	heap := func() float64 {
		metrics.Read(sample)
		return float64(sample[0].Value.Uint64())
	}
	b.ResetTimer()
	for b.Loop() {
		runtime.GC()
		base := heap()
		peak := base
		done := make(chan struct{})
		sampled := make(chan struct{})
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
		r := c.checkValid(context.Background(), h)
		close(done)
		<-sampled
		if r.Verdict != Valid {
			b.Fatalf("verdict %s", r.Verdict)
		}
		b.ReportMetric((peak-base)/1e6, "MB-peak-heap")
	}
}

// BenchmarkResourceHeap1M runs the resource check over the benchmark
// history and reports the most heap it used above the history itself,
// sampled as BenchmarkLinearizabilityHeap1M samples it (which counts the
// garbage the collector has not yet reached), and the heap it holds once
// the last op is in, after a collection: what it keeps.
func BenchmarkResourceHeap1M(b *testing.B) {
	h := benchHistory(b, bigOptions)
	b.ResetTimer()
	for b.Loop() {
		var r Result
		var held float64
		peak := peakHeap(func(heap func() float64) {
			rs := newResourceStream(DefaultDrift)
			feed := newFollowedFeed(rs)
			for i := range h {
				feed.add(&h[i])
			}
			runtime.GC()
			held = heap()
			r = rs.result(context.Background(), ResourceChecker{}.Name())
		})
		if r.Verdict != Valid {
			b.Fatalf("verdict %s", r.Verdict)
		}
		b.ReportMetric(peak/1e6, "MB-peak-heap")
		b.ReportMetric(held/1e6, "MB-held")
	}
}

// peakHeap runs run and returns the most heap in use above what was in use
// before it, sampled every millisecond with the collector running after
// every 1% of growth, so that the heap follows what is live; run may read
// the heap above that base itself.
func peakHeap(run func(heap func() float64)) float64 {
	defer debug.SetGCPercent(debug.SetGCPercent(1))
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	heap := func() float64 {
		metrics.Read(sample)
		return float64(sample[0].Value.Uint64())
	}
	runtime.GC()
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
	run(func() float64 { return heap() - base })
	close(done)
	<-sampled
	return peak - base
}

// BenchmarkQueueCheck1M measures the queue check alone, without the
// well-formedness check: on the benchmark history, which has no queue ops,
// and on a queue history of about as many ops (benchQueue); each as the
// check reads it now (stream: op by op) and as it read it before (batch:
// over the shared definitions of the whole history, Analyze), with the
// most heap one check used above the history (peakHeap, outside the
// timing) and, for the stream, what it holds once it has read the last op
// (queueHeld).
func BenchmarkQueueCheck1M(b *testing.B) {
	histories := []struct {
		name string
		h    history.History
	}{
		{"lock", benchHistory(b, bigOptions)},
		{"queue", synthQueue(rand.New(rand.NewPCG(1, 1)), benchQueue)},
	}
	checks := []struct {
		name  string
		check func(history.History) Result
	}{
		{"stream", func(h history.History) Result { return QueueChecker{}.checkValid(context.Background(), h) }},
		{"batch", func(h history.History) Result { return batchQueue(context.Background(), h, Analyze(h)) }},
	}
	for _, hs := range histories {
		for _, c := range checks {
			b.Run(hs.name+"/"+c.name, func(b *testing.B) {
				var r Result
				peak := peakHeap(func(func() float64) { r = c.check(hs.h) })
				if r.Verdict != Valid {
					b.Fatalf("verdict %s: %s", r.Verdict, r.Note)
				}
				for b.Loop() {
					c.check(hs.h)
				}
				b.ReportMetric(float64(len(hs.h)), "ops")
				b.ReportMetric(peak/1e6, "MB-peak-heap")
				if c.name == "stream" {
					b.ReportMetric(queueHeld(hs.h)/1e6, "MB-held-at-end")
				}
			})
		}
	}
}

// BenchmarkLivenessEach1M measures the liveness report alone over the
// benchmark history, as CheckEach1M measures each checker: plain (the
// history as it is, without a header: the unavailable rule judges only
// before its first nemesis op), all-up (a version 3 header in front: every
// node up throughout, so the rule judges every stretch) and over-facts (the
// step of CheckWithLiveness, whose facts are already analyzed); each also
// as it was before it read the history op by op (batch-..., with its own
// Analyze where Liveness had it). The peak-heap ones report the most heap
// the report held above the history (sampled every millisecond, the
// collector running after every 1% of growth).
func BenchmarkLivenessEach1M(b *testing.B) {
	h := benchHistory(b, bigOptions)
	up := withHeader(h)
	f := Analyze(h)
	check := func(b *testing.B, l LivenessResult) {
		if l.Verdict == Invalid || l.Grants == 0 {
			b.Fatalf("liveness %s with %d grants: %+v", l.Verdict, l.Grants, l.Anomalies)
		}
	}
	for _, c := range []struct {
		name string
		run  func() LivenessResult
	}{
		{"plain", func() LivenessResult { return Liveness(h, LivenessOptions{}) }},
		{"all-up", func() LivenessResult { return Liveness(up, LivenessOptions{}) }},
		{"over-facts", func() LivenessResult { return liveness(h, f, LivenessOptions{}) }},
		{"batch-plain", func() LivenessResult { return batchLiveness(h, Analyze(h), LivenessOptions{}) }},
		{"batch-all-up", func() LivenessResult { return batchLiveness(up, Analyze(up), LivenessOptions{}) }},
		{"batch-over-facts", func() LivenessResult { return batchLiveness(h, f, LivenessOptions{}) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				check(b, c.run())
			}
		})
	}
	for _, c := range []struct {
		name string
		run  func() LivenessResult
	}{
		{"peak-heap", func() LivenessResult { return Liveness(up, LivenessOptions{}) }},
		{"batch-peak-heap", func() LivenessResult { return batchLiveness(up, Analyze(up), LivenessOptions{}) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				var l LivenessResult
				b.ReportMetric(peakHeap(func(func() float64) { l = c.run() })/1e6, "MB-peak-heap")
				check(b, l)
			}
		})
	}
}
