// Package shrink owns the search for a smaller scenario that still fails.
// From a scenario whose runs fail (a stored run's, with its fault schedule
// written out step by step), it removes fault steps by delta debugging, then
// shortens the run, the remaining steps and their offsets, and lowers the
// number of workers and keys, keeping each change only while the smaller
// scenario still fails. Runs are not deterministic, so "still fails" is a
// count: a candidate still fails when at least Need of its Tries runs fail.
package shrink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/jepsen-lite/jepsen-lite/nemesis"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// Trial runs a candidate scenario once and reports whether the run failed
// (the caller's definition: for the shrink command, the run's verdict is
// invalid with one of the original run's anomaly kinds). An error ends the
// search: a trial that cannot say whether the candidate fails (a server that
// does not start) must not be taken for a pass.
type Trial func(ctx context.Context, sc *scenarios.Scenario) (failed bool, err error)

// Options are the search's settings; the zero value of each field means its
// default.
type Options struct {
	// Tries is n, the runs of each candidate at most; 3 by default.
	Tries int
	// Need is k: a candidate still fails when at least k of its n runs
	// fail; 2 by default. Its runs stop as soon as the answer is known
	// (k failures, or too few tries left to reach k).
	Need int
	// Confirm is the number of runs of the shrunk scenario that measure
	// how often it fails; 5 by default.
	Confirm int
	// MaxRuns bounds the runs of the whole search, confirmation included;
	// 200 by default. When it is spent the search stops with what it has.
	MaxRuns int
	// MinDuration is the shortest a fault step is made; 100ms by default.
	MinDuration time.Duration
	// Validate checks a candidate before it is run (scenarios.Parse of
	// its YAML, for instance); a candidate it refuses is not run and does
	// not fail. Nil accepts every candidate.
	Validate func(*scenarios.Scenario) (*scenarios.Scenario, error)
	// Log receives one line per candidate; nil for none.
	Log io.Writer
}

func (o Options) withDefaults() Options {
	if o.Tries <= 0 {
		o.Tries = 3
	}
	if o.Need <= 0 {
		o.Need = 2
	}
	o.Need = min(o.Need, o.Tries)
	if o.Confirm <= 0 {
		o.Confirm = 5
	}
	if o.MaxRuns <= 0 {
		o.MaxRuns = 200
	}
	if o.MinDuration <= 0 {
		o.MinDuration = 100 * time.Millisecond
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	return o
}

// Result is what a search found.
type Result struct {
	// Scenario is the smallest scenario found that still fails.
	Scenario *scenarios.Scenario
	// Changes says what was removed or made smaller, one line each.
	Changes []string
	// Runs is the number of runs the search took, confirmation included.
	Runs int
	// Failed and Confirmed: Scenario failed in Failed of its Confirmed
	// confirmation runs.
	Failed, Confirmed int
	// Exhausted reports that MaxRuns ended the search early.
	Exhausted bool
	// Elapsed is the search's wall time.
	Elapsed time.Duration
}

// ErrDoesNotFail reports a scenario that did not fail at the start of the
// search (fewer than Need of Tries runs failed): there is nothing to shrink.
var ErrDoesNotFail = errors.New("shrink: the scenario does not fail")

// ErrNotConfirmed reports a search whose smallest scenario then failed in
// none of its Confirm runs: the failure was too rare to tell candidates
// apart, and the scenario found is no failing case. The Result is
// returned with it.
var ErrNotConfirmed = errors.New("shrink: the shrunk scenario failed in none of its confirmation runs")

// errBudget ends a search whose runs are spent.
var errBudget = errors.New("shrink: run budget spent")

type search struct {
	ctx   context.Context
	trial Trial
	opts  Options
	res   *Result
}

// fails runs sc up to Tries times and reports whether at least Need runs
// failed.
func (s *search) fails(sc *scenarios.Scenario, what string) (bool, error) {
	if s.opts.Validate != nil {
		v, err := s.opts.Validate(sc)
		if err != nil {
			fmt.Fprintf(s.opts.Log, "shrink: %s: not a valid scenario (%v)\n", what, err)
			return false, nil
		}
		sc = v
	}
	failed := 0
	for try := 0; try < s.opts.Tries; try++ {
		if failed >= s.opts.Need || failed+s.opts.Tries-try < s.opts.Need {
			break
		}
		if s.res.Runs >= s.opts.MaxRuns {
			return false, errBudget
		}
		s.res.Runs++
		f, err := s.trial(s.ctx, sc)
		if err != nil {
			return false, err
		}
		if f {
			failed++
		}
	}
	ok := failed >= s.opts.Need
	fmt.Fprintf(s.opts.Log, "shrink: run %d: %s: %s\n", s.res.Runs, what, map[bool]string{true: "still fails", false: "passes"}[ok])
	return ok, nil
}

// Shrink searches for a smaller scenario than sc that still fails. sc must
// have its fault schedule as steps (a stored run's scenario); random
// schedules are refused.
func Shrink(ctx context.Context, sc *scenarios.Scenario, trial Trial, opts Options) (*Result, error) {
	began := time.Now()
	if sc.Nemesis.Random != nil {
		return nil, fmt.Errorf("shrink: %s has a random schedule; shrink a stored run, whose scenario.yaml has the steps it drew", sc.Name)
	}
	s := &search{ctx: ctx, trial: trial, opts: opts.withDefaults(), res: &Result{}}
	best := clone(sc)
	ok, err := s.fails(best, "the scenario as given")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: fewer than %d of %d runs failed", ErrDoesNotFail, s.opts.Need, s.opts.Tries)
	}
	for _, pass := range []func(*scenarios.Scenario) (*scenarios.Scenario, error){
		s.steps, s.runLength, s.stepDurations, s.stepOffsets, s.workers, s.keys,
	} {
		next, err := pass(best)
		best = next
		if errors.Is(err, errBudget) {
			s.res.Exhausted = true
			break
		}
		if err != nil {
			return nil, err
		}
	}
	s.res.Scenario = best
	for i := 0; i < s.opts.Confirm && ctx.Err() == nil; i++ {
		if s.res.Runs >= s.opts.MaxRuns+s.opts.Confirm {
			break
		}
		s.res.Runs++
		f, err := trial(ctx, best)
		if err != nil {
			return nil, err
		}
		s.res.Confirmed++
		if f {
			s.res.Failed++
		}
	}
	s.res.Elapsed = time.Since(began)
	if ctx.Err() != nil {
		return s.res, ctx.Err()
	}
	if s.res.Confirmed > 0 && s.res.Failed == 0 {
		return s.res, ErrNotConfirmed
	}
	return s.res, nil
}

// clone returns a copy of sc whose steps, tags and keys can be changed.
func clone(sc *scenarios.Scenario) *scenarios.Scenario {
	c := *sc
	c.Nemesis.Steps = slices.Clone(sc.Nemesis.Steps)
	c.Tags = slices.Clone(sc.Tags)
	c.Lock.Keys = slices.Clone(sc.Lock.Keys)
	return &c
}

// steps removes fault steps by delta debugging (Zeller's ddmin): the
// schedule it keeps still fails, and removing any one more step of it makes
// a schedule that did not.
func (s *search) steps(sc *scenarios.Scenario) (*scenarios.Scenario, error) {
	all := sc.Nemesis.Steps
	with := func(keep []int) *scenarios.Scenario {
		c := clone(sc)
		c.Nemesis.Steps = nil
		for _, i := range keep {
			c.Nemesis.Steps = append(c.Nemesis.Steps, all[i])
		}
		return c
	}
	describe := func(keep []int) string {
		var ss []string
		for _, i := range keep {
			ss = append(ss, fmt.Sprintf("#%d", i+1))
		}
		if len(ss) == 0 {
			return "no fault step"
		}
		return "steps " + strings.Join(ss, ",")
	}
	var searchErr error
	keep := ddmin(len(all), func(keep []int) bool {
		if searchErr != nil {
			return false
		}
		ok, err := s.fails(with(keep), describe(keep)+" of "+fmt.Sprint(len(all)))
		searchErr = err
		return ok
	})
	out := with(keep)
	for i, st := range all {
		if !slices.Contains(keep, i) {
			s.res.Changes = append(s.res.Changes, fmt.Sprintf("removed step %d (%s)", i+1, st))
		}
	}
	return out, searchErr
}

// ddmin returns a subset of 0..n-1 for which test holds, 1-minimal: test
// holds of it and of none of the sets one element smaller. test must hold
// of the whole set; the empty set is tried first.
func ddmin(n int, test func([]int) bool) []int {
	items := make([]int, n)
	for i := range items {
		items[i] = i
	}
	if n == 0 || test(nil) {
		return nil
	}
	parts := 2
	for len(items) >= 2 {
		chunks := split(items, parts)
		reduced := false
		for _, c := range chunks {
			if len(c) < len(items) && test(c) {
				items, parts, reduced = c, 2, true
				break
			}
		}
		if !reduced && parts > 2 {
			for i := range chunks {
				comp := complement(chunks, i)
				if test(comp) {
					items, parts, reduced = comp, max(parts-1, 2), true
					break
				}
			}
		}
		if !reduced {
			if parts >= len(items) {
				break
			}
			parts = min(2*parts, len(items))
		}
	}
	return items
}

// split cuts items into parts chunks of nearly equal length.
func split(items []int, parts int) [][]int {
	var out [][]int
	start := 0
	for i := range parts {
		end := start + (len(items)-start)/(parts-i)
		out = append(out, items[start:end])
		start = end
	}
	return out
}

// complement returns every chunk's items but chunk i's, in order.
func complement(chunks [][]int, i int) []int {
	var out []int
	for j, c := range chunks {
		if j != i {
			out = append(out, c...)
		}
	}
	return out
}

// end returns when the last fault step ends (its start plus its length).
func end(steps nemesis.Schedule) time.Duration {
	var e time.Duration
	for _, st := range steps {
		e = max(e, st.At+st.Duration)
	}
	return e
}

// runLength shortens the run: to a second after the last step's end when
// that still fails, else by halving what follows that point while the run
// still fails.
func (s *search) runLength(sc *scenarios.Scenario) (*scenarios.Scenario, error) {
	from := sc.Duration
	floor := (end(sc.Nemesis.Steps) + time.Second).Round(100 * time.Millisecond)
	defer func() {
		if sc.Duration != from {
			s.res.Changes = append(s.res.Changes, fmt.Sprintf("run shortened from %v to %v", from, sc.Duration))
		}
	}()
	try := func(d time.Duration) (bool, error) {
		c := clone(sc)
		c.Duration = d
		ok, err := s.fails(c, fmt.Sprintf("a run of %v", d))
		if ok {
			sc = c
		}
		return ok, err
	}
	if floor >= sc.Duration {
		return sc, nil
	}
	if ok, err := try(floor); ok || err != nil {
		return sc, err
	}
	for {
		d := ((sc.Duration + floor) / 2).Round(100 * time.Millisecond)
		if d <= floor || d >= sc.Duration {
			return sc, nil
		}
		if ok, err := try(d); !ok || err != nil {
			return sc, err
		}
	}
}

// stepDurations halves each step's length, down to MinDuration, while the
// scenario still fails.
func (s *search) stepDurations(sc *scenarios.Scenario) (*scenarios.Scenario, error) {
	for i := range sc.Nemesis.Steps {
		for {
			d := sc.Nemesis.Steps[i].Duration
			half := (d / 2).Round(10 * time.Millisecond)
			if d == 0 || half < s.opts.MinDuration {
				break
			}
			c := clone(sc)
			c.Nemesis.Steps[i].Duration = half
			ok, err := s.fails(c, fmt.Sprintf("step %d lasting %v", i+1, half))
			if err != nil || !ok {
				if err != nil {
					return sc, err
				}
				break
			}
			s.res.Changes = append(s.res.Changes, fmt.Sprintf("step %d (%s) shortened from %v to %v", i+1, sc.Nemesis.Steps[i].Fault, d, half))
			sc = c
		}
	}
	return sc, nil
}

// stepOffsets moves each step halfway towards the end of the step before
// it (the run's start for the first), once, while the scenario still
// fails: the failure then comes sooner, and the run can be shorter.
func (s *search) stepOffsets(sc *scenarios.Scenario) (*scenarios.Scenario, error) {
	for i := range sc.Nemesis.Steps {
		var prev time.Duration
		if i > 0 {
			prev = sc.Nemesis.Steps[i-1].At + sc.Nemesis.Steps[i-1].Duration
		}
		at := sc.Nemesis.Steps[i].At
		earlier := (prev + (at-prev)/2).Round(10 * time.Millisecond)
		if at-earlier < 100*time.Millisecond {
			continue
		}
		c := clone(sc)
		c.Nemesis.Steps[i].At = earlier
		ok, err := s.fails(c, fmt.Sprintf("step %d at %v", i+1, earlier))
		if err != nil {
			return sc, err
		}
		if ok {
			s.res.Changes = append(s.res.Changes, fmt.Sprintf("step %d moved from %v to %v", i+1, at, earlier))
			sc = c
		}
	}
	return s.runLength(sc)
}

// workers halves the number of workers, down to two, while the scenario
// still fails.
func (s *search) workers(sc *scenarios.Scenario) (*scenarios.Scenario, error) {
	for sc.Workers > 2 {
		c := clone(sc)
		c.Workers = max(2, sc.Workers/2)
		ok, err := s.fails(c, fmt.Sprintf("%d workers", c.Workers))
		if err != nil || !ok {
			return sc, err
		}
		s.res.Changes = append(s.res.Changes, fmt.Sprintf("workers lowered from %d to %d", sc.Workers, c.Workers))
		sc = c
	}
	return sc, nil
}

// keys keeps the first key alone when the lock has several and the
// scenario still fails with one.
func (s *search) keys(sc *scenarios.Scenario) (*scenarios.Scenario, error) {
	if len(sc.Lock.Keys) < 2 {
		return sc, nil
	}
	c := clone(sc)
	c.Lock.Keys = c.Lock.Keys[:1]
	ok, err := s.fails(c, "one key")
	if err != nil || !ok {
		return sc, err
	}
	s.res.Changes = append(s.res.Changes, fmt.Sprintf("keys lowered from %d to 1", len(sc.Lock.Keys)))
	return c, nil
}
