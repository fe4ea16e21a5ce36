// Package gate owns the regression gate over scenarios and seeds: the
// selection of scenarios, the split of the scenario × seed pairs into
// shards for a CI fleet, the pool that runs the pairs side by side and
// takes their outcomes in the gate's order, the re-check of the newest
// stored runs of each scenario (several stores merged into one), the rows
// of results with the proof of each anomaly kind found, and the gate's
// table and JUnit XML (docs/ci.md). It runs a pair, or re-checks a stored
// run, through a function passed in (the command line gives it runner.Run).
package gate

import (
	"context"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/jepsen-lite/jepsen-lite/reports"
	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// RunFunc runs scenario sc with seed, live.
type RunFunc func(ctx context.Context, sc *scenarios.Scenario, seed int) (*runner.Result, error)

// RecheckFunc re-checks the run stored in runDir, judged against sc's
// current expectation, writing nothing into runDir.
type RecheckFunc func(ctx context.Context, runDir string, sc *scenarios.Scenario) (*runner.Result, error)

// Options are what a gate runs and how.
type Options struct {
	// Selected are the scenarios, in the gate's order (Select).
	Selected []*scenarios.Scenario
	// Seeds is the number of runs of each scenario, with seeds 1..Seeds.
	Seeds int
	// Shard is the part of the pairs to run; the zero Shard is the whole.
	Shard Shard
	// List prints the pairs that would run, one "scenario seed" a line,
	// and runs nothing.
	List bool
	// Parallel is how many pairs run side by side; below 1 means 1.
	Parallel int
	// FromStore are the stores whose newest Seeds runs of each scenario
	// are re-checked through Recheck instead of run; nil for live runs.
	FromStore []string
	// JUnit is the file the JUnit XML is written to; "" for none.
	JUnit string
	// Markdown, when set, is given the rows once the table is printed
	// (before the JUnit file is written); an error from it is the gate's.
	Markdown func(rows []*Row) error
	// Run runs a pair live; Recheck re-checks a stored run.
	Run     RunFunc
	Recheck RecheckFunc
	// Status is told how the runs go; nil for none.
	Status Status
}

// Progress is where a gate is as a run starts.
type Progress struct {
	Run                         string // "redlock-gc-pause seed 2"
	Done, Total, Invalid, Unmet int
}

// Status is told how a gate's runs go, for a progress line. Start is
// called under the gate's lock, in the order the runs start.
type Status interface {
	// Begin says that total runs begin; it returns the writer of the
	// gate's log lines ("gate: redlock-gc-pause seed 2 ...").
	Begin(total int) io.Writer
	// Start says that a run starts.
	Start(Progress)
	// End says that the runs are over, before the table is printed.
	End()
}

// noStatus is the Status of a gate told none.
type noStatus struct{}

var _ Status = noStatus{}

func (noStatus) Begin(int) io.Writer { return io.Discard }
func (noStatus) Start(Progress)      {}
func (noStatus) End()                {}

// Outcome is how a gate ended.
type Outcome int

// The outcomes of a gate.
const (
	// Held: every run ended as its scenario expected (or none was to run).
	Held Outcome = iota
	// Violated: some run did not.
	Violated
	// Interrupted: the gate was cut short.
	Interrupted
)

// InputError is bad usage or bad input (a bad shard, a store without the
// scenario's runs, a JUnit file that cannot be created), as opposed to a
// failure of the gate itself.
type InputError struct{ Err error }

// Error returns the message of the bad input, as it is.
func (e InputError) Error() string { return e.Err.Error() }

// Unwrap returns the error of the bad input.
func (e InputError) Unwrap() error { return e.Err }

// Run runs (or re-checks) the pairs of opts, prints the gate's table and
// its closing line to stdout, and writes the Markdown and the JUnit file.
// The error, if any, is an InputError for bad input.
func Run(ctx context.Context, opts Options, stdout io.Writer) (Outcome, error) {
	if opts.Status == nil {
		opts.Status = noStatus{}
	}
	pairs := opts.Shard.Split(opts.Selected, opts.Seeds)
	if opts.List {
		for _, p := range pairs {
			fmt.Fprintf(stdout, "%s %d\n", p.Scenario.Name, p.Seed)
		}
		return Held, nil
	}
	if len(pairs) == 0 {
		fmt.Fprintf(stdout, "gate: shard %s holds none of the %d runs\n", opts.Shard, len(opts.Selected)*opts.Seeds)
		return Held, nil
	}
	stored, err := storedDirs(opts)
	if err != nil {
		return Held, err
	}
	g := &gate{ctx: ctx, opts: opts, pairs: pairs, stored: stored}
	g.log = opts.Status.Begin(len(pairs))
	rows, cases, interrupted := g.collect()
	opts.Status.End()
	return finish(stdout, opts, rows, cases, interrupted)
}

// storedDirs returns, when the gate re-checks stores, each selected
// scenario's run directories by seed (StoredRunDirs).
func storedDirs(opts Options) (map[string][]string, error) {
	stored := map[string][]string{}
	if opts.FromStore == nil {
		return stored, nil
	}
	for _, sc := range opts.Selected {
		dirs, err := StoredRunDirs(opts.FromStore, sc, opts.Seeds)
		if err != nil {
			return nil, InputError{err}
		}
		stored[sc.Name] = dirs
	}
	return stored, nil
}

// finish prints the table, writes the Markdown and the JUnit file, and
// prints the gate's closing line.
func finish(stdout io.Writer, opts Options, rows []*Row, cases []reports.Case, interrupted bool) (Outcome, error) {
	allMet := writeTable(stdout, rows)
	if opts.Markdown != nil {
		if err := opts.Markdown(rows); err != nil {
			return Held, err
		}
	}
	if opts.JUnit != "" {
		if err := writeJUnit(opts.JUnit, cases); err != nil {
			return Held, err
		}
	}
	switch {
	case interrupted:
		return Interrupted, nil
	case allMet:
		fmt.Fprintln(stdout, "gate: every expectation held")
		return Held, nil
	default:
		fmt.Fprintln(stdout, "gate: SOME EXPECTATIONS DID NOT HOLD")
		return Violated, nil
	}
}

// writeTable prints one line per row and the legend of the run marks when
// some row has one; it reports whether every row's runs all met their
// expectation (and had runs).
func writeTable(stdout io.Writer, rows []*Row) bool {
	tw := tabwriter.NewWriter(stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tEXPECTED\tOBSERVED\tANOMALIES\tDETECTION\tTIME")
	allMet := true
	for _, r := range rows {
		if r.Met != r.Runs || r.Runs == 0 {
			allMet = false
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d/%d\t%v\n", r.Name, r.Expected, r.ObservedText(), r.AnomalyText(), r.Met, r.Runs, r.Elapsed.Round(100*time.Millisecond))
	}
	tw.Flush()
	if Marked(rows) {
		fmt.Fprintln(stdout, RunMarksLegend)
	}
	return allMet
}

// writeJUnit writes the cases as JUnit XML to path; a file that cannot be
// created is an InputError.
func writeJUnit(path string, cases []reports.Case) error {
	f, err := os.Create(path)
	if err != nil {
		return InputError{err}
	}
	werr := reports.WriteJUnit(f, "jepsen-lite", cases)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return werr
}
