package checker

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// DefaultDrift is the clock drift the lease model allows by default: a
// server's lease of length ttl may end after ttl × (1 − 0.01) of harness
// time.
const DefaultDrift = 0.01

// NoDrift is the Options.Drift that asks for no drift allowance at all.
const NoDrift = -1.0

// MaxAnomaliesPerKind caps how many anomalies of one kind a checker reports;
// the rest are counted in the result's note.
const MaxAnomaliesPerKind = 100

// Options configure Check and Checkers.
type Options struct {
	// Drift is the largest relative rate at which a server's clock may run
	// fast against the harness's clock: a lease of length ttl asked for at
	// time t cannot have expired before t + ttl × (1 − Drift). Zero means
	// DefaultDrift; NoDrift (any negative value) means no drift at all.
	Drift float64
	// Timeout bounds the whole check; zero means no bound other than the
	// context's. A check that runs out of time is unknown, never valid.
	Timeout time.Duration
	// OutDir is where linearizability.html goes when the linearizability
	// check fails; empty means nowhere.
	OutDir string
}

func (o Options) drift() float64 {
	switch {
	case o.Drift == 0:
		return DefaultDrift
	case o.Drift < 0:
		return 0
	case o.Drift >= 1:
		return 0.99
	}
	return o.Drift
}

// Checkers returns the checkers Check runs, in the order of its results:
// well-formed, double-hold, linearizability, resource, fencing-tokens, queue.
func Checkers(opts Options) []Checker {
	return []Checker{
		WellFormed{},
		DoubleHoldChecker{},
		&LinearizabilityChecker{Drift: opts.drift(), OutDir: opts.OutDir},
		ResourceChecker{Drift: opts.drift()},
		TokenChecker{},
		QueueChecker{},
	}
}

// validChecker is implemented by checkers that can skip the well-formedness
// check because their caller has already done it.
type validChecker interface {
	checkValid(ctx context.Context, h history.History) Result
}

// Check runs every checker of Checkers(opts) over h, in parallel, and
// returns their results in the order of Checkers. A malformed history gives
// the well-formed checker's unknown verdict with a malformed-history anomaly,
// and every other checker an unknown verdict that says it did not run: never
// a verdict about the lock. An anomaly whose window a host record of h
// overlaps says so (NoteHost).
func Check(ctx context.Context, h history.History, opts Options) []Result {
	results, facts := check(ctx, h, opts)
	if facts != nil {
		NoteHost(h, results, nil)
	}
	return results
}

// CheckWithLiveness is Check followed by Liveness over the same facts, so
// that the history is analyzed once. The liveness result is nil when the
// history is not well-formed.
func CheckWithLiveness(ctx context.Context, h history.History, opts Options, lopts LivenessOptions) ([]Result, *LivenessResult) {
	results, live, _ := CheckAnalyzed(ctx, h, opts, lopts)
	return results, live
}

// CheckAnalyzed is CheckWithLiveness that also returns the facts it
// analyzed h into (Analyze; nil when the history is not well-formed), so
// that a caller that goes on to draw h (the run's report) reads the same
// analysis instead of making it again.
func CheckAnalyzed(ctx context.Context, h history.History, opts Options, lopts LivenessOptions) ([]Result, *LivenessResult, *Facts) {
	results, facts := check(ctx, h, opts)
	if facts == nil {
		return results, nil, nil
	}
	live := liveness(h, facts, lopts)
	NoteHost(h, results, &live)
	return results, &live, facts
}

// check is Check; it also returns the facts it analyzed (nil when the
// history is not well-formed).
func check(ctx context.Context, h history.History, opts Options) ([]Result, *Facts) {
	start := time.Now()
	ctx, cancel := withBudget(ctx, opts.Timeout)
	defer cancel()
	checkers := Checkers(opts)
	results := make([]Result, len(checkers))
	results[0] = checkers[0].Check(ctx, h)
	if results[0].Verdict != Valid {
		notRun(checkers, results)
		return results, nil
	}
	var facts *Facts
	factsReady := make(chan struct{})
	go func() {
		defer close(factsReady)
		facts = Analyze(h)
	}()
	// the checks read h as CheckFile reads a file: in chunks, with the
	// Follower's events, each check on its own goroutine
	st := newStreams(ctx, checkers, opts, nil, start)
	for a := 0; a < len(h); a += memoryChunk {
		c := &history.Chunk{Ops: h[a:min(a+memoryChunk, len(h))]}
		c.Hold(1) // the one holder a chunk read comes with
		st.feed(c)
	}
	res, _, _ := st.results(start)
	copy(results[1:], res[1:])
	<-factsReady
	return results, facts
}

// memoryChunk is how many ops of a history in memory Check hands its
// checks at once.
const memoryChunk = 32 << 10

// notRun fills results[1:] with the unknown verdicts of checkers that did
// not run because the history is not well-formed.
func notRun(checkers []Checker, results []Result) {
	for i, c := range checkers[1:] {
		results[i+1] = Result{Name: c.Name(), Verdict: Unknown, Anomalies: []Anomaly{}, Note: "not run: the history is not well-formed"}
	}
}

// runValidated validates h and then runs check, timing it; a malformed
// history gives an unknown verdict.
func runValidated(ctx context.Context, name string, h history.History, check func(context.Context, history.History) Result) Result {
	start := time.Now()
	if err := history.Validate(h); err != nil {
		return Result{Name: name, Verdict: Unknown, Elapsed: time.Since(start), Anomalies: []Anomaly{}, Note: "not run: " + err.Error()}
	}
	r := check(ctx, h)
	r.Elapsed = time.Since(start)
	return r
}

// finish sorts anomalies into their deterministic order (kind, first op,
// key, message), caps each kind at MaxAnomaliesPerKind, and sets the
// verdict: invalid when any anomaly remains.
func finish(name string, start time.Time, anomalies []Anomaly, note string) Result {
	slices.SortStableFunc(anomalies, func(a, b Anomaly) int {
		if c := cmp.Compare(a.Kind, b.Kind); c != 0 {
			return c
		}
		if c := cmp.Compare(firstOp(a), firstOp(b)); c != 0 {
			return c
		}
		if c := slices.Compare(a.Ops, b.Ops); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Key, b.Key); c != 0 {
			return c
		}
		return cmp.Compare(a.Message, b.Message)
	})
	kept := anomalies[:0]
	dropped := map[string]int{}
	count := map[string]int{}
	for _, a := range anomalies {
		count[a.Kind]++
		if count[a.Kind] > MaxAnomaliesPerKind {
			dropped[a.Kind]++
			continue
		}
		kept = append(kept, a)
	}
	kinds := make([]string, 0, len(dropped))
	for k := range dropped {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		more := fmt.Sprintf("%d more %s anomalies not listed", dropped[k], k)
		if note == "" {
			note = more
		} else {
			note += "; " + more
		}
	}
	r := Result{Name: name, Verdict: Valid, Elapsed: time.Since(start), Anomalies: kept, Note: note}
	if r.Anomalies == nil {
		r.Anomalies = []Anomaly{}
	}
	if len(kept) > 0 {
		r.Verdict = Invalid
	}
	return r
}

func firstOp(a Anomaly) int {
	if len(a.Ops) == 0 {
		return -1
	}
	return a.Ops[0]
}

// secs renders a harness time as seconds with three decimals ("12.301s").
func secs(d time.Duration) string {
	return fmt.Sprintf("%.3fs", d.Seconds())
}

// worker names the worker behind an op ("worker 2").
func worker(op history.Op) string {
	return fmt.Sprintf("worker %d", op.Client)
}
