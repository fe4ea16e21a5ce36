package gate

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/checker/anomaly"
	"github.com/jepsen-lite/jepsen-lite/reports"
	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// Row is one scenario's results over the gate's seeds.
type Row struct {
	Scenario       *scenarios.Scenario
	Name, Expected string
	Observed       map[string]int  // verdict (or "error", "fault-failed") -> runs
	Anomalies      map[string]bool // kinds found in any run
	Met, Runs      int
	Elapsed        time.Duration
	// Host counts the runs whose host clock stepped or whose harness
	// stalled, OffScript those with a step that did not run as written
	// (RunMarks).
	Host, OffScript int
	// found holds, for each run that found anomalies, the first anomaly of
	// each kind, in the order of the runs.
	found []runProof
}

// newRow returns the empty row of sc.
func newRow(sc *scenarios.Scenario) *Row {
	return &Row{Scenario: sc, Name: sc.Name, Expected: ExpectText(sc.Expect), Observed: map[string]int{}, Anomalies: map[string]bool{}}
}

// add takes the outcome of a run of p (its result, or the error that ended
// it) into the row, and returns its JUnit case.
func (r *Row) add(p Pair, res *runner.Result, err error) reports.Case {
	sc := p.Scenario
	c := reports.Case{Scenario: sc.Name, Seed: uint64(p.Seed), Expected: sc.Expect}
	if res != nil && res.Results != nil {
		c.Seed = res.Results.Seed
	}
	if res != nil {
		c.RunDir = res.Dir
		c.Elapsed = res.Elapsed
		r.Elapsed += res.Elapsed
	}
	if err != nil {
		c.Err = err.Error()
		c.Verdict = checker.Unknown
		r.Observed["error"]++
	} else {
		r.judge(&c, res)
	}
	r.Runs++
	if c.Met {
		r.Met++
	}
	return c
}

// judge fills c from a finished run's results and counts them in the row.
func (r *Row) judge(c *reports.Case, res *runner.Result) {
	c.Verdict = res.Results.Verdict
	c.Met = res.Results.ExpectationMet
	c.Anomalies = AnomalyKinds(withLiveness(res.Results))
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
	r.Observed[observed]++
	if len(res.Results.HostEvents) > 0 {
		r.Host++
	}
	if len(res.Results.StepIssues) > 0 {
		r.OffScript++
	}
	for _, k := range c.Anomalies {
		r.Anomalies[k] = true
	}
	r.AddProofs(res.Dir, withLiveness(res.Results))
}

// ObservedText is the row's observed verdicts with its runs' marks
// (RunMarks): "valid×3 [host 1/3]".
func (r *Row) ObservedText() string {
	return r.VerdictText() + RunMarks(r.Host, r.OffScript, r.Runs)
}

// VerdictText is the row's runs counted by verdict, valid, invalid,
// unknown and error in that order: "valid×1 invalid×2".
func (r *Row) VerdictText() string {
	var parts []string
	for _, k := range []string{"valid", "invalid", "unknown", "error"} {
		if r.Observed[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s×%d", k, r.Observed[k]))
		}
	}
	return strings.Join(parts, " ")
}

// AnomalyText is the kinds the row's runs found, sorted and
// comma-separated, or "-" for none.
func (r *Row) AnomalyText() string {
	if len(r.Anomalies) == 0 {
		return "-"
	}
	return strings.Join(keys(r.Anomalies), ",")
}

// Marked reports whether some row has a run mark (RunMarks).
func Marked(rows []*Row) bool {
	for _, r := range rows {
		if r.Host > 0 || r.OffScript > 0 {
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

// ProofItem is one anomaly that proves a kind, and the run it came from.
type ProofItem struct {
	checker.Anomaly
	Dir string // the run's store directory
}

// AddProofs keeps the first anomaly of each kind that the run in dir found.
func (r *Row) AddProofs(dir string, rs []checker.Result) {
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

// Proof returns, for each anomaly kind found, the first anomaly of that kind
// from one run, by kind: from the first run that found the most kinds, and
// for a kind it did not find, from the first run that did.
func (r *Row) Proof() []ProofItem {
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
	var out []ProofItem
	for _, p := range order {
		for _, k := range keys(kindSet(p.first)) {
			if !seen[k] {
				seen[k] = true
				out = append(out, ProofItem{Anomaly: p.first[k], Dir: p.dir})
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

// ExpectText is an expectation as the gate's table and the commands print
// it: "invalid (double-hold) without stale-write; stuck".
func ExpectText(e checker.Expectation) string {
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

// AnomalyKinds returns the kinds of the anomalies found in rs, sorted,
// each once.
func AnomalyKinds(rs []checker.Result) []string {
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
