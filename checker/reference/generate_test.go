package reference_test

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/checker/anomaly"
	"github.com/jepsen-lite/jepsen-lite/checker/reference"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// TestGenerateMix checks that generated histories are well-formed and
// cover what the differential test needs: both verdicts in good proportion,
// every anomaly kind, and every kind of op.
func TestGenerateMix(t *testing.T) {
	const n = 1000
	verdicts := map[checker.Verdict]int{}
	kinds := map[string]int{}
	seen := map[string]bool{}
	start := time.Now()
	var checking time.Duration
	for seed := range uint64(n) {
		h := reference.Generate(rand.New(rand.NewPCG(seed, 1)), reference.GenOptions{})
		if err := history.Validate(h); err != nil {
			t.Fatalf("seed %d: %v\n%s", seed, err, jsonl(h))
		}
		clientOps := noteOps(h, seen)
		if clientOps > 12 {
			t.Fatalf("seed %d: %d client ops", seed, clientOps)
		}
		for _, p := range pendingOps(h) {
			seen["pending "+p] = true
		}
		t0 := time.Now()
		res, err := reference.Check(h, 0.01)
		checking += time.Since(t0)
		if err != nil {
			t.Fatal(err)
		}
		verdicts[res.Verdict]++
		for _, k := range res.All() {
			kinds[k]++
		}
	}
	t.Logf("%d histories in %v (reference: %v, %.0f histories/s); verdicts %v; kinds %v",
		n, time.Since(start), checking, n/checking.Seconds(), verdicts, kinds)
	if verdicts[checker.Valid] < n/5 || verdicts[checker.Invalid] < n/5 {
		t.Errorf("verdicts out of proportion: %v", verdicts)
	}
	for _, k := range []string{checker.DoubleHold, checker.EarlyGrant, checker.ForeignRelease, checker.StaleWrite, checker.LostUpdate, checker.TokenReuse, checker.TokenRegression} {
		if kinds[k] == 0 {
			t.Errorf("no history with %s", k)
		}
	}
	for _, w := range mixWants() {
		if !seen[w] {
			t.Errorf("no %q in %d histories", w, n)
		}
	}
}

// noteOps marks in seen the kinds of op h has, and returns its number of
// client ops.
func noteOps(h history.History, seen map[string]bool) int {
	clientOps := 0
	for _, op := range h {
		if op.IsHeader() {
			seen["header"] = true
			continue
		}
		if op.IsNemesis() {
			seen["nemesis"] = true
			continue
		}
		if op.Type == history.Invoke {
			clientOps++
		}
		seen[op.F+" "+string(op.Type)] = true
		switch {
		case op.F == history.FAcquire && op.Type == history.OK && op.Lease == 0 && h[0].Time >= 0:
			seen["acquire ok without lease"] = true
		case op.F == history.FAcquire && op.Type == history.OK && op.Lease == -1:
			seen["acquire ok lease -1"] = true
		}
		if op.F == history.FAcquire && op.Type == history.OK && op.Session {
			seen["acquire ok session"] = true
		}
		if op.F == history.FAcquire && op.Type == history.OK && op.Until != 0 {
			seen["acquire ok until"] = true
		}
		if op.F == history.FWrite && op.Type == history.OK && op.Applied != 0 {
			seen["write ok applied"] = true
		}
		if op.F == history.FWrite && op.Type == history.OK && op.Applied == 0 {
			seen["write ok without applied"] = true
		}
	}
	return clientOps
}

// mixWants are the kinds of op that TestGenerateMix wants among the
// generated histories.
func mixWants() []string {
	want := []string{"header", "nemesis", "acquire ok without lease", "acquire ok lease -1", "acquire ok session", "acquire ok until",
		"write ok applied", "write ok without applied", "pending acquire", "pending write", "pending release"}
	for _, f := range []string{history.FAcquire, history.FRelease, history.FRenew, history.FRead, history.FWrite} {
		for _, typ := range []history.Type{history.Invoke, history.OK, history.Fail, history.Info} {
			want = append(want, f+" "+string(typ))
		}
	}
	want = append(want, history.FLeaseLost+" invoke", history.FLeaseLost+" ok")
	return want
}

// pendingOps lists the f of every invoke without a completion.
func pendingOps(h history.History) []string {
	out := map[int]string{}
	for _, op := range h {
		if op.IsNemesis() {
			continue
		}
		if op.Type == history.Invoke {
			out[op.Process] = op.F
		} else {
			delete(out, op.Process)
		}
	}
	var fs []string
	for _, f := range out {
		fs = append(fs, f)
	}
	slices.Sort(fs)
	return fs
}

// TestGenerateHonest checks the generator's honest service against the
// lease model: its histories never have an early-grant or a
// foreign-release, whatever the drift up to the one it allows.
func TestGenerateHonest(t *testing.T) {
	for seed := range uint64(1000) {
		h := reference.Generate(rand.New(rand.NewPCG(seed, 2)), reference.GenOptions{Honest: true, Kept: seed%2 == 1})
		for _, d := range []float64{0, 0.01} {
			res, err := reference.Check(h, d)
			if err != nil {
				t.Fatal(err)
			}
			if k := res.Kinds[anomaly.CheckerLinearizability]; len(k) > 0 {
				t.Fatalf("seed %d, drift %v: honest service, reference finds %v:\n%s", seed, d, k, jsonl(h))
			}
		}
	}
}

// BenchmarkCheck measures the reference on generated histories (one
// history per iteration, drift 0.01).
func BenchmarkCheck(b *testing.B) {
	hs := make([]history.History, 1000)
	for i := range hs {
		hs[i] = reference.Generate(rand.New(rand.NewPCG(uint64(i), 3)), reference.GenOptions{})
	}
	for i := 0; b.Loop(); i++ {
		if _, err := reference.Check(hs[i%len(hs)], 0.01); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "histories/s")
}

// TestGenerateLiveness checks the generator's liveness options: their
// histories are well-formed, the honest service stays honest under them,
// and together they have every kind of fault record, waiting acquires that
// give up, renewals of every outcome, and keys that both sides find stuck
// and unavailable.
func TestGenerateLiveness(t *testing.T) {
	const n = 1000
	seen := map[string]int{}
	for seed := range uint64(n) {
		opts := reference.GenOptions{Waits: true, Faults: true, Outages: seed%2 == 0, Kept: seed%3 == 0, Honest: seed%4 == 0}
		h := reference.Generate(rand.New(rand.NewPCG(seed, 4)), opts)
		if err := history.Validate(h); err != nil {
			t.Fatalf("seed %d: %v\n%s", seed, err, jsonl(h))
		}
		version := history.Version(h)
		inForce := map[string]bool{}
		invoked := map[int]time.Duration{}
		for _, op := range h {
			switch {
			case op.IsAvailability():
				seen["availability record"]++
			case op.IsNemesis() && op.NemesisFailed(version) && op.Type == history.Fail:
				seen["failed fault or heal (fail)"]++
			case op.IsNemesis() && op.NemesisFailed(version):
				seen["failed fault or heal (info with error)"]++
			case op.IsNemesis() && op.IsHealOp(version):
				seen["heal"]++
				clear(inForce)
			case op.IsNemesis() && !op.IsRecord():
				inForce[op.F] = true
			case op.Type == history.Invoke:
				invoked[op.Process] = op.Time
			case op.F == history.FAcquire && op.Type == history.Fail && op.Time-invoked[op.Process] >= 100*time.Millisecond:
				seen["acquire that gave up after waiting"]++
			case op.F == history.FRenew:
				seen["renew "+string(op.Type)]++
			}
		}
		if len(inForce) > 0 {
			seen["fault in force at the end"]++
		}
		for _, p := range pendingOps(h) {
			if p == history.FRenew {
				seen["renew pending"]++
			}
		}
		if opts.Honest {
			honestIsValid(t, seed, h)
		}
		live, err := reference.Liveness(h, reference.LivenessOptions{Window: 100 * time.Millisecond, UnavailableWindow: 100 * time.Millisecond, Attempts: 2})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range live.Findings {
			seen["reference "+f.Kind]++
		}
	}
	t.Logf("%d histories: %v", n, seen)
	for _, w := range []string{"availability record", "failed fault or heal (fail)", "failed fault or heal (info with error)", "heal",
		"fault in force at the end", "acquire that gave up after waiting", "renew ok", "renew fail", "renew info", "renew pending",
		"reference " + checker.Stuck, "reference " + checker.Unavailable} {
		if seen[w] < n/100 {
			t.Errorf("%q in only %d of %d histories", w, seen[w], n)
		}
	}
}

// TestGenerateQueueHonest checks that GenerateQueue writes well-formed
// histories and that an honest queue never breaks the promises it keeps:
// the reference finds no budget-overspent or cross-queue in any of them,
// and no double-capture in those without a reaper (a reaper's reset can
// meet a worker's late set-status, which then frees the task under its new
// holder, so that a third capture takes it: a true double capture that an
// honest service lets happen), and the checker finds no lost-task of a
// task passed over (docs/history.md §4.7) in any of them, while the
// misbehaving queue's histories have each kind.
func TestGenerateQueueHonest(t *testing.T) {
	kinds := map[bool]map[string]int{true: {}, false: {}}
	for seed := range uint64(2000) {
		honest := seed%2 == 0
		h := reference.GenerateQueue(rand.New(rand.NewPCG(seed, 5)), reference.QueueGenOptions{Honest: honest})
		if err := history.Validate(h); err != nil {
			t.Fatalf("seed %d: %v\n%s", seed, err, jsonl(h))
		}
		res, err := reference.Check(h, 0)
		if err != nil {
			t.Fatal(err)
		}
		reaper := slices.ContainsFunc(h, func(op history.Op) bool { return op.F == history.FReap })
		for _, k := range res.Kinds[anomaly.CheckerQueue] {
			kinds[honest][k]++
			if honest && !reaper && k == checker.DoubleCapture {
				t.Errorf("seed %d: honest queue without a reaper, double-capture:\n%s", seed, jsonl(h))
			}
		}
		if slices.ContainsFunc(checker.Liveness(h, checker.LivenessOptions{}).Anomalies, passedOver) {
			kinds[honest][passedOverKind]++
			if honest {
				t.Errorf("seed %d: honest queue, a task passed over:\n%s", seed, jsonl(h))
			}
		}
	}
	for _, k := range []string{checker.BudgetOverspent, checker.CrossQueue} {
		if n := kinds[true][k]; n > 0 {
			t.Errorf("honest queue: %d histories with %s", n, k)
		}
	}
	for _, k := range []string{checker.DoubleCapture, checker.BudgetOverspent, checker.CrossQueue, checker.StaleStatus, passedOverKind} {
		if kinds[false][k] == 0 {
			t.Errorf("misbehaving queue: no history with %s", k)
		}
	}
	if kinds[true][checker.StaleStatus] == 0 {
		t.Errorf("honest queue: no history with stale-status, which a reaped worker's late status makes")
	}
}

// TestGenerateUnknowns checks the generator's Unknowns mode: its
// histories are well-formed and within the reference's size, the honest
// service stays honest in them, most have several ops of unknown outcome
// outstanding at once on one key, and together they have partitions and
// info ops of every lock op, timeouts and kills.
func TestGenerateUnknowns(t *testing.T) {
	const n = 1000
	seen := map[string]int{}
	for seed := range uint64(n) {
		opts := reference.GenOptions{Unknowns: true, Waits: seed%2 == 0, Faults: seed%5 == 4, Honest: seed%3 == 0, Kept: seed%4 == 1}
		h := reference.Generate(rand.New(rand.NewPCG(seed, 6)), opts)
		if err := history.Validate(h); err != nil {
			t.Fatalf("seed %d: %v\n%s", seed, err, jsonl(h))
		}
		if c := noteOps(h, map[string]bool{}); c > 12 {
			t.Fatalf("seed %d: %d client ops", seed, c)
		}
		if at := unknownAtOnce(h); at >= 2 {
			seen["2 or more at once"]++
			if at >= 3 {
				seen["3 or more at once"]++
			}
		}
		for _, op := range h {
			switch {
			case op.F == "partition":
				seen["partition"]++
			case op.Type == history.Info && !op.IsNemesis():
				seen[op.F+" info "+op.Error]++
			}
		}
		if opts.Honest {
			honestIsValid(t, seed, h)
		}
	}
	t.Logf("%d histories: %v", n, seen)
	if seen["2 or more at once"] < n/2 || seen["3 or more at once"] < n/5 {
		t.Errorf("too few histories with several ops of unknown outcome at once: %v", seen)
	}
	for _, w := range []string{"partition", "acquire info timeout", "acquire info crashed", "renew info timeout", "release info timeout", "write info timeout"} {
		if seen[w] < n/50 {
			t.Errorf("%q in only %d of %d histories", w, seen[w], n)
		}
	}
}

// unknownAtOnce is the most client ops of one key completed `info` whose
// calls (invoke to completion) overlap one point of h.
func unknownAtOnce(h history.History) int {
	type call struct {
		key        string
		start, end int
	}
	var calls []call
	open := map[int]int{}
	for i, op := range h {
		switch {
		case op.IsNemesis():
		case op.Type == history.Invoke:
			open[op.Process] = i
		case op.Type == history.Info:
			calls = append(calls, call{op.Key, open[op.Process], i})
		}
	}
	most := 0
	for _, c := range calls {
		n := 0
		for _, d := range calls {
			if d.key == c.key && d.start <= c.start && d.end >= c.start {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}

// honestIsValid fails t when the reference finds the history h of an
// honest service (generated from seed) not linearizable.
func honestIsValid(t *testing.T, seed uint64, h history.History) {
	t.Helper()
	res, err := reference.Check(h, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	if k := res.Kinds[anomaly.CheckerLinearizability]; len(k) > 0 {
		t.Fatalf("seed %d: honest service, reference finds %v:\n%s", seed, k, jsonl(h))
	}
}
