package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/checker/anomaly"
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
  jepsen-lite gate --tags quick --seeds 5 --from-store store-1,store-2,store-3,store-4 --junit gate.xml`

func gateCmd(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlagSet("gate", gateUsage, stderr)
	tags := fs.String("tags", "", "comma-separated tags a scenario must all carry")
	skipTags := fs.String("skip-tags", "", "comma-separated tags that leave a scenario out")
	seeds := fs.Int("seeds", 1, "runs per scenario, with seeds 1..N")
	junit := fs.String("junit", "", "write JUnit XML to this file")
	store := fs.String("store", "store", "the store directory")
	checkTimeout := fs.Duration("check-timeout", 5*time.Minute, "time budget of the checkers per run")
	backend := fs.String("backend", "local", "where the servers run: local or docker")
	fromStore := fs.String("from-store", "", "run nothing: re-check the stored histories of the newest --seeds runs of each scenario in this store (or these stores, comma-separated) with the current checkers, judged against the scenario's current expectation")
	shardArg := fs.String("shard", "", "run part i of n (i/n) of the scenario × seed pairs, for a CI fleet")
	list := fs.Bool("list", false, "print the scenario × seed pairs that would run, and run nothing")
	lockCommand := fs.String("lock-command", "", "run every scenario against this external lock client (docs/lock-protocol.md) instead of its algorithm")
	markdown := fs.String("markdown", "", "write the scenario catalog with this gate's results as Markdown to this file (docs/scenarios.md)")
	quiet := fs.Bool("quiet", false, quietUsage)
	parallel := fs.Int("parallel", 1, "run this many scenario × seed pairs side by side")
	pos, err := parseArgs(fs, args)
	if errors.Is(err, errHelp) {
		return exitHeld, nil
	}
	if err != nil {
		return exitUsage, err
	}
	backendUsed, err := backendFor(*backend)
	if err != nil {
		return exitUsage, err
	}
	if err := checkCount("seeds", *seeds, 1, maxRunCount); err != nil {
		return exitUsage, err
	}
	if err := checkCount("parallel", *parallel, 1, maxParallel); err != nil {
		return exitUsage, err
	}
	sh, err := parseShard(*shardArg)
	if err != nil {
		return exitUsage, err
	}
	names := runner.Names()
	var selected []*scenarios.Scenario
	if len(pos) > 0 {
		for _, p := range pos {
			sc, err := scenarios.Load(p, names)
			if err != nil {
				return exitUsage, usageError{err}
			}
			selected = append(selected, sc)
		}
	} else {
		cat, err := scenarios.Catalog(names)
		if err != nil {
			return exitInternal, err
		}
		var want []string
		if *tags != "" {
			want = strings.Split(*tags, ",")
		}
		selected = scenarios.Select(cat, want...)
		if *skipTags != "" {
			skip := strings.Split(*skipTags, ",")
			kept := selected[:0]
			for _, sc := range selected {
				if !slices.ContainsFunc(skip, sc.HasTag) {
					kept = append(kept, sc)
				}
			}
			selected = kept
		}
	}
	if len(selected) == 0 {
		return exitUsage, usagef("no scenario carries the tags %q", *tags)
	}
	if err := checkBackend(backendUsed, selected...); err != nil {
		return exitUsage, err
	}
	if isSet(fs, "lock-command") {
		for i, sc := range selected {
			if selected[i], err = withLockCommand(sc, *lockCommand); err != nil {
				return exitUsage, err
			}
		}
	}

	pairs := sh.split(selected, *seeds)
	if *list {
		for _, p := range pairs {
			fmt.Fprintf(stdout, "%s %d\n", p.sc.Name, p.seed)
		}
		return exitHeld, nil
	}
	if len(pairs) == 0 {
		fmt.Fprintf(stdout, "gate: shard %s holds none of the %d runs\n", sh, len(selected)**seeds)
		return exitHeld, nil
	}

	stored := map[string][]string{} // scenario -> run dirs, by seed
	if *fromStore != "" {
		for _, sc := range selected {
			dirs, err := storedRunDirs(strings.Split(*fromStore, ","), sc, *seeds)
			if err != nil {
				return exitUsage, usageError{err}
			}
			stored[sc.Name] = dirs
		}
	}
	var cases []reports.Case
	var rows []*gateRow
	interrupted := false
	var r *gateRow
	line := newStatusLine(stderr, *quiet)
	defer line.Done()
	status := newBatchStatus(line, "gate", len(pairs))
	say := line.Writer()
	var mu sync.Mutex // guards invalid, unmet and done, which the runs read as they start, and say
	invalid, unmet, done := 0, 0, 0
	// runPair runs (or re-checks) pair i; skip when a stored gate has no
	// run of its seed.
	runPair := func(i int) (res *runner.Result, skip bool, err error) {
		sc, seed := pairs[i].sc, pairs[i].seed
		mu.Lock()
		status.start(fmt.Sprintf("%s seed %d", sc.Name, seed), done, len(pairs), gateFound(invalid, unmet))
		mu.Unlock()
		if *fromStore != "" {
			if seed > len(stored[sc.Name]) {
				return nil, true, nil
			}
			runDir := stored[sc.Name][seed-1]
			mu.Lock() // runs side by side share say
			fmt.Fprintf(say, "gate: re-checking %s ...\n", runDir)
			mu.Unlock()
			status.run(runner.Progress{Phase: runner.PhaseChecking})
			res, err = recheckStored(ctx, runDir, sc, *checkTimeout)
			if ctx.Err() != nil {
				err = fmt.Errorf("re-checking %s: %w", runDir, runner.ErrInterrupted)
			}
			return res, false, err
		}
		mu.Lock()
		fmt.Fprintf(say, "gate: %s seed %d ...\n", sc.Name, seed)
		mu.Unlock()
		res, err = runner.Run(ctx, sc, runner.WithSeed(uint64(seed)), runner.WithStore(*store), runner.WithCheck(checker.Options{Timeout: *checkTimeout}), runner.WithClusterBackend(backendUsed), runner.WithProgress(status.run))
		return res, false, err
	}
	// The runs go side by side, --parallel at a time, in the gate's order;
	// their outcomes are taken in that order too, so the table, the JUnit
	// file and the Markdown are those of runs made one after another.
	type outcome struct {
		res           *runner.Result
		err           error
		skip, stopped bool
	}
	outcomes := make([]chan outcome, len(pairs))
	for i := range outcomes {
		outcomes[i] = make(chan outcome, 1)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() {
		defer wg.Done()
		slots := make(chan struct{}, *parallel)
		for i := range pairs {
			slots <- struct{}{}
			if stop.Load() || ctx.Err() != nil {
				outcomes[i] <- outcome{stopped: true}
				<-slots
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-slots }()
				res, skip, err := runPair(i)
				outcomes[i] <- outcome{res: res, err: err, skip: skip}
			}()
		}
	}()
	for i, p := range pairs {
		o := <-outcomes[i]
		if interrupted || o.stopped {
			continue
		}
		sc, seed := p.sc, p.seed
		if r == nil || r.sc != sc {
			r = &gateRow{sc: sc, name: sc.Name, expected: expectText(sc.Expect), observed: map[string]int{}, anomalies: map[string]bool{}}
			rows = append(rows, r)
		}
		if o.skip {
			continue
		}
		res, err := o.res, o.err
		c := reports.Case{Scenario: sc.Name, Seed: uint64(seed), Expected: sc.Expect}
		if res != nil && res.Results != nil {
			c.Seed = res.Results.Seed
		}
		if res != nil {
			c.RunDir = res.Dir
			c.Elapsed = res.Elapsed
			r.elapsed += res.Elapsed
		}
		if errors.Is(err, runner.ErrInterrupted) {
			interrupted = true
			stop.Store(true)
		}
		if err != nil {
			c.Err = err.Error()
			c.Verdict = checker.Unknown
			r.observed["error"]++
		} else {
			c.Verdict = res.Results.Verdict
			c.Met = res.Results.ExpectationMet
			c.Anomalies = anomalyKinds(withLiveness(res.Results))
			observed := string(c.Verdict)
			if res.Results.FaultsFailed() {
				// The run did not do what its scenario said.
				observed = "fault-failed"
				for _, cr := range res.Results.Checkers {
					if cr.Name == "nemesis" {
						c.Err = cr.Note
					}
				}
			}
			r.observed[observed]++
			if len(res.Results.HostEvents) > 0 {
				r.host++
			}
			if len(res.Results.StepIssues) > 0 {
				r.offScript++
			}
			for _, k := range c.Anomalies {
				r.anomalies[k] = true
			}
			r.addProofs(res.Dir, withLiveness(res.Results))
		}
		r.runs++
		mu.Lock()
		if !c.Met {
			unmet++
		}
		if c.Verdict == checker.Invalid {
			invalid++
		}
		done++
		mu.Unlock()
		if c.Met {
			r.met++
		}
		cases = append(cases, c)
	}
	wg.Wait()
	line.Done()

	tw := tabwriter.NewWriter(stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tEXPECTED\tOBSERVED\tANOMALIES\tDETECTION\tTIME")
	allMet := true
	for _, r := range rows {
		if r.met != r.runs || r.runs == 0 {
			allMet = false
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d/%d\t%v\n", r.name, r.expected, r.observedText(), setText(r.anomalies), r.met, r.runs, r.elapsed.Round(100*time.Millisecond))
	}
	tw.Flush()
	if marked(rows) {
		fmt.Fprintln(stdout, runMarksLegend)
	}

	if *markdown != "" {
		var selection []string
		if *tags != "" {
			selection = append(selection, "--tags", *tags)
		}
		if *skipTags != "" {
			selection = append(selection, "--skip-tags", *skipTags)
		}
		selection = append(selection, pos...)
		if err := writeScenariosMarkdown(*markdown, rows, *seeds, selection, *fromStore); err != nil {
			return exitInternal, err
		}
	}
	if *junit != "" {
		f, err := os.Create(*junit)
		if err != nil {
			return exitUsage, usageError{err}
		}
		werr := reports.WriteJUnit(f, "jepsen-lite", cases)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return exitInternal, werr
		}
	}
	switch {
	case interrupted:
		return exitUnknown, nil
	case allMet:
		fmt.Fprintln(stdout, "gate: every expectation held")
		return exitHeld, nil
	default:
		fmt.Fprintln(stdout, "gate: SOME EXPECTATIONS DID NOT HOLD")
		return exitViolated, nil
	}
}

// storedRunDirs returns the directories of the newest n runs of sc among
// the stores that have a history, ordered by their seeds (as their
// results.json gives them), then by their times; an error when no store
// has a directory for sc. A run directory without a
// history (the run died before it started) is left out. Run directories are
// named by their start time, so the newest are the greatest names, whatever
// store holds them.
func storedRunDirs(stores []string, sc *scenarios.Scenario, n int) ([]string, error) {
	type run struct {
		dir, stamp string
		seed       uint64
	}
	var runs []run
	var missing []error
	for _, store := range stores {
		dir := filepath.Join(store, sc.Name)
		entries, err := os.ReadDir(dir)
		if err != nil {
			// A shard's store holds only the scenarios of its part.
			missing = append(missing, err)
			continue
		}
		for _, e := range entries {
			runDir := filepath.Join(dir, e.Name())
			if !e.IsDir() {
				continue
			}
			if _, err := os.Stat(filepath.Join(runDir, reports.HistoryFile)); errors.Is(err, os.ErrNotExist) {
				continue
			}
			runs = append(runs, run{dir: runDir, stamp: e.Name()})
		}
	}
	if len(missing) == len(stores) {
		return nil, fmt.Errorf("no stored runs of %s: %w", sc.Name, errors.Join(missing...))
	}
	slices.SortStableFunc(runs, func(a, b run) int { return strings.Compare(b.stamp, a.stamp) })
	runs = runs[:min(n, len(runs))]
	for i := range runs {
		if res, err := reports.ReadResults(runs[i].dir); err == nil {
			runs[i].seed = res.Seed
		}
	}
	slices.SortStableFunc(runs, func(a, b run) int {
		if a.seed != b.seed {
			return cmp.Compare(a.seed, b.seed)
		}
		return strings.Compare(a.stamp, b.stamp)
	})
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = r.dir
	}
	return out, nil
}

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

// gateRow is one scenario's results over the gate's seeds.
type gateRow struct {
	sc             *scenarios.Scenario
	name, expected string
	observed       map[string]int  // verdict (or "error") -> runs
	anomalies      map[string]bool // kinds found in any run
	// found holds, for each run that found anomalies, the first anomaly of
	// each kind, in the order of the runs.
	found     []runProof
	met, runs int
	elapsed   time.Duration
	// host counts the runs whose host clock stepped or whose harness
	// stalled, offScript those with a step that did not run as written
	// (runMarks).
	host, offScript int
}

// observedText is the row's observed verdicts with its runs' marks
// (runMarks): "valid×3 [host 1/3]".
func (r *gateRow) observedText() string {
	return countText(r.observed) + runMarks(r.host, r.offScript, r.runs)
}

// marked reports whether some row has a run mark (runMarks).
func marked(rows []*gateRow) bool {
	for _, r := range rows {
		if r.host > 0 || r.offScript > 0 {
			return true
		}
	}
	return false
}

// runProof is the first anomaly of each kind found in one run.
type runProof struct {
	dir   string                     // the run's store directory
	first map[string]checker.Anomaly // kind -> the first anomaly of that kind
}

// proofItem is one anomaly that proves a kind, and the run it came from.
type proofItem struct {
	checker.Anomaly
	dir string
}

// addProofs keeps the first anomaly of each kind that the run in dir found.
func (r *gateRow) addProofs(dir string, rs []checker.Result) {
	p := runProof{dir: dir, first: map[string]checker.Anomaly{}}
	for _, cr := range rs {
		for _, a := range cr.Anomalies {
			if _, ok := p.first[a.Kind]; !ok {
				p.first[a.Kind] = a
			}
		}
	}
	if len(p.first) > 0 {
		r.found = append(r.found, p)
	}
}

// proof returns, for each anomaly kind found, the first anomaly of that kind
// from one run, by kind: from the first run that found the most kinds, and
// for a kind it did not find, from the first run that did.
func (r *gateRow) proof() []proofItem {
	best := -1
	for i, p := range r.found {
		if best < 0 || len(p.first) > len(r.found[best].first) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	order := append([]runProof{r.found[best]}, r.found...)
	seen := map[string]bool{}
	var out []proofItem
	for _, p := range order {
		for _, k := range keys(kindSet(p.first)) {
			if !seen[k] {
				seen[k] = true
				out = append(out, proofItem{Anomaly: p.first[k], dir: p.dir})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out
}

func kindSet(m map[string]checker.Anomaly) map[string]bool {
	set := map[string]bool{}
	for k := range m {
		set[k] = true
	}
	return set
}

func expectText(e checker.Expectation) string {
	v := string(e.Verdict)
	if v == "" {
		v = string(checker.Valid)
	}
	if len(e.Anomalies) > 0 {
		v += " (" + strings.Join(e.Anomalies, ",") + ")"
	}
	if len(e.Absent) > 0 {
		v += " without " + strings.Join(e.Absent, ",")
	}
	if e.Liveness != "" {
		v += "; " + e.Liveness
	}
	return v
}

// withLiveness returns the checkers' results and, when the run found a stuck
// key, the liveness result as one more, so that the gate lists and proves
// `stuck` beside the safety anomalies.
func withLiveness(r *reports.Results) []checker.Result {
	if r.Liveness == nil || len(r.Liveness.Anomalies) == 0 {
		return r.Checkers
	}
	return append(slices.Clip(r.Checkers), checker.Result{Name: anomaly.CheckerLiveness, Verdict: r.Liveness.Verdict, Anomalies: r.Liveness.Anomalies})
}

func anomalyKinds(rs []checker.Result) []string {
	set := map[string]bool{}
	for _, r := range rs {
		for _, a := range r.Anomalies {
			set[a.Kind] = true
		}
	}
	return keys(set)
}

func keys(set map[string]bool) []string {
	var out []string
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func setText(set map[string]bool) string {
	if len(set) == 0 {
		return "-"
	}
	return strings.Join(keys(set), ",")
}

func countText(m map[string]int) string {
	var parts []string
	for _, k := range []string{"valid", "invalid", "unknown", "error"} {
		if m[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s×%d", k, m[k]))
		}
	}
	return strings.Join(parts, " ")
}
