package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/clients"
	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/datasheet"
	"github.com/jepsen-lite/jepsen-lite/gate"
	"github.com/jepsen-lite/jepsen-lite/hunt"
	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

const huntUsage = `Usage: jepsen-lite hunt <algorithm | scenario | file.yaml> [--lock-command CMD [--lock-tokens] [--lock-self-renewing]] [--faults k1,k2] [--runs N] [--budget D] [--seed S] [--store DIR] [--backend local|docker|ssh [--inventory FILE]] [--time-limit D] [--workers N] [--markdown FILE] [--json FILE] [--shrink] [--page DIR] [--steer] [--shard i/n] [--list] [--quiet]
       jepsen-lite hunt --lock-command CMD --system S [--lock-tokens] [--lock-self-renewing] [flags]
       jepsen-lite hunt --merge part.json... --json FILE [--markdown FILE] [--quiet]

Hunts for what nobody has written down: for the lock's system and topology
(an algorithm's baseline scenario in the catalog, or the scenario given), it runs, for
each fault kind the system and backend can take (list --faults), N runs of
a random schedule of that kind drawn from the run's seed (seeds S..S+N-1),
with the workload drawn from the seed too (the lease's ttl within what the
lock declares, sub-second ones too; the lock taken by trying or by
waiting, renewed every ttl/3 or not; the hold after the write, of up to
four leases in a run that renews; for a lock with fencing tokens the
register fenced or not; for latency the delay, 20ms, 100ms or 40% of the
ttl), and a baseline of N runs without faults. --time-limit and
--workers override the base scenario's run length and workers. Every run
is stored; --json writes the campaign to a file that 'jepsen-lite matrix'
lays out as a safety datasheet with others. It prints one row per fault kind: the runs, how many were
invalid and the anomalies they found, and the first failing run, which
'jepsen-lite shrink' reduces to a small scenario. With --lock-command the
runs use that external lock client (docs/lock-protocol.md); with
--lock-command and --system S instead of an argument, the base is the
system's plain baseline (redis: redis-single-baseline, postgres:
pg-advisory-baseline, zookeeper: zk-recipe-baseline, etcd:
etcd-mutex-baseline, mariadb: mysql-get-lock-baseline). Before the campaign, and before any cluster starts,
the external client's command is started once to read the abilities of its
init_ok: a waiting acquire is drawn only for a client that claims "wait", a
renewal only for one that claims "renew". Its register is fenced only when
--lock-tokens declares that its leases carry fencing tokens;
--lock-self-renewing that it renews its leases by itself (a watchdog of
its own), so that a hold longer than the lease is drawn without a drawn
renewal. A fault kind
that the base's topology cannot take (a failover without a replica, a
sentinel failover without sentinels) is reported not applicable before
anything of it starts.

With --shrink, the campaign ends by shrinking the first failing run of
each fault kind that found something, as 'jepsen-lite shrink' does with
its defaults (a failing run that does not fail again, or whose shrunk
scenario fails in none of its confirmation runs, is passed over for the
kind's next one, up to three). With --page DIR it then writes the
campaign's safety datasheet into DIR: datasheet.md and datasheet.html, one
row of which fault kinds the lock survived and which broke it, each
failure with the sentence of its first anomaly and its schedule beside the
page (the shrunk one where --shrink made it), as 'jepsen-lite matrix'
lays out several campaigns.

Every run reports its safety margin (docs/history.md §4.8): how close it
came to a violation, in lease lengths; the MARGIN column is each kind's
smallest. With --steer, a run of a fault kind mutates, with probability
0.8, the schedule of one of the kind's 3 runs so far with the smallest
margins (a fault shifted, retargeted, added or dropped) instead of drawing
a random one (docs/hunt.md); random by default.

With --shard i/n it makes part i of n of the campaign's runs, for a fleet
of machines that each run one: every machine given the same arguments
computes the same split and the parts together hold every run once. A
random campaign's runs, kind by kind, go to the parts in turn; a steered
one's whole kinds do (a steered kind learns from its own earlier runs).
Each part prints the table of its own runs, and its --json file is marked
with its part ("shard": i of n), which 'jepsen-lite matrix' refuses to lay
out alone. --list prints the runs that would be made, one "kind seed" per
line, and runs nothing. --page is refused with --shard.

With --merge, hunt runs nothing: it merges the campaign files of every
part of one campaign (the arguments, in any order) into the one file of
the whole campaign (--json), prints its table (and --markdown writes it),
and exits as the whole campaign would have. Each row sums the parts' runs,
invalid and unknown runs, joins their anomalies and lists their failing
runs in the order of their seeds, so its first failing run is the lowest
seed's of any part, as in the campaign made on one machine; its margin is
the smallest of the parts'; the campaign's time is the sum of the parts'
(the datasheet says so). It refuses (254), naming the files, a file that
is not a part, parts of different campaigns (another target, lock,
system, topology, workload, --runs, --seed, --faults, backend, --steer or
n), a part given twice, a missing part, and a part that ended early
(interrupted): a merge is never part of a campaign.

` + progressHelp + ` For a hunt: the runs done of all, the invalid runs so
far, and the current run (its fault kind and seed) with its phase; the
time left is estimated from the runs done.

A run whose verdict is unknown (its check past --check-timeout, its faults
failed, its setup failed) counts neither as invalid nor as one that held:
the UNKNOWN column counts them, the closing line says how many ran out of
the check's budget, how many had faults that failed and how many could not
start, and a steered kind never mutates their schedules. A run whose setup
fails after its scenario passed validation (a server that would not start,
a worker's client that could not be made) is kept in the store with its
error, and the kind's next run is made; after 3 such runs of a kind in a
row, its remaining runs are not made, and a line under the table says so
(the kind is not called not applicable: a scenario that validation
refuses, with nothing started, is).

Exit 1 when any run was invalid, 0 when none was (of the runs whose
verdict was known), 2 when interrupted, out of its budget before every
run, or when no run's verdict was known, 254 for bad input.

Examples:
  jepsen-lite hunt redlock --runs 10
  jepsen-lite hunt redis-single --faults client-pause,kill --runs 5
  jepsen-lite hunt redis-single-baseline --lock-command "python3 examples/anylang/redis_py_lock.py"
  jepsen-lite hunt --system redis --lock-command "python3 examples/anylang/redis_py_lock.py" --runs 3
  jepsen-lite hunt redlock --runs 10 --shard 2/4 --json build/redlock-2.json
  jepsen-lite hunt --merge build/redlock-1.json build/redlock-2.json build/redlock-3.json build/redlock-4.json --json build/redlock.json`

// huntFlags are hunt's flags and its argument.
type huntFlags struct {
	fs                                  *flag.FlagSet
	target, system                      string
	faults, store, backend, lockCommand string
	inventory                           string
	markdown, shard, jsonOut, page      string
	files                               []string
	runs, workers                       int
	seed                                uint64
	budget, checkTimeout, timeLimit     time.Duration
	quiet, steer, list, shrink, merge   bool
	lockTokens, lockSelfRenewing        bool
}

// parseHuntFlags parses hunt's command line; a nil result with exitHeld is
// --help.
func parseHuntFlags(args []string, stderr io.Writer) (*huntFlags, int, error) {
	f := &huntFlags{fs: newFlagSet("hunt", huntUsage, stderr)}
	fs := f.fs
	fs.StringVar(&f.faults, "faults", "", "comma-separated fault kinds (default: every kind the system and backend can take)")
	fs.IntVar(&f.runs, "runs", 10, "runs per fault kind")
	fs.DurationVar(&f.budget, "budget", 0, "stop after this much wall time (default: none)")
	fs.Uint64Var(&f.seed, "seed", 1, "the first run's seed; run i of each kind has seed+i")
	fs.StringVar(&f.store, "store", "store", "the store directory")
	fs.StringVar(&f.backend, "backend", "local", backendUsage)
	fs.StringVar(&f.inventory, "inventory", "", inventoryUsage)
	fs.StringVar(&f.lockCommand, "lock-command", "", "hunt with this external lock client (docs/lock-protocol.md) instead of the algorithm")
	fs.StringVar(&f.system, "system", "", "with --lock-command and no argument: the system the lock locks with ("+strings.Join(runner.Names().Systems, ", ")+"); the base is the system's plain baseline")
	fs.BoolVar(&f.lockTokens, "lock-tokens", false, "with --lock-command: the lock's leases carry fencing tokens, so a run may draw a fenced register (default: never fenced)")
	fs.BoolVar(&f.lockSelfRenewing, "lock-self-renewing", false, "with --lock-command: the lock renews its leases by itself (a watchdog of its own), so a run may draw a hold longer than the lease without a drawn renewal (default: only with one)")
	fs.StringVar(&f.markdown, "markdown", "", "write the campaign's table as Markdown to this file")
	fs.DurationVar(&f.checkTimeout, "check-timeout", 5*time.Minute, "time budget of the checkers per run")
	fs.BoolVar(&f.quiet, "quiet", false, quietUsage)
	fs.BoolVar(&f.steer, "steer", false, "mutate the schedules of the runs with the smallest margins instead of drawing every schedule at random")
	fs.StringVar(&f.shard, "shard", "", "make part i of n (i/n) of the campaign's runs, for a fleet of machines")
	fs.BoolVar(&f.list, "list", false, "print the runs that would be made, one \"kind seed\" per line, and run nothing")
	fs.DurationVar(&f.timeLimit, "time-limit", 0, "override the base scenario's duration, e.g. 10s")
	fs.IntVar(&f.workers, "workers", 0, "override the base scenario's number of workers")
	fs.StringVar(&f.jsonOut, "json", "", "write the campaign (its base, settings and rows) as JSON to this file, for 'jepsen-lite matrix'")
	fs.BoolVar(&f.shrink, "shrink", false, "end by shrinking the first failing run of each fault kind that found something")
	fs.StringVar(&f.page, "page", "", "write the campaign's safety datasheet (datasheet.md, datasheet.html and the failures' schedules) into this directory")
	fs.BoolVar(&f.merge, "merge", false, "merge the campaign files of every part (--shard i/n --json FILE) of one campaign, given as arguments, into the one of --json")
	pos, err := parseArgs(fs, args)
	if errors.Is(err, errHelp) {
		return nil, exitHeld, nil
	}
	if err != nil {
		return nil, exitUsage, err
	}
	if f.merge {
		f.files = pos
		if err := f.checkMerge(); err != nil {
			return nil, exitUsage, err
		}
		return f, exitHeld, nil
	}
	if f.page != "" && f.shard != "" {
		return nil, exitUsage, usagef("--page with --shard would lay out part of a campaign as its datasheet: write each part's --json, merge them (hunt --merge) and lay out the merge (matrix)")
	}
	if err := f.setTarget(pos); err != nil {
		return nil, exitUsage, err
	}
	if err := checkCount("runs", f.runs, 1, maxRunCount); err != nil {
		return nil, exitUsage, err
	}
	if err := checkOverrides(f.timeLimit, f.workers); err != nil {
		return nil, exitUsage, err
	}
	return f, exitHeld, nil
}

// setTarget sets what the hunt varies: its one argument, or with --system
// the system's baseline (systemBaselines); it refuses both, neither, an
// unknown system and --system, --lock-tokens or --lock-self-renewing
// without --lock-command.
func (f *huntFlags) setTarget(pos []string) error {
	withSystem := isSet(f.fs, "system")
	switch {
	case (withSystem || f.lockTokens || f.lockSelfRenewing) && !isSet(f.fs, "lock-command"):
		return usagef("--system, --lock-tokens and --lock-self-renewing declare the lock of --lock-command: give --lock-command too")
	case withSystem && len(pos) > 0:
		return usagef("give either an algorithm, scenario or scenario file, or --system, not both")
	case withSystem:
		name, ok := systemBaselines[f.system]
		if !ok {
			return usagef("--system %q: want one of %s", f.system, strings.Join(slices.Sorted(maps.Keys(systemBaselines)), ", "))
		}
		f.target = name
		return nil
	case len(pos) != 1:
		return usagef("want one algorithm, scenario or scenario file, or --lock-command with --system")
	}
	f.target = pos[0]
	return nil
}

// systemBaselines declares, for each system, the base of a hunt of a lock
// client that locks with it (hunt --lock-command CMD --system S): the
// system's plain single-lock baseline in the catalog, one lock on its
// plainest topology (a single Redis, a single PostgreSQL, a three-node
// ensemble or cluster), taken by trying, with no faults.
var systemBaselines = map[string]string{
	cluster.Redis:     "redis-single-baseline",
	cluster.Postgres:  "pg-advisory-baseline",
	cluster.ZooKeeper: "zk-recipe-baseline",
	cluster.Etcd:      "etcd-mutex-baseline",
	cluster.MariaDB:   "mysql-get-lock-baseline",
}

// huntCmd runs a fault campaign: its flags, its plan (--list), runner.Hunt,
// then its table, files and exit code.
func huntCmd(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	f, code, err := parseHuntFlags(args, stderr)
	if f == nil || err != nil {
		return code, err
	}
	if f.merge {
		return huntMerge(ctx, f, stdout, stderr)
	}
	base, backendUsed, err := f.base()
	if err != nil {
		return exitUsage, err
	}
	opts, err := f.options(backendUsed)
	if err != nil {
		return exitUsage, err
	}
	plan, err := hunt.Plan(base.System.Name, opts)
	if err != nil {
		return exitUsage, usageError{err}
	}
	if f.list {
		for _, p := range plan {
			fmt.Fprintf(stdout, "%s %d\n", p.Kind, p.Seed)
		}
		return exitHeld, nil
	}
	line := newStatusLine(stderr, f.quiet)
	status := newBatchStatus(line, "hunt", 0)
	told := func(p hunt.Progress) {
		status.start(fmt.Sprintf("%s seed %d", p.Kind, p.Seed), p.Done, p.Total, fmt.Sprintf("%d invalid", p.Invalid))
	}
	runOpts := []runner.Option{runner.WithStore(f.store), runner.WithCheck(checker.Options{Timeout: f.checkTimeout}), runner.WithClusterBackend(backendUsed), runner.WithProgress(status.run)}
	if f.lockTokens {
		runOpts = append(runOpts, runner.WithLockTokens())
	}
	opts.Log, opts.Progress = line.Writer(), told
	opts.Lease.SelfRenewing = f.lockSelfRenewing
	rep, err := runner.Hunt(ctx, base, opts, runOpts...)
	line.Done()
	if rep != nil && err == nil && f.shrink {
		set := defaultShrink
		set.backend, set.inventory, set.checkTimeout = f.backend, f.inventory, f.checkTimeout
		err = shrinkFailures(ctx, rep, set, stdout, stderr)
	}
	if rep != nil {
		if werr := f.writeCampaign(stdout, base, opts, rep, err); werr != nil {
			return exitInternal, werr
		}
	}
	return huntExit(ctx, rep, err, stdout, stderr)
}

// base returns the scenario the hunt varies, with --time-limit, --workers
// and --lock-command, and the backend it runs on.
func (f *huntFlags) base() (*scenarios.Scenario, cluster.Backend, error) {
	base, err := huntBase(f.target)
	if err != nil {
		return nil, cluster.Backend{}, err
	}
	if f.timeLimit > 0 || f.workers > 0 {
		c := *base
		c.Duration = cmp.Or(f.timeLimit, c.Duration)
		c.Workers = cmp.Or(f.workers, c.Workers)
		base = &c
	}
	if isSet(f.fs, "lock-command") {
		if base, err = withLockCommand(base, f.lockCommand); err != nil {
			return nil, cluster.Backend{}, err
		}
	} else if err := refuseOwnLock(base, "lockapi.Hunt with the lock's lockapi.Lock"); err != nil {
		return nil, cluster.Backend{}, err
	}
	backendUsed, err := backendFor(f.backend, f.inventory)
	if err != nil {
		return nil, cluster.Backend{}, err
	}
	if err := checkBackend(backendUsed, base); err != nil {
		return nil, cluster.Backend{}, err
	}
	return base, backendUsed, nil
}

// options returns the campaign's options from the flags.
func (f *huntFlags) options(backendUsed cluster.Backend) (hunt.Options, error) {
	var want []string
	if f.faults != "" {
		want = strings.Split(f.faults, ",")
	}
	sh, err := gate.ParseShard(f.shard)
	if err != nil {
		return hunt.Options{}, err
	}
	return hunt.Options{Faults: want, Runs: f.runs, Budget: f.budget, Seed: f.seed, Backend: backendUsed.Name, Steer: f.steer, Shard: hunt.Shard{Index: sh.Index, Count: sh.Count}}, nil
}

// writeCampaign prints the campaign's table and writes its Markdown, its
// campaign file and its datasheet, as the flags ask; a campaign that ended
// with an error (ended: an interruption, a failure) is marked so in its
// file.
func (f *huntFlags) writeCampaign(stdout io.Writer, base *scenarios.Scenario, opts hunt.Options, rep *hunt.Report, ended error) error {
	printHunt(stdout, rep)
	if f.markdown != "" {
		if err := os.WriteFile(f.markdown, []byte(huntMarkdown(rep, f.target)), 0o644); err != nil {
			return err
		}
	}
	cf := datasheet.NewCampaignFile(f.target, f.lockCommand, base, opts, rep)
	if ended != nil {
		cf.EndedEarly = ended.Error()
	}
	if f.jsonOut != "" {
		if err := cf.Write(f.jsonOut); err != nil {
			return err
		}
	}
	if f.page != "" {
		if err := datasheet.WritePage(f.page, cf); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "hunt: wrote the datasheet %s\n", filepath.Join(f.page, "datasheet.md"))
	}
	return nil
}

// huntExit prints the hunt's closing line and returns its exit code.
func huntExit(ctx context.Context, rep *hunt.Report, err error, stdout, stderr io.Writer) (int, error) {
	switch {
	case errors.Is(err, runner.ErrInterrupted) || (err != nil && ctx.Err() != nil):
		fmt.Fprintln(stderr, "jepsen-lite hunt: interrupted")
		return exitUnknown, nil
	case err != nil:
		return exitInternal, err
	case rep.Found():
		fmt.Fprintln(stdout, "hunt: FOUND invalid runs (shrink one: jepsen-lite shrink <run dir>)")
		return exitViolated, nil
	case rep.OutOfTime:
		fmt.Fprintln(stdout, "hunt: out of its budget before every run; nothing found so far")
		return exitUnknown, nil
	}
	// An unknown run held no more than it failed: nothing found is said of
	// the decided runs alone, and of none when no run was decided.
	switch unknown, _, _, _ := rep.Unknowns(); {
	case unknown > 0 && rep.Decided() == 0:
		fmt.Fprintf(stdout, "hunt: no run decided (%d unknown): nothing found, and nothing shown to hold\n", unknown)
		return exitUnknown, nil
	case unknown > 0:
		fmt.Fprintf(stdout, "hunt: nothing found in %d decided runs (%d unknown)\n", rep.Decided(), unknown)
	default:
		fmt.Fprintln(stdout, "hunt: nothing found")
	}
	return exitHeld, nil
}

// huntBase returns the scenario a hunt varies: a catalog scenario, a file or
// run directory, or for an algorithm its first lock scenario in the catalog
// without faults (its baseline), else its first.
func huntBase(arg string) (*scenarios.Scenario, error) {
	names := runner.Names()
	sc, err := scenarios.Load(arg, names)
	if err == nil {
		return sc, nil
	}
	if !errors.Is(err, scenarios.ErrUnknownScenario) {
		return nil, usageError{err}
	}
	if _, aerr := clients.Lookup(arg); aerr != nil {
		return nil, usagef("%q is neither a scenario nor an algorithm (list, list --algorithms)", arg)
	}
	cat, cerr := scenarios.Catalog(names)
	if cerr != nil {
		return nil, cerr
	}
	var first *scenarios.Scenario
	for _, c := range cat {
		if c.Lock.Algorithm != arg || (c.Workload != "" && c.Workload != scenarios.WorkloadLock) {
			continue
		}
		if len(c.Nemesis.Steps) == 0 && c.Nemesis.Random == nil {
			return c, nil // its baseline
		}
		if first == nil {
			first = c
		}
	}
	if first != nil {
		return first, nil
	}
	return nil, usagef("no catalog scenario runs the algorithm %q; give a scenario file", arg)
}

func printHunt(w io.Writer, rep *hunt.Report) {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "FAULT\tRUNS\tINVALID\tUNKNOWN\tMARGIN\tANOMALIES\tFIRST FAILING RUN")
	for _, r := range rep.Rows {
		if r.NotApplicable != "" && r.Runs == 0 {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\tnot applicable: %s\t\n", r.Fault, r.NotApplicable)
			continue
		}
		first := "-"
		if len(r.Failing) > 0 {
			first = r.Failing[0]
		}
		fmt.Fprintf(tw, "%s\t%d%s\t%d/%d\t%d\t%s\t%s\t%s\n", r.Fault, r.Runs, gate.RunMarks(r.HostTrouble, r.OffScript, r.Runs), r.Invalid, r.Runs, r.Unknown, hunt.FormatMargin(r.Margin, r.HasMargin), orDash(strings.Join(r.Anomalies, ",")), first)
	}
	tw.Flush()
	if huntMarked(rep) {
		fmt.Fprintln(w, gate.RunMarksLegend)
	}
	for _, r := range rep.Rows {
		if r.SetupGaveUp != "" {
			fmt.Fprintf(w, "hunt: %s: %s\n", r.Fault, gaveUpText(r))
		}
	}
	fmt.Fprintf(w, "hunt: %s: %d runs in %v, %s%s\n", rep.Scenario, rep.Runs, rep.Elapsed.Round(time.Second), huntMode(rep), huntUnknown(rep))
}

// huntMarked reports whether some row of rep has a run mark (runMarks).
func huntMarked(rep *hunt.Report) bool {
	for _, r := range rep.Rows {
		if r.HostTrouble > 0 || r.OffScript > 0 {
			return true
		}
	}
	return false
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// huntMarkdown is the campaign's table as Markdown: a safety datasheet of
// the lock, one row per fault kind.
func huntMarkdown(rep *hunt.Report, arg string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Hunt: %s\n\n`jepsen-lite hunt %s`: %d runs in %v, %s%s.\n\n", arg, arg, rep.Runs, rep.Elapsed.Round(time.Second), huntMode(rep), huntUnknown(rep))
	b.WriteString("| fault | runs | invalid | unknown | margin | anomalies | first failing run |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rep.Rows {
		if r.NotApplicable != "" && r.Runs == 0 {
			fmt.Fprintf(&b, "| %s | - | - | - | - | not applicable: %s | |\n", r.Fault, strings.ReplaceAll(r.NotApplicable, "|", "/"))
			continue
		}
		first := ""
		if len(r.Failing) > 0 {
			first = "`" + r.Failing[0] + "`"
		}
		fmt.Fprintf(&b, "| %s | %d%s | %d/%d | %d | %s | %s | %s |\n", r.Fault, r.Runs, gate.RunMarks(r.HostTrouble, r.OffScript, r.Runs), r.Invalid, r.Runs, r.Unknown, hunt.FormatMargin(r.Margin, r.HasMargin), orDash(strings.Join(r.Anomalies, ", ")), first)
	}
	b.WriteString("\nmargin: the smallest safety margin of the kind's runs, in lease lengths (docs/history.md §4.8); negative: a violation.\n")
	if huntMarked(rep) {
		b.WriteString("\n" + gate.RunMarksLegend + "\n")
	}
	for _, r := range rep.Rows {
		if r.SetupGaveUp != "" {
			fmt.Fprintf(&b, "\n**%s**: %s.\n", r.Fault, strings.TrimSuffix(gaveUpText(r), "."))
		}
	}
	return b.String()
}

// gaveUpText says that a kind's runs stopped after failed setups
// (hunt.Row.SetupGaveUp): "its runs after these 3 were not made: setup
// failed in 3 runs in a row: ...".
func gaveUpText(r *hunt.Row) string {
	return fmt.Sprintf("its runs after these %d were not made: %s", r.Runs, r.SetupGaveUp)
}

// huntUnknown says how many of the campaign's runs were unknown and why,
// after a "; ": "; 4 unknown, neither invalid nor held (2 with a check out
// of its time budget, 1 whose faults failed, 1 whose setup failed)"; empty
// when none was.
func huntUnknown(rep *hunt.Report) string {
	unknown, setupFailed, faultsFailed, outOfBudget := rep.Unknowns()
	if unknown == 0 {
		return ""
	}
	var why []string
	if outOfBudget > 0 {
		why = append(why, fmt.Sprintf("%d with a check out of its time budget", outOfBudget))
	}
	if faultsFailed > 0 {
		why = append(why, fmt.Sprintf("%d whose faults failed", faultsFailed))
	}
	if setupFailed > 0 {
		why = append(why, fmt.Sprintf("%d whose setup failed", setupFailed))
	}
	if other := unknown - outOfBudget - faultsFailed - setupFailed; other > 0 {
		why = append(why, fmt.Sprintf("%d for another reason", other))
	}
	return fmt.Sprintf("; %d unknown, neither invalid nor held (%s)", unknown, strings.Join(why, ", "))
}

// huntMode says which schedules the campaign ran: random, or steered with
// how many runs mutated an earlier run's schedule.
func huntMode(rep *hunt.Report) string {
	if !rep.Steer {
		return "random schedules"
	}
	steered := 0
	for _, r := range rep.Rows {
		steered += r.Steered
	}
	return fmt.Sprintf("steered (%d of %d runs mutated one of the %d runs of their kind with the smallest margins, with probability %.1f)", steered, rep.Runs, hunt.SteerBest, hunt.SteerProbability)
}

// shrinkTries is how many failing runs of a kind hunt --shrink tries
// before it gives the kind up.
const shrinkTries = 3

// shrinkFailures shrinks, for each row of rep that found something, its
// first failing run that fails again (of its first shrinkTries), leaving
// shrunk.yaml in that run's directory and naming it in the row
// (hunt.Row.Shrunk); an interruption ends it with
// runner.ErrInterrupted.
func shrinkFailures(ctx context.Context, rep *hunt.Report, set shrinkSettings, stdout, stderr io.Writer) error {
	for _, row := range rep.Rows {
		for _, dir := range row.Failing[:min(len(row.Failing), shrinkTries)] {
			fmt.Fprintf(stdout, "hunt: shrinking %s's failing run %s\n", row.Fault, dir)
			code, err := shrinkRun(ctx, dir, set, stdout, stderr)
			if ctx.Err() != nil || code == exitUnknown {
				return runner.ErrInterrupted
			}
			if err != nil || code != exitHeld {
				fmt.Fprintf(stdout, "hunt: %s: %s was not shrunk: %v\n", row.Fault, dir, err)
				continue
			}
			row.Shrunk = dir
			break
		}
	}
	return nil
}
