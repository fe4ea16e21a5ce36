// Package shrink owns the search for a smaller scenario that still fails.
// From a scenario whose runs fail (a stored run's, with its fault schedule
// written out step by step), it removes fault steps by delta debugging, then
// shortens the run, the remaining steps and their offsets, and lowers the
// number of workers and keys, keeping each change only while the smaller
// scenario still fails. Runs are not deterministic, so "still fails" is a
// count: a candidate still fails when at least Need of its Tries runs fail.
// A run whose verdict is unknown (Undecided) counts neither way: a candidate
// passes only on runs that were decided.
package shrink

import (
	"cmp"
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

// Outcome is what a run of a candidate said, or what a candidate's runs
// said together. A run Failed when it failed as the original run did (the
// caller's definition: for the shrink command, its verdict is invalid with
// one of the original run's anomaly kinds); it Passed when its verdict is
// known and it did not fail (valid, or invalid without those kinds); it is
// Undecided when its verdict is unknown (a check out of its time budget, an
// interrupted check, a fault that failed, a client that never answered):
// such a run is never taken for a pass, nor for a failure. The zero
// Outcome is Undecided, so that a trial that says nothing passes nothing.
type Outcome int

// The outcomes.
const (
	Undecided Outcome = iota
	Failed
	Passed
)

// String names the outcome: "undecided", "failed" or "passed".
func (o Outcome) String() string {
	switch o {
	case Failed:
		return "failed"
	case Passed:
		return "passed"
	}
	return "undecided"
}

// Trial runs a candidate scenario once and reports its Outcome, and for an
// Undecided run why its verdict is unknown ("linearizable: timed out after
// 1m0s"; ignored for the others). An error ends the search: a trial that
// cannot run the candidate at all (a server that does not start) must not
// be taken for a pass, nor for a run that merely said nothing.
type Trial func(ctx context.Context, sc *scenarios.Scenario) (out Outcome, why string, err error)

// Options are the search's settings; the zero value of each field means its
// default.
type Options struct {
	// Tries is n, the runs of each candidate at most; 3 by default.
	Tries int
	// Need is k: a candidate still fails when at least k of its n runs
	// fail; 2 by default. It passes when more than n-k of its runs passed
	// (k failures can no longer be reached even if every run not yet
	// decided failed); Undecided runs count toward neither. A candidate
	// that ends neither failing nor passing is undecided: it is not kept,
	// as one that passes is not, and Result counts it. An undecided run
	// spends one of the n tries like any other, so a candidate takes at
	// most n runs; they stop as soon as it fails, passes, or k failures
	// are out of reach of the tries left (it then passes or is undecided,
	// which the search treats alike).
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
	// confirmation runs, and ConfirmUndecided of them were Undecided
	// (neither failed nor passed).
	Failed, Confirmed, ConfirmUndecided int
	// Candidates counts the smaller scenarios the search ran (the scenario
	// as given and the confirmation runs apart), and Undecided those of
	// them that ended neither failing nor passing (Options.Need): none of
	// them was kept. When every candidate was undecided, Scenario is the
	// scenario as given.
	Candidates, Undecided int
	// UndecidedRuns counts the search's runs that were Undecided (those of
	// the scenario as given included, the confirmation runs apart), and
	// FirstUnknown says why the first of them was (its trial's why).
	UndecidedRuns int
	FirstUnknown  string
	// Exhausted reports that MaxRuns ended the search early.
	Exhausted bool
	// Elapsed is the search's wall time.
	Elapsed time.Duration
}

// ErrDoesNotFail reports a scenario that did not fail at the start of the
// search (fewer than Need of Tries runs failed, whether the others passed
// or were undecided: the error counts the undecided): there is nothing to
// shrink.
var ErrDoesNotFail = errors.New("shrink: the scenario does not fail")

// ErrNotConfirmed reports a search whose smallest scenario then failed in
// none of its Confirm runs (undecided runs confirm nothing either): the
// failure was too rare to tell candidates apart, or its runs said nothing,
// and the scenario found is no failing case. The Result is returned with
// it.
var ErrNotConfirmed = errors.New("shrink: the shrunk scenario failed in none of its confirmation runs")

// errBudget ends a search whose runs are spent.
var errBudget = errors.New("shrink: run budget spent")

type search struct {
	ctx   context.Context
	trial Trial
	opts  Options
	res   *Result
}

// fails runs sc up to Tries times and reports what its runs said together
// (Options.Need): Failed when at least Need of them failed, Passed when
// more than Tries-Need passed, else Undecided. what names the candidate in
// the log, and candidate says whether it counts among Result.Candidates
// (the scenario as given does not). A candidate that Validate refuses is
// not run, nor counted: Undecided, as nothing was decided of it.
func (s *search) fails(sc *scenarios.Scenario, what string, candidate bool) (Outcome, error) {
	if s.opts.Validate != nil {
		v, err := s.opts.Validate(sc)
		if err != nil {
			fmt.Fprintf(s.opts.Log, "shrink: %s: not a valid scenario (%v)\n", what, err)
			return Undecided, nil
		}
		sc = v
	}
	var n, failed, passed, unknown int
	var why string
	for try := 0; try < s.opts.Tries; try++ {
		if failed >= s.opts.Need || passed > s.opts.Tries-s.opts.Need || failed+s.opts.Tries-try < s.opts.Need {
			break
		}
		if s.res.Runs >= s.opts.MaxRuns {
			return Undecided, errBudget
		}
		s.res.Runs++
		n++
		o, w, err := s.trial(s.ctx, sc)
		if err != nil {
			return Undecided, err
		}
		switch o {
		case Failed:
			failed++
		case Passed:
			passed++
		default:
			unknown++
			why = cmp.Or(why, w, "verdict unknown")
		}
	}
	s.res.UndecidedRuns += unknown
	s.res.FirstUnknown = cmp.Or(s.res.FirstUnknown, why)
	out := Undecided
	switch {
	case failed >= s.opts.Need:
		out = Failed
	case passed > s.opts.Tries-s.opts.Need:
		out = Passed
	}
	if candidate {
		s.res.Candidates++
		if out == Undecided {
			s.res.Undecided++
		}
	}
	said := map[Outcome]string{Failed: "still fails", Passed: "passes"}[out]
	if out == Undecided {
		said = fmt.Sprintf("undecided (%d of %d runs unknown: %s)", unknown, n, why)
	}
	fmt.Fprintf(s.opts.Log, "shrink: run %d: %s: %s\n", s.res.Runs, what, said)
	return out, nil
}

// stillFails reports whether the candidate sc still fails (fails, counted
// among Result.Candidates): one that passes or is undecided is not kept.
func (s *search) stillFails(sc *scenarios.Scenario, what string) (bool, error) {
	out, err := s.fails(sc, what, true)
	return out == Failed, err
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
	out, err := s.fails(best, "the scenario as given", false)
	if err != nil {
		return nil, err
	}
	if out != Failed {
		undecided := ""
		if s.res.UndecidedRuns > 0 {
			undecided = fmt.Sprintf(" (%d undecided: %s)", s.res.UndecidedRuns, s.res.FirstUnknown)
		}
		return nil, fmt.Errorf("%w: fewer than %d of %d runs failed%s", ErrDoesNotFail, s.opts.Need, s.opts.Tries, undecided)
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
	if s.res.Candidates > 0 && s.res.Undecided == s.res.Candidates {
		fmt.Fprintf(s.opts.Log, "shrink: every candidate (%d) was undecided (%d runs unknown: %s): the scenario as given is kept\n",
			s.res.Candidates, s.res.UndecidedRuns, s.res.FirstUnknown)
	}
	if err := s.confirm(best); err != nil {
		return nil, err
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

// confirm runs the scenario found Confirm times (within MaxRuns and the
// Confirm runs beyond it) and counts how often it failed and how often its
// runs were undecided.
func (s *search) confirm(best *scenarios.Scenario) error {
	for i := 0; i < s.opts.Confirm && s.ctx.Err() == nil; i++ {
		if s.res.Runs >= s.opts.MaxRuns+s.opts.Confirm {
			break
		}
		s.res.Runs++
		out, _, err := s.trial(s.ctx, best)
		if err != nil {
			return err
		}
		s.res.Confirmed++
		switch out {
		case Failed:
			s.res.Failed++
		case Undecided:
			s.res.ConfirmUndecided++
		}
	}
	return nil
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
		ok, err := s.stillFails(with(keep), describe(keep)+" of "+fmt.Sprint(len(all)))
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
		ok, err := s.stillFails(c, fmt.Sprintf("a run of %v", d))
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
			ok, err := s.stillFails(c, fmt.Sprintf("step %d lasting %v", i+1, half))
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
		ok, err := s.stillFails(c, fmt.Sprintf("step %d at %v", i+1, earlier))
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
		ok, err := s.stillFails(c, fmt.Sprintf("%d workers", c.Workers))
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
	ok, err := s.stillFails(c, "one key")
	if err != nil || !ok {
		return sc, err
	}
	s.res.Changes = append(s.res.Changes, fmt.Sprintf("keys lowered from %d to 1", len(sc.Lock.Keys)))
	return c, nil
}
