package reference_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/checker/reference"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// drifts are the drifts the differential tests use: checker.Options.Drift
// and the same drift as the reference takes it.
var drifts = []struct {
	opts float64
	ref  float64
}{
	{checker.NoDrift, 0},
	{0.01, 0.01},
	{0.2, 0.2},
}

// differentialHistories is how many generated histories TestDifferential
// compares (fewer with -short).
const differentialHistories = 10000

// livenessBounds are the liveness bounds the differential tests use, scaled
// to the generated histories (a few hundred milliseconds to seconds long);
// each history takes the bounds of its seed.
var livenessBounds = []checker.LivenessOptions{
	{Window: 50 * time.Millisecond, UnavailableWindow: 50 * time.Millisecond, Attempts: 1},
	{Window: 100 * time.Millisecond, UnavailableWindow: 80 * time.Millisecond, Attempts: 2},
	{Window: 200 * time.Millisecond, UnavailableWindow: 150 * time.Millisecond, Attempts: 3, RetransmitFirst: 5 * time.Millisecond, RetransmitMax: 60 * time.Millisecond},
	{Window: 30 * time.Millisecond, UnavailableWindow: 100 * time.Millisecond, Attempts: 2, RetransmitFirst: time.Millisecond, RetransmitMax: 20 * time.Millisecond},
}

// mismatch is how the fast checkers and the reference disagree on one
// history, safety and liveness (under the bounds livenessBounds[bounds]),
// or "" when they agree.
func mismatch(h history.History, drift, bounds int) (string, []checker.Result, reference.Result) {
	d := drifts[drift]
	fast := checker.Check(context.Background(), h, checker.Options{Drift: d.opts})
	ref, err := reference.Check(h, d.ref)
	if err != nil {
		return "the reference refused the history: " + err.Error(), fast, ref
	}
	diff := differences(fast, ref)
	if ld := livenessDifferences(h, bounds); ld != "" {
		diff = strings.TrimPrefix(diff+"; "+ld, "; ")
	}
	return diff, fast, ref
}

// livenessOf returns both sides' liveness conclusions on h under
// livenessBounds[bounds], the fast one's anomalies as findings.
func livenessOf(h history.History, bounds int) (checker.LivenessResult, reference.LivenessResult, []reference.Finding, error) {
	o := livenessBounds[bounds]
	fast := checker.Liveness(h, o)
	ref, err := reference.Liveness(h, reference.LivenessOptions{Window: o.Window, UnavailableWindow: o.UnavailableWindow, Attempts: o.Attempts,
		RetransmitFirst: o.RetransmitFirst, RetransmitMax: o.RetransmitMax})
	var got []reference.Finding
	for _, a := range fast.Anomalies {
		got = append(got, reference.Finding{Kind: a.Kind, Key: a.Key, Start: int64(a.Window.Start), End: int64(a.Window.End)})
	}
	slices.SortFunc(got, func(a, b reference.Finding) int {
		return strings.Compare(fmt.Sprintf("%s %s %020d", a.Key, a.Kind, a.Start), fmt.Sprintf("%s %s %020d", b.Key, b.Kind, b.Start))
	})
	return fast, ref, got, err
}

// livenessDifferences describes how the liveness verdicts, kinds and
// windows differ; "" when they agree.
func livenessDifferences(h history.History, bounds int) string {
	fast, ref, got, err := livenessOf(h, bounds)
	if err != nil {
		return "the reference refused the history for liveness: " + err.Error()
	}
	var diffs []string
	if fast.Verdict != ref.Verdict {
		diffs = append(diffs, fmt.Sprintf("liveness %s, reference %s", fast.Verdict, ref.Verdict))
	}
	if !slices.Equal(got, ref.Findings) {
		diffs = append(diffs, fmt.Sprintf("liveness kinds %v, reference %v", findingKinds(got), findingKinds(ref.Findings)))
		if slices.Equal(findingKinds(got), findingKinds(ref.Findings)) {
			diffs[len(diffs)-1] = "liveness windows differ"
		}
	}
	return strings.Join(diffs, "; ")
}

// findingKinds is the sorted kinds of fs, one per finding.
func findingKinds(fs []reference.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Kind)
	}
	slices.Sort(out)
	return out
}

// differences describes how fast and ref differ: the overall verdict and
// each checker's anomaly kinds; "" when they agree.
func differences(fast []checker.Result, ref reference.Result) string {
	var diffs []string
	if v := checker.Overall(fast); v != ref.Verdict {
		diffs = append(diffs, fmt.Sprintf("verdict %s, reference %s", v, ref.Verdict))
	}
	for _, name := range reference.Names {
		got := fastKinds(fast, name)
		if want := ref.Kinds[name]; !slices.Equal(got, want) {
			diffs = append(diffs, fmt.Sprintf("%s %v, reference %v", name, got, want))
		}
	}
	return strings.Join(diffs, "; ")
}

// fastKinds is the sorted, distinct anomaly kinds checker name found.
func fastKinds(res []checker.Result, name string) []string {
	var kinds []string
	for _, r := range res {
		if r.Name != name {
			continue
		}
		for _, a := range r.Anomalies {
			kinds = append(kinds, a.Kind)
		}
	}
	slices.Sort(kinds)
	return slices.Compact(kinds)
}

// jsonl renders h as JSON lines, ready to be saved as a fixture.
func jsonl(h history.History) string {
	var b []byte
	for _, op := range h {
		b = history.AppendJSON(b, op)
		b = append(b, '\n')
	}
	return string(b)
}

// minimize drops whole ops of h (an invoke with its completion, or a
// nemesis op) for as long as the history stays well-formed and the
// disagreement stays the same, and returns what is left.
func minimize(h history.History, diff string, drift, bounds int) history.History {
	for {
		shrunk := false
		for i := 0; i < len(h); i++ {
			drop := []int{i}
			if op := h[i]; !op.IsNemesis() && op.Type == history.Invoke {
				for j := i + 1; j < len(h); j++ {
					if h[j].Process == op.Process {
						if h[j].Type != history.Invoke {
							drop = append(drop, j)
						}
						break
					}
				}
			}
			var c history.History
			for j, op := range h {
				if !slices.Contains(drop, j) {
					op.Index = len(c)
					c = append(c, op)
				}
			}
			if history.Validate(c) != nil {
				continue
			}
			if d, _, _ := mismatch(c, drift, bounds); d == diff {
				h, shrunk = c, true
				i--
			}
		}
		if !shrunk {
			return h
		}
	}
}

// report describes a disagreement: the history, a smallest part of it
// that disagrees the same way, and both conclusions.
func report(h history.History, diff string, drift, bounds int, fast []checker.Result, ref reference.Result) string {
	var s strings.Builder
	fmt.Fprintf(&s, "disagreement (drift %v, liveness bounds %+v): %s\n", drifts[drift].ref, livenessBounds[bounds], diff)
	if m := minimize(h, diff, drift, bounds); len(m) < len(h) {
		_, mfast, mref := mismatch(m, drift, bounds)
		fmt.Fprintf(&s, "minimized to %d ops:\n", len(m))
		s.WriteString(conclusions(mfast, mref))
		s.WriteString(livenessConclusions(m, bounds))
		s.WriteString(jsonl(m))
		s.WriteString("the whole history:\n")
	}
	s.WriteString(conclusions(fast, ref))
	s.WriteString(livenessConclusions(h, bounds))
	s.WriteString(jsonl(h))
	return s.String()
}

// livenessConclusions renders both sides' liveness conclusions.
func livenessConclusions(h history.History, bounds int) string {
	fast, ref, _, _ := livenessOf(h, bounds)
	var s strings.Builder
	fmt.Fprintf(&s, "fast liveness: %s %s\n", fast.Verdict, fast.Note)
	for _, a := range fast.Anomalies {
		fmt.Fprintf(&s, "    %s %v %+v: %s\n", a.Kind, a.Ops, *a.Window, a.Message)
	}
	fmt.Fprintf(&s, "reference liveness: %s %+v\n", ref.Verdict, ref.Findings)
	return s.String()
}

// conclusions renders both sides' conclusions.
func conclusions(fast []checker.Result, ref reference.Result) string {
	var s strings.Builder
	s.WriteString("fast checkers:\n")
	for _, r := range fast {
		fmt.Fprintf(&s, "  %s: %s %s\n", r.Name, r.Verdict, r.Note)
		for _, a := range r.Anomalies {
			fmt.Fprintf(&s, "    %s %v: %s\n", a.Kind, a.Ops, a.Message)
		}
	}
	fmt.Fprintf(&s, "reference: %s %v\n", ref.Verdict, ref.Kinds)
	return s.String()
}

// TestDifferential compares the fast checkers with the reference on
// generated histories: the overall verdict and the anomaly kinds of each
// checker must be the same. A disagreement prints the history as JSON lines
// (to be saved under checker/testdata as a fixture) and both conclusions;
// with REFERENCE_DUMP=dir each disagreeing history is also written to dir,
// REFERENCE_HISTORIES=n compares n histories instead, and
// REFERENCE_SEEDS=s1,s2,... only the histories of those seeds (genOptions
// says how each is generated). It also compares the liveness verdicts,
// anomaly kinds and windows (under livenessBounds), and logs how many
// histories had a stuck or an unavailable key.
func TestDifferential(t *testing.T) {
	n := historiesToCompare(t, "REFERENCE_HISTORIES", differentialHistories)
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = uint64(i)
	}
	if s := os.Getenv("REFERENCE_SEEDS"); s != "" {
		seeds = nil
		for _, f := range strings.Split(s, ",") {
			seed, err := strconv.ParseUint(f, 10, 64)
			if err != nil {
				t.Fatalf("REFERENCE_SEEDS=%q: %v", s, err)
			}
			seeds = append(seeds, seed)
		}
	}
	dump := os.Getenv("REFERENCE_DUMP")
	classes := map[string]int{}
	stuck, unavailable := 0, 0 // histories with a stuck key; with an unavailable one but none stuck
	printed := 0
	for _, seed := range seeds {
		h := reference.Generate(rand.New(rand.NewPCG(seed, 0xd1ff)), genOptions(seed))
		drift := int(seed % uint64(len(drifts)))
		bounds := int(seed / 3 % uint64(len(livenessBounds)))
		diff, fast, ref := mismatch(h, drift, bounds)
		if live, _, _, _ := livenessOf(h, bounds); live.Has(checker.Stuck) {
			stuck++
		} else if live.Has(checker.Unavailable) {
			unavailable++
		}
		if diff == "" {
			continue
		}
		classes[diff]++
		if printed < 3 {
			printed++
			t.Errorf("seed %d: %s", seed, report(h, diff, drift, bounds, fast, ref))
		}
		if dump != "" {
			name := filepath.Join(dump, fmt.Sprintf("seed-%05d-drift-%v.txt", seed, drifts[drift].ref))
			if err := os.WriteFile(name, []byte(report(h, diff, drift, bounds, fast, ref)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("%d histories: %d (%.1f%%) with a stuck key, %d (%.1f%%) more with an unavailable one", len(seeds),
		stuck, 100*float64(stuck)/float64(len(seeds)), unavailable, 100*float64(unavailable)/float64(len(seeds)))
	reportDisagreements(t, "histories", classes, len(seeds))
}

// historiesToCompare is how many histories a differential test compares:
// def (a fifth of it with -short), or the number in the environment
// variable env.
func historiesToCompare(t *testing.T, env string, def int) int {
	t.Helper()
	n := def
	if testing.Short() {
		n /= 5
	}
	if s := os.Getenv(env); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			t.Fatalf("%s=%q: %v", env, s, err)
		}
	}
	return n
}

// reportDisagreements fails t with the count of each class of
// disagreement found among n compared histories, if there is any.
func reportDisagreements(t *testing.T, what string, classes map[string]int, n int) {
	t.Helper()
	if len(classes) == 0 {
		return
	}
	var lines []string
	total := 0
	for c, k := range classes {
		lines = append(lines, fmt.Sprintf("%5d  %s", k, c))
		total += k
	}
	slices.Sort(lines)
	t.Errorf("%d of %d %s disagree; by disagreement:\n%s", total, n, what, strings.Join(lines, "\n"))
}

// genOptions are the generator's options for the history of seed: one
// history in ten has ops at equal times, in one in four some crashes keep
// their client (`kept`), in two in three acquires wait long, in three in
// five faults take effect or fail, are healed or not and the nodes'
// availability is recorded, in one in two the service has an outage, and
// in one in three ops of unknown outcome come from kills, partitions,
// waits that time out and renewals and releases lost in flight, several
// at once (Unknowns).
func genOptions(seed uint64) reference.GenOptions {
	return reference.GenOptions{Ties: seed%10 == 9, Kept: seed%4 == 3, Waits: seed%3 != 0, Faults: seed%5 >= 2, Outages: seed%2 == 1,
		Unknowns: seed/5%3 == 2}
}

// queueHistories is how many generated queue histories
// TestDifferentialQueue compares (fewer with -short).
const queueHistories = 20000

// queueGenOptions are the queue generator's options for the history of
// seed: in one in four the queue keeps its promises, in one in ten ops
// may be stamped with equal times.
func queueGenOptions(seed uint64) reference.QueueGenOptions {
	return reference.QueueGenOptions{Honest: seed%4 == 1, Ties: seed%10 == 9}
}

// TestDifferentialQueue is TestDifferential over generated histories of the
// queue workload (reference.GenerateQueue): captures, set-statuses,
// budgets, queues and a reaper. QUEUE_HISTORIES=n compares n histories
// instead. It also logs how many histories had each anomaly kind (and
// lost-task of a task passed over, apart), so that a generator that
// stopped producing one shows.
func TestDifferentialQueue(t *testing.T) {
	n := historiesToCompare(t, "QUEUE_HISTORIES", queueHistories)
	classes := map[string]int{}
	found := map[string]int{}
	printed := 0
	for i := range n {
		seed := uint64(i)
		h := reference.GenerateQueue(rand.New(rand.NewPCG(seed, 0x9e0e)), queueGenOptions(seed))
		drift := int(seed % uint64(len(drifts)))
		bounds := int(seed / 3 % uint64(len(livenessBounds)))
		diff, fast, ref := mismatch(h, drift, bounds)
		for _, k := range ref.All() {
			found[k]++
		}
		fastLive, live, _, _ := livenessOf(h, bounds)
		if live.Verdict == checker.Invalid {
			found[checker.LostTask]++
		}
		if slices.ContainsFunc(fastLive.Anomalies, passedOver) {
			found[passedOverKind]++
		}
		if diff == "" {
			continue
		}
		classes[diff]++
		if printed < 3 {
			printed++
			t.Errorf("queue seed %d: %s", seed, report(h, diff, drift, bounds, fast, ref))
		}
	}
	t.Logf("%d queue histories; histories with each kind: %v", n, found)
	for _, k := range []string{checker.DoubleCapture, checker.BudgetOverspent, checker.CrossQueue, checker.StaleStatus, checker.LostTask, passedOverKind} {
		if n >= 1000 && found[k] == 0 {
			t.Errorf("no generated queue history has %s", k)
		}
	}
	reportDisagreements(t, "queue histories", classes, n)
}

// passedOverKind names lost-task of a task passed over in
// TestDifferentialQueue's counts.
const passedOverKind = "lost-task(passed-over)"

// passedOver reports whether a is lost-task of a task passed over
// (docs/history.md §4.7), the one lost-task that names six ops: the last
// capture, the set-status and the short capture. (One that also names
// captures of unknown outcome, two ops each, says the task was passed over
// or taken by one of them, whose process crashed: it is not counted.)
func passedOver(a checker.Anomaly) bool { return a.Kind == checker.LostTask && len(a.Ops) == 6 }

// FuzzDifferential is TestDifferential for any seed; when seed2 is 3
// modulo 4 it is TestDifferentialQueue's comparison instead.
func FuzzDifferential(f *testing.F) {
	f.Add(uint64(1), uint64(2))
	f.Add(uint64(42), uint64(7))
	f.Fuzz(func(t *testing.T, seed1, seed2 uint64) {
		var h history.History
		if seed2%4 == 3 {
			h = reference.GenerateQueue(rand.New(rand.NewPCG(seed1, seed2)), queueGenOptions(seed2/4))
		} else {
			h = reference.Generate(rand.New(rand.NewPCG(seed1, seed2)), genOptions(seed2))
		}
		drift := int(seed1 % uint64(len(drifts)))
		bounds := int(seed1 / 3 % uint64(len(livenessBounds)))
		if diff, fast, ref := mismatch(h, drift, bounds); diff != "" {
			t.Fatal(report(h, diff, drift, bounds, fast, ref))
		}
	})
}
