package checker

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker/synth"
)

// unknownRichBudget is the time budget of one history's check in
// BenchmarkUnknownRich.
const unknownRichBudget = 2 * time.Second

// unknownRun is what BenchmarkUnknownRich records of one history.
type unknownRun struct {
	seed      uint64
	opts      synth.Options
	ops       int
	unknown   float64
	elapsed   time.Duration
	verdict   Verdict
	liveness  Verdict
	outOfTime bool // a check's verdict is unknown because it ran out of its budget
	peak      float64
	planted   string // the anomaly kind planted (synth.Inject), if any
}

// BenchmarkUnknownRich checks UNKNOWN_RICH_N histories (default 1000; seeds
// 1 to N) rich in ops of unknown outcome made by faults
// (synth.UnknownRich: up to 10,000 ops, at least 20% of them unknown) as
// `jepsen-lite check` does (every checker and the liveness report), each
// with a 2 s budget (a context deadline), and reports the p50, p90, p99 and
// max wall time, the most heap one check held above its history (sampled
// every millisecond, peakHeap), the least fraction of invokes of unknown
// outcome among the histories, and how many histories were left undecided
// for want of time (a check unknown because it ran out of its budget, as
// opposed to unknown for another reason); it logs the ten slowest seeds
// with their shapes. With UNKNOWN_RICH_DUMP=seed it writes that seed's
// history to /tmp/unknown-rich-<seed>.jsonl (for `jepsen-lite check`) and
// checks nothing.
func BenchmarkUnknownRich(b *testing.B) {
	if s := os.Getenv("UNKNOWN_RICH_DUMP"); s != "" {
		dumpUnknownRich(b, s)
		return
	}
	n := 1000
	if s := os.Getenv("UNKNOWN_RICH_N"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatalf("UNKNOWN_RICH_N=%q: %v", s, err)
		}
	}
	for b.Loop() {
		runs := make([]unknownRun, 0, n)
		for seed := uint64(1); seed <= uint64(n); seed++ {
			runs = append(runs, checkUnknownRich(seed))
		}
		reportUnknownRich(b, runs)
	}
}

// checkUnknownRich generates the history of seed and checks it. Every
// even seed's history has one anomaly planted (synth.Inject, the kinds in
// turn), where the history offers a place: an invalid piece costs the
// culprit's search besides the decision.
func checkUnknownRich(seed uint64) unknownRun {
	o := synth.UnknownRich(seed)
	h := synth.Generate(synth.UnknownRichRand(seed), o)
	run := unknownRun{seed: seed, opts: o, ops: len(h), unknown: synth.UnknownFraction(h)}
	if seed%2 == 0 {
		kind := synth.Kinds[seed/2%uint64(len(synth.Kinds))]
		if bad, err := synth.Inject(synth.UnknownRichRand(seed), h, kind); err == nil {
			h, run.planted = bad, kind
		}
	}
	run.peak = peakHeap(func(func() float64) {
		ctx, cancel := context.WithTimeout(context.Background(), unknownRichBudget)
		defer cancel()
		start := time.Now()
		res, live := CheckWithLiveness(ctx, h, Options{}, LivenessOptions{})
		run.elapsed = time.Since(start)
		run.verdict = Overall(res)
		if live != nil {
			run.liveness = live.Verdict
		}
		for _, r := range res {
			if r.Verdict == Unknown && (strings.Contains(r.Note, "timed out") || strings.Contains(r.Note, "in time")) {
				run.outOfTime = true
			}
		}
	})
	return run
}

// reportUnknownRich reports the figures of BenchmarkUnknownRich's runs.
func reportUnknownRich(b *testing.B, runs []unknownRun) {
	times := make([]time.Duration, len(runs))
	peak, outOfTime, least := 0.0, 0, 1.0
	verdicts := map[string]int{}
	for i, r := range runs {
		times[i] = r.elapsed
		peak = max(peak, r.peak)
		least = min(least, r.unknown)
		if r.outOfTime {
			outOfTime++
		}
		planted := "none planted"
		if r.planted != "" {
			planted = "planted"
		}
		verdicts[fmt.Sprintf("%s, %s/liveness-%s", planted, r.verdict, r.liveness)]++
	}
	slices.Sort(times)
	q := func(p float64) float64 { return times[min(len(times)-1, int(p*float64(len(times))))].Seconds() }
	b.ReportMetric(q(0.5), "p50-s")
	b.ReportMetric(q(0.9), "p90-s")
	b.ReportMetric(q(0.99), "p99-s")
	b.ReportMetric(times[len(times)-1].Seconds(), "max-s")
	b.ReportMetric(peak/1e6, "MB-max-peak-heap")
	b.ReportMetric(float64(outOfTime), "out-of-time")
	b.ReportMetric(100*least, "least-unknown-%")
	b.Logf("%d histories; verdicts (overall/liveness): %v; %d undecided for want of time", len(runs), verdicts, outOfTime)
	slow := slices.Clone(runs)
	slices.SortFunc(slow, func(x, y unknownRun) int { return int(y.elapsed - x.elapsed) })
	var top strings.Builder // one log entry: the benchmark's log keeps only its first ten
	for _, r := range slow[:min(10, len(slow))] {
		lock := "lease"
		if r.opts.Session {
			lock = "session"
		}
		fmt.Fprintf(&top, "\nseed %d: %v, %s (out of time %v), peak heap %.1f MB; %d workers, %d keys, %d ops, %.1f%% unknown, %s, wait %v, tokens %v",
			r.seed, r.elapsed.Round(time.Millisecond), r.verdict, r.outOfTime, r.peak/1e6, r.opts.Workers, r.opts.Keys, r.ops, 100*r.unknown, lock, r.opts.Faults.Wait, r.opts.Tokens)
	}
	b.Logf("the slowest:%s", top.String())
}

// dumpUnknownRich writes the history of seed s to
// /tmp/unknown-rich-<seed>.jsonl.
func dumpUnknownRich(b *testing.B, s string) {
	seed, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		b.Fatalf("UNKNOWN_RICH_DUMP=%q: %v", s, err)
	}
	path := fmt.Sprintf("/tmp/unknown-rich-%d.jsonl", seed)
	n, err := synth.WriteFile(path, synth.UnknownRichRand(seed), synth.UnknownRich(seed))
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("wrote %d ops of seed %d to %s", n, seed, path)
}
