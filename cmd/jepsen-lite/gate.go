package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jepsen-lite/jepsen-lite/catalogdoc"
	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/gate"
	"github.com/jepsen-lite/jepsen-lite/progress"
	"github.com/jepsen-lite/jepsen-lite/reports"
	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

const gateUsage = `Usage: jepsen-lite gate [--tags quick] [--seeds N] [--junit FILE] [--shard i/n] [--list] [--parallel N] [--quiet] [scenario ...]

Runs the selected scenarios (by default every built-in one carrying all of
--tags) with seeds 1..N each, prints a table (scenario, expected, observed,
anomalies, detection rate over the seeds, time), optionally writes JUnit XML
with one testcase per scenario and seed, and exits 0 only if every run ended
as its scenario expected. A regression gate for anyone who ships a lock.

With --from-store it runs nothing: it re-checks the stored histories of the
newest N runs of each scenario with the current checkers, and judges them
against the scenario's current expectation (the catalog's, not the one stored
with the run): validation offline, on saved runs. The run directories are
left as they are. A run whose history cannot be read or is not well-formed
counts as an error; one that has no history (it died before starting) is
left out. Several stores, comma-separated, are read as one: the newest N
runs of each scenario among all of them, re-checked in the order of their
seeds (then their times).

With --shard i/n it runs part i of n of the scenario × seed pairs: every
machine of a CI fleet given the same arguments computes the same split, and
the parts together hold every pair once, balanced by the scenarios' length.
Each machine keeps its own --store; one job then merges them with
--from-store store1,store2,... into one table, JUnit file and Markdown,
equal to an unsharded gate's (docs/ci.md). --list prints the pairs that
would run, one "scenario seed" per line, and runs nothing.

With --parallel N it runs N pairs side by side, in the gate's order, and
takes their outcomes in that order: the table, the JUnit file and the
Markdown are those of the same runs made one after another. Runs side by
side share the machine, and a scenario timed against its lease may fare
otherwise under that load (docs/ci.md: 2 changed no detection of the
quick set).

` + progressHelp + ` For a gate: the runs done of all, the invalid runs
so far (and those not as expected, when there are), and the current run
with its phase; the time left is estimated from the runs done.

Examples:
  jepsen-lite gate --tags quick
  jepsen-lite gate --seeds 20 --junit gate.xml
  jepsen-lite gate redlock-clock-jump redlock-gc-pause --seeds 5
  jepsen-lite gate --tags quick --seeds 20 --from-store store --markdown docs/scenarios.md
  jepsen-lite gate --tags quick --seeds 5 --shard 2/4 --store store-2
  jepsen-lite gate --tags quick --seeds 5 --from-store store-1,store-2,store-3,store-4 --junit gate.xml
  jepsen-lite gate redlock-gc-pause --backend ssh --inventory hosts.yaml   # on hosts over SSH (jepsen-lite hosts up)`

// gateFlags are gate's flags and arguments.
type gateFlags struct {
	fs                           *flag.FlagSet
	pos                          []string
	tags, skipTags, junit, store string
	backend, fromStore, shard    string
	inventory                    string
	lockCommand, markdown        string
	seeds, parallel              int
	list, quiet                  bool
	checkTimeout                 time.Duration
	backendUsed                  cluster.Backend
}

// parseGateFlags parses gate's command line; a nil result with exitHeld is
// --help.
func parseGateFlags(args []string, stderr io.Writer) (*gateFlags, int, error) {
	f := &gateFlags{fs: newFlagSet("gate", gateUsage, stderr)}
	fs := f.fs
	fs.StringVar(&f.tags, "tags", "", "comma-separated tags a scenario must all carry")
	fs.StringVar(&f.skipTags, "skip-tags", "", "comma-separated tags that leave a scenario out")
	fs.IntVar(&f.seeds, "seeds", 1, "runs per scenario, with seeds 1..N")
	fs.StringVar(&f.junit, "junit", "", "write JUnit XML to this file")
	fs.StringVar(&f.store, "store", "store", "the store directory")
	fs.DurationVar(&f.checkTimeout, "check-timeout", 5*time.Minute, "time budget of the checkers per run")
	fs.StringVar(&f.backend, "backend", "local", backendUsage)
	fs.StringVar(&f.inventory, "inventory", "", inventoryUsage)
	fs.StringVar(&f.fromStore, "from-store", "", "run nothing: re-check the stored histories of the newest --seeds runs of each scenario in this store (or these stores, comma-separated) with the current checkers, judged against the scenario's current expectation")
	fs.StringVar(&f.shard, "shard", "", "run part i of n (i/n) of the scenario × seed pairs, for a CI fleet")
	fs.BoolVar(&f.list, "list", false, "print the scenario × seed pairs that would run, and run nothing")
	fs.StringVar(&f.lockCommand, "lock-command", "", "run every scenario against this external lock client (docs/lock-protocol.md) instead of its algorithm")
	fs.StringVar(&f.markdown, "markdown", "", "write the scenario catalog with this gate's results as Markdown to this file (docs/scenarios.md)")
	fs.BoolVar(&f.quiet, "quiet", false, quietUsage)
	fs.IntVar(&f.parallel, "parallel", 1, "run this many scenario × seed pairs side by side")
	pos, err := parseArgs(fs, args)
	if errors.Is(err, errHelp) {
		return nil, exitHeld, nil
	}
	if err != nil {
		return nil, exitUsage, err
	}
	f.pos = pos
	if f.backendUsed, err = backendFor(f.backend, f.inventory); err != nil {
		return nil, exitUsage, err
	}
	if err := checkCount("seeds", f.seeds, 1, maxRunCount); err != nil {
		return nil, exitUsage, err
	}
	if err := checkCount("parallel", f.parallel, 1, maxParallel); err != nil {
		return nil, exitUsage, err
	}
	return f, exitHeld, nil
}

// gateCmd runs the gate: flags, then gate.Run, then its exit code.
func gateCmd(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	f, code, err := parseGateFlags(args, stderr)
	if f == nil {
		return code, err
	}
	opts, code, err := f.options()
	if err != nil {
		return code, err
	}
	status := &gateStatus{stderr: stderr, quiet: f.quiet}
	defer status.End()
	opts.Status = status
	opts.Run = func(ctx context.Context, sc *scenarios.Scenario, seed int) (*runner.Result, error) {
		return runner.Run(ctx, sc, runner.WithSeed(uint64(seed)), runner.WithStore(f.store), runner.WithCheck(checker.Options{Timeout: f.checkTimeout}), runner.WithClusterBackend(f.backendUsed), runner.WithProgress(status.run))
	}
	opts.Recheck = func(ctx context.Context, runDir string, sc *scenarios.Scenario) (*runner.Result, error) {
		status.run(runner.Progress{Phase: runner.PhaseChecking})
		return recheckStored(ctx, runDir, sc, f.checkTimeout)
	}
	return gateExit(gate.Run(ctx, opts, stdout))
}

// options returns the gate's options from its flags: the selection (with
// --lock-command), the shard, the stores and the files to write; or the
// exit code of an error.
func (f *gateFlags) options() (gate.Options, int, error) {
	sh, err := gate.ParseShard(f.shard)
	if err != nil {
		code, err := gateExit(0, err)
		return gate.Options{}, code, err
	}
	selected, err := gate.Select(f.pos, f.tags, f.skipTags)
	if err != nil {
		code, err := gateExit(0, err)
		return gate.Options{}, code, err
	}
	if err := checkBackend(f.backendUsed, selected...); err != nil {
		return gate.Options{}, exitUsage, err
	}
	if isSet(f.fs, "lock-command") {
		for i, sc := range selected {
			if selected[i], err = withLockCommand(sc, f.lockCommand); err != nil {
				return gate.Options{}, exitUsage, err
			}
		}
	}
	opts := gate.Options{Selected: selected, Seeds: f.seeds, Shard: sh, List: f.list, Parallel: f.parallel, JUnit: f.junit}
	if f.fromStore != "" {
		opts.FromStore = strings.Split(f.fromStore, ",")
	}
	if f.markdown != "" {
		src := catalogdoc.Source{Seeds: f.seeds, Selection: f.selection(), FromStore: f.fromStore}
		opts.Markdown = func(rows []*gate.Row) error { return catalogdoc.Write(f.markdown, rows, src) }
	}
	return opts, exitHeld, nil
}

// selection is the gate's selecting arguments, as the Markdown's header
// names them.
func (f *gateFlags) selection() []string {
	var selection []string
	if f.tags != "" {
		selection = append(selection, "--tags", f.tags)
	}
	if f.skipTags != "" {
		selection = append(selection, "--skip-tags", f.skipTags)
	}
	return append(selection, f.pos...)
}

// gateExit is the exit code of a gate's outcome, or of its error: bad
// input (gate.InputError) exits 254, any other error 255.
func gateExit(out gate.Outcome, err error) (int, error) {
	var in gate.InputError
	switch {
	case errors.As(err, &in):
		return exitUsage, usageError{in.Err}
	case err != nil:
		return exitInternal, err
	case out == gate.Interrupted:
		return exitUnknown, nil
	case out == gate.Violated:
		return exitViolated, nil
	default:
		return exitHeld, nil
	}
}

// gateStatus is the progress line of a gate (batchStatus), drawn from the
// gate's first run to its last.
type gateStatus struct {
	stderr io.Writer
	quiet  bool
	line   *progress.Line
	batch  *batchStatus
}

var _ gate.Status = (*gateStatus)(nil)

// Begin starts the line.
func (s *gateStatus) Begin(total int) io.Writer {
	s.line = newStatusLine(s.stderr, s.quiet)
	s.batch = newBatchStatus(s.line, "gate", total)
	return s.line.Writer()
}

// Start shows the run starting.
func (s *gateStatus) Start(p gate.Progress) {
	s.batch.start(p.Run, p.Done, p.Total, gateFound(p.Invalid, p.Unmet))
}

// End clears the line.
func (s *gateStatus) End() {
	if s.line != nil {
		s.line.Done()
	}
}

// run shows where the current run is.
func (s *gateStatus) run(p runner.Progress) { s.batch.run(p) }

// recheckStored re-checks the history stored in runDir with the current
// checkers, through readStored (the legacy rules, the stored scenario's
// drift), and judges it against sc's current expectation, not the one stored
// with the run. Nothing in runDir is written. A history that cannot be read
// or is not well-formed is an error, as a live run's would be; the result
// still names the run directory and its time. A run's time is from its
// directory's start stamp to its results.json (to its history when it has
// none).
func recheckStored(ctx context.Context, runDir string, sc *scenarios.Scenario, timeout time.Duration) (*runner.Result, error) {
	res := &runner.Result{Dir: runDir}
	if began, err := time.Parse(reports.RunDirTimestampFormat, strings.SplitN(filepath.Base(runDir), "-", 2)[0]); err == nil {
		for _, f := range []string{reports.ResultsFile, reports.HistoryFile} {
			if st, err := os.Stat(filepath.Join(runDir, f)); err == nil {
				res.Elapsed = st.ModTime().Sub(began)
				break
			}
		}
	}
	var run *storedRun
	err := unlessInterrupted(ctx, func() (err error) {
		run, err = readStored(runDir, true)
		return err
	})
	if err != nil {
		return res, err
	}
	results := run.check(ctx, run.options(0, false, checker.Options{Timeout: timeout, OutDir: ""}))
	for _, cr := range results.Checkers {
		if cr.Name == (checker.WellFormed{}).Name() && cr.Verdict != checker.Valid && len(cr.Anomalies) > 0 {
			return res, fmt.Errorf("%s: not well-formed: %s", filepath.Join(runDir, reports.HistoryFile), cr.Anomalies[0].Message)
		}
	}
	exp := sc.Expect
	results.Expected = &exp
	results.ExpectationMet = exp.Met(results.Verdict, results.Checkers, results.Liveness) && !results.FaultsFailed()
	res.Results = results
	return res, nil
}
