package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/reports"
	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

const gateUsage = `Usage: jepsen-lite gate [--tags quick] [--seeds N] [--junit FILE] [scenario ...]

Runs the selected scenarios (by default every built-in one carrying all of
--tags) with seeds 1..N each, prints a table (scenario, expected, observed,
anomalies, detection rate over the seeds, time), optionally writes JUnit XML
with one testcase per scenario and seed, and exits 0 only if every run ended
as its scenario expected. A regression gate for anyone who ships a lock.

With --from-store it runs nothing and summarizes the newest N stored runs of
each scenario instead, judged against the scenario's current expectation:
validation offline, on saved runs.

Examples:
  jepsen-lite gate --tags quick
  jepsen-lite gate --seeds 20 --junit gate.xml
  jepsen-lite gate redlock-clock-jump redlock-gc-pause --seeds 5
  jepsen-lite gate --tags quick --seeds 20 --from-store store --markdown docs/scenarios.md`

func gateCmd(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlagSet("gate", gateUsage, stderr)
	tags := fs.String("tags", "", "comma-separated tags a scenario must all carry")
	skipTags := fs.String("skip-tags", "", "comma-separated tags that leave a scenario out")
	seeds := fs.Int("seeds", 1, "runs per scenario, with seeds 1..N")
	junit := fs.String("junit", "", "write JUnit XML to this file")
	store := fs.String("store", "store", "the store directory")
	checkTimeout := fs.Duration("check-timeout", 5*time.Minute, "time budget of the checkers per run")
	backend := fs.String("backend", "local", "where the servers run: local or docker")
	fromStore := fs.String("from-store", "", "run nothing: summarize the newest --seeds stored runs of each scenario in this store, judged against the scenario's current expectation")
	markdown := fs.String("markdown", "", "write the scenario catalog with this gate's results as Markdown to this file (docs/scenarios.md)")
	pos, err := parseArgs(fs, args)
	if errors.Is(err, errHelp) {
		return exitHeld, nil
	}
	if err != nil {
		return exitUsage, err
	}
	start, err := backendFor(*backend)
	if err != nil {
		return exitUsage, err
	}
	if *seeds < 1 {
		return exitUsage, usagef("--seeds must be at least 1")
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

	stored := map[string][]*runner.Result{}
	if *fromStore != "" {
		for _, sc := range selected {
			runs, err := storedRuns(*fromStore, sc, *seeds)
			if err != nil {
				return exitUsage, usageError{err}
			}
			stored[sc.Name] = runs
		}
	}
	var cases []reports.Case
	var rows []*gateRow
	interrupted := false
	for _, sc := range selected {
		r := &gateRow{sc: sc, name: sc.Name, expected: expectText(sc.Expect), observed: map[string]int{}, anomalies: map[string]bool{}, examples: map[string]string{}}
		rows = append(rows, r)
		for seed := 1; seed <= *seeds && !interrupted; seed++ {
			var res *runner.Result
			var err error
			if *fromStore != "" {
				if seed > len(stored[sc.Name]) {
					break
				}
				res = stored[sc.Name][seed-1]
			} else {
				fmt.Fprintf(stderr, "gate: %s seed %d ...\n", sc.Name, seed)
				res, err = runner.Run(ctx, sc, runner.WithSeed(uint64(seed)), runner.WithStore(*store), runner.WithCheck(checker.Options{Timeout: *checkTimeout}), runner.WithBackend(start))
			}
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
			}
			if err != nil {
				c.Err = err.Error()
				c.Verdict = checker.Unknown
				r.observed["error"]++
			} else {
				c.Verdict = res.Results.Verdict
				c.Met = res.Results.ExpectationMet
				c.Anomalies = anomalyKinds(res.Results.Checkers)
				r.observed[string(c.Verdict)]++
				for _, k := range c.Anomalies {
					r.anomalies[k] = true
				}
				for _, cr := range res.Results.Checkers {
					for _, a := range cr.Anomalies {
						if _, ok := r.examples[a.Kind]; !ok {
							r.examples[a.Kind] = a.Message
						}
					}
				}
			}
			r.runs++
			if c.Met {
				r.met++
			}
			cases = append(cases, c)
		}
	}

	tw := tabwriter.NewWriter(stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tEXPECTED\tOBSERVED\tANOMALIES\tDETECTION\tTIME")
	allMet := true
	for _, r := range rows {
		if r.met != r.runs || r.runs == 0 {
			allMet = false
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d/%d\t%v\n", r.name, r.expected, countText(r.observed), setText(r.anomalies), r.met, r.runs, r.elapsed.Round(100*time.Millisecond))
	}
	tw.Flush()

	if *markdown != "" {
		var selection []string
		if *tags != "" {
			selection = append(selection, "--tags", *tags)
		}
		if *skipTags != "" {
			selection = append(selection, "--skip-tags", *skipTags)
		}
		selection = append(selection, pos...)
		if err := writeScenariosMarkdown(*markdown, rows, *seeds, selection); err != nil {
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

// storedRuns returns the newest n runs of sc in store, oldest first, with
// their expectation judged again against sc's current one. A run's time is
// from its directory's start stamp to its results.json.
func storedRuns(store string, sc *scenarios.Scenario, n int) ([]*runner.Result, error) {
	dir := filepath.Join(store, sc.Name)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("no stored runs of %s: %w", sc.Name, err)
	}
	var out []*runner.Result
	for i := len(entries) - 1; i >= 0 && len(out) < n; i-- {
		runDir := filepath.Join(dir, entries[i].Name())
		r, err := reports.ReadResults(runDir)
		if err != nil {
			continue // a run that died before its results: not counted
		}
		r.ExpectationMet = sc.Expect.Met(r.Verdict, r.Checkers)
		res := &runner.Result{Dir: runDir, Results: r}
		if began, err := time.Parse(reports.RunDirTimestampFormat, strings.SplitN(entries[i].Name(), "-", 2)[0]); err == nil {
			if st, err := os.Stat(filepath.Join(runDir, reports.ResultsFile)); err == nil {
				res.Elapsed = st.ModTime().Sub(began)
			}
		}
		out = append([]*runner.Result{res}, out...)
	}
	return out, nil
}

// gateRow is one scenario's results over the gate's seeds.
type gateRow struct {
	sc             *scenarios.Scenario
	name, expected string
	observed       map[string]int    // verdict (or "error") -> runs
	anomalies      map[string]bool   // kinds found in any run
	examples       map[string]string // kind -> the first sentence found
	met, runs      int
	elapsed        time.Duration
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
	return v
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
