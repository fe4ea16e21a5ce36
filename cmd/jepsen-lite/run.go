package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/clients"
	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/backends"
	"github.com/jepsen-lite/jepsen-lite/gate"
	"github.com/jepsen-lite/jepsen-lite/lockproto"
	"github.com/jepsen-lite/jepsen-lite/reports"
	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

const runUsage = `Usage: jepsen-lite run <scenario name | scenario.yaml | run dir> [flags]

Runs one scenario against real servers started on 127.0.0.1, records every
operation in store/<scenario>/<timestamp>/history.jsonl, checks it, and exits
0 when the scenario ended as it expected (1: it did not, 2: unknown, also
when a fault or heal failed that its step did not expect: expect-failure).

` + progressHelp + ` For a run: starting servers, then the time of its
duration with the ops recorded and the faults in force, then stopping
servers, checking and writing the report.

Examples:
  jepsen-lite run redis-single-gc-pause
  jepsen-lite run redis-single-gc-pause --seed 3 --time-limit 10s
  jepsen-lite run my-lock.yaml --workers 16
  jepsen-lite run --replay store/latest      # the exact schedule and seed again
  jepsen-lite run redlock-gc-pause --backend ssh --inventory hosts.yaml   # on hosts over SSH (jepsen-lite hosts up)
  jepsen-lite run redis-single-gc-pause --lock-command "python3 examples/anylang/redis_py_lock.py"`

func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlagSet("run", runUsage, stderr)
	seed := fs.Uint64("seed", 0, "the run's seed (default: the scenario's, else from the clock)")
	timeLimit := fs.Duration("time-limit", 0, "override the scenario's duration, e.g. 30s")
	workers := fs.Int("workers", 0, "override the scenario's number of workers")
	store := fs.String("store", "store", "the store directory")
	replay := fs.String("replay", "", "replay a stored run: its scenario, seed and fault schedule")
	checkTimeout := fs.Duration("check-timeout", 5*time.Minute, "time budget of the checkers; past it the verdict is unknown")
	verbose := fs.Bool("v", false, "print run.log's lines as they are written")
	backend := fs.String("backend", "local", backendUsage)
	inventory := fs.String("inventory", "", inventoryUsage)
	lockCommand := fs.String("lock-command", "", "run the scenario against this external lock client (docs/lock-protocol.md) instead of its algorithm")
	quiet := fs.Bool("quiet", false, quietUsage)
	pos, err := parseArgs(fs, args)
	if errors.Is(err, errHelp) {
		return exitHeld, nil
	}
	if err != nil {
		return exitUsage, err
	}
	target := *replay
	switch {
	case target != "" && len(pos) > 0:
		return exitUsage, usagef("give either a scenario or --replay, not both")
	case target == "" && len(pos) != 1:
		return exitUsage, usagef("want exactly one scenario (see 'jepsen-lite list')")
	case target == "":
		target = pos[0]
	}
	if err := checkOverrides(*timeLimit, *workers); err != nil {
		return exitUsage, err
	}
	var sc *scenarios.Scenario
	err = unlessInterrupted(ctx, func() (err error) {
		sc, err = scenarios.Load(target, runner.Names())
		return err
	})
	if errors.Is(err, errInterrupted) {
		fmt.Fprintln(stderr, "jepsen-lite run: interrupted while loading the scenario; nothing was started")
		return exitUnknown, nil
	}
	if err != nil {
		return exitUsage, usageError{err}
	}
	if isSet(fs, "lock-command") {
		if sc, err = withLockCommand(sc, *lockCommand); err != nil {
			return exitUsage, err
		}
	} else if err := refuseOwnLock(sc, "lockapi.Replay with the lock's lockapi.Lock"); err != nil {
		return exitUsage, err
	}
	backendUsed, err := backendFor(*backend, *inventory)
	if err != nil {
		return exitUsage, err
	}
	if err := checkBackend(backendUsed, sc); err != nil {
		return exitUsage, err
	}
	opts := []runner.Option{runner.WithStore(*store), runner.WithCheck(checker.Options{Timeout: *checkTimeout}), runner.WithClusterBackend(backendUsed)}
	if isSet(fs, "seed") {
		opts = append(opts, runner.WithSeed(*seed))
	}
	if *timeLimit > 0 {
		opts = append(opts, runner.WithTimeLimit(*timeLimit))
	}
	if *workers > 0 {
		opts = append(opts, runner.WithWorkers(*workers))
	}
	line := newStatusLine(stderr, *quiet)
	if *verbose {
		opts = append(opts, runner.WithLog(line.Writer()))
	}
	opts = append(opts, runner.WithProgress(func(p runner.Progress) { line.Update(runStatus(p)) }))
	res, err := runner.Run(ctx, sc, opts...)
	line.Done()
	if res != nil && res.Results != nil {
		printSummary(stdout, sc, res)
	}
	return runOutcome(stderr, res, err)
}

// runOutcome says on stderr what became of a run that returned res and
// err, when the summary does not, and returns the run's exit code.
func runOutcome(stderr io.Writer, res *runner.Result, err error) (int, error) {
	switch {
	case errors.Is(err, runner.ErrInterrupted) && errors.Is(err, runner.ErrSetup):
		fmt.Fprintf(stderr, "jepsen-lite run: interrupted while starting; nothing was recorded (the run's log is in %s)\n", res.Dir)
		return exitUnknown, nil
	case errors.Is(err, runner.ErrInterrupted):
		fmt.Fprintf(stderr, "jepsen-lite run: interrupted; what was recorded is in %s: check it with 'jepsen-lite check %s'\n", res.Dir, res.Dir)
		return exitUnknown, nil
	case errors.Is(err, runner.ErrLockClient):
		// The client's break is bad input: what was recorded is kept.
		fmt.Fprintf(stderr, "jepsen-lite run: what was recorded is in %s\n", res.Dir)
		var perr *lockproto.ProtocolError
		if errors.As(err, &perr) {
			return exitUsage, usageError{perr}
		}
		return exitUsage, usageError{err}
	case errors.Is(err, runner.ErrSetup), errors.Is(err, clients.ErrUnknownAlgorithm), errors.Is(err, scenarios.ErrInvalid):
		return exitUsage, usageError{err}
	case err != nil:
		return exitInternal, err
	}
	if res.Results.FaultsFailed() {
		// The run did not do what its scenario said: whatever it found,
		// whether the scenario held is unknown.
		return exitUnknown, nil
	}
	return verdictExit(res.Results.Verdict, res.Results.ExpectationMet), nil
}

// inventoryUsage is the help of the --inventory flag.
const inventoryUsage = "with --backend ssh: the inventory file of the hosts (docs/usage.md, \"Backends\"; jepsen-lite hosts up writes one)"

// backendUsage is the help of the --backend flag.
const backendUsage = "where the servers run: local (processes on 127.0.0.1), docker (containers; make images first) or ssh (hosts over SSH; --inventory)"

// backendFor returns the backend a --backend name names, the ssh backend
// bound to the inventory file (backends.For); a bad name or inventory is a
// usage error of one line.
func backendFor(name, inventory string) (cluster.Backend, error) {
	b, err := backends.For(name, backends.Options{Inventory: inventory})
	if err != nil {
		return cluster.Backend{}, usageError{err}
	}
	return b, nil
}

// checkBackend returns a usage error, naming the scenario's file, when the
// backend does not run a scenario's system; it is called before anything
// starts.
func checkBackend(b cluster.Backend, scs ...*scenarios.Scenario) error {
	for _, sc := range scs {
		if err := b.Check(cluster.Spec{System: sc.System.Name, Topology: sc.System.Topology, Nodes: sc.System.Nodes}); err != nil {
			return usagef("%s: %v", sc.File, err)
		}
	}
	return nil
}

// verdictExit maps a run's outcome to its exit code.
func verdictExit(v checker.Verdict, met bool) int {
	switch {
	case met:
		return exitHeld
	case v == checker.Unknown:
		return exitUnknown
	default:
		return exitViolated
	}
}

// printSummary prints the end-of-run summary: verdict, expectation, each
// anomaly's sentence and the store path.
func printSummary(w io.Writer, sc *scenarios.Scenario, res *runner.Result) {
	r := res.Results
	exp := "valid"
	if r.Expected != nil {
		exp = gate.ExpectText(*r.Expected)
	}
	met := "expectation met"
	if !r.ExpectationMet {
		met = "EXPECTATION NOT MET"
	}
	fmt.Fprintf(w, "\n%s (seed %d): %s, expected %s: %s\n", r.Scenario, r.Seed, strings.ToUpper(string(r.Verdict)), exp, met)
	fmt.Fprintf(w, "  ops %d (ok %d, fail %d, info %d) in %v\n", r.Stats.Ops, r.Stats.OK, r.Stats.Fail, r.Stats.Info, res.Elapsed.Round(time.Millisecond))
	for _, f := range r.FailedFaults {
		what := "fault"
		if f.Heal {
			what = "heal of the fault"
		}
		fmt.Fprintf(w, "  FAILED %s %s: %s\n", what, f.Step, f.Error)
	}
	printHostEvents(w, r)
	printCheckers(w, r.Checkers)
	printLiveness(w, r.Liveness)
	fmt.Fprintf(w, "  store:  %s\n", res.Dir)
	fmt.Fprintf(w, "  report: %s/%s\n", res.Dir, reports.ReportFile)
}

// printCheckers prints each checker's verdict and every anomaly with the ops
// that prove it; an anomaly that others follow from (docs/history.md §4,
// one cause, one finding) comes first, with a line counting them.
func printCheckers(w io.Writer, rs []checker.Result) {
	for _, c := range rs {
		follow := 0
		for _, a := range c.Anomalies {
			follow += a.Follows
		}
		following := ""
		if follow > 0 {
			following = fmt.Sprintf(" (and %d that follow from them)", follow)
		}
		fmt.Fprintf(w, "  %-16s %-8s %d anomalies%s  %v\n", c.Name, c.Verdict, len(c.Anomalies), following, c.Elapsed.Round(time.Microsecond))
		if c.Note != "" {
			fmt.Fprintf(w, "    note: %s\n", c.Note)
		}
		for i, a := range c.Anomalies {
			if i == 10 {
				fmt.Fprintf(w, "    ... and %d more (see results.json)\n", len(c.Anomalies)-10)
				break
			}
			fmt.Fprintf(w, "    %s %s ops %v: %s\n", a.Kind, a.Key, a.Ops, a.Message)
			if a.Follows > 0 {
				fmt.Fprintf(w, "      %s\n", followersText(a))
			}
			printHostNote(w, a)
		}
	}
}

// followersText says how many anomalies follow from a, with the ops of the
// first few: "+ 790 more double-hold that follow from it: ops [1 9],
// [1 12], [1 15], ... (see results.json)".
func followersText(a checker.Anomaly) string {
	return fmt.Sprintf("+ %d more %s that follow from it: ops %s (see results.json)", a.Follows, a.Kind, a.FollowersOps(3, "..."))
}

// fewGrants is the number of grants below which a run's summary warns that
// its safety verdict rests on too few holds to say much.
const fewGrants = 5

// printLiveness prints the liveness verdict, apart from the checkers whose
// worst verdict is the run's: how many grants the run saw, and every stuck
// key and unavailable window with its ops.
func printLiveness(w io.Writer, l *checker.LivenessResult) {
	if l == nil {
		return
	}
	if l.Captures > 0 {
		fmt.Fprintf(w, "  liveness (apart from the verdict): %s; tasks captured in the run: %d\n", livenessWord(l), l.Captures)
	} else {
		fmt.Fprintf(w, "  liveness (apart from the verdict): %s; grants in the run: %d\n", livenessWord(l), l.Grants)
	}
	if l.Grants < fewGrants && l.Captures == 0 {
		grants := "grants"
		if l.Grants == 1 {
			grants = "grant"
		}
		fmt.Fprintf(w, "    only %d %s: a safe verdict says little about a lock that was hardly ever held\n", l.Grants, grants)
	}
	if l.Note != "" {
		fmt.Fprintf(w, "    note: %s\n", l.Note)
	}
	for i, a := range l.Anomalies {
		if i == 10 {
			fmt.Fprintf(w, "    ... and %d more (see results.json)\n", len(l.Anomalies)-10)
			break
		}
		fmt.Fprintf(w, "    %s %s ops %v: %s\n", a.Kind, a.Key, a.Ops, a.Message)
		printHostNote(w, a)
	}
}

// hostEventsPrinted is how many host events the summary prints, one line
// each; results.json lists them all.
const hostEventsPrinted = 10

// printHostEvents prints a line for each clock step and stall the run's
// host recorded (docs/history.md §1, "The host records"): "  HOST clock
// stepped +17s at 4.200s".
func printHostEvents(w io.Writer, r *reports.Results) {
	for i, e := range r.HostEvents {
		if i == hostEventsPrinted {
			fmt.Fprintf(w, "  HOST ... and %d more (see results.json)\n", len(r.HostEvents)+r.HostEventsLeftOut-hostEventsPrinted)
			return
		}
		fmt.Fprintf(w, "  HOST %s\n", e.Describe())
	}
}

// printHostNote prints an anomaly's host note (checker.Anomaly.Host), if it
// has one.
func printHostNote(w io.Writer, a checker.Anomaly) {
	if a.Host != "" {
		fmt.Fprintf(w, "      host: %s\n", a.Host)
	}
}

// livenessWord is the liveness summary, in capitals when it found
// anomalies ("STUCK, UNAVAILABLE").
func livenessWord(l *checker.LivenessResult) string {
	if l.Verdict == checker.Invalid {
		return strings.ToUpper(l.Summary())
	}
	return l.Summary()
}
