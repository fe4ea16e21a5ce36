package runner

import (
	"context"
	"errors"
	"log"
	"strings"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/history"
	"github.com/jepsen-lite/jepsen-lite/nemesis"
	"github.com/jepsen-lite/jepsen-lite/reports"
)

// verdict is what the check stage hands to the report: the run's results
// and the checker's analysis of its history (nil when the checkers did not
// run or the history is not well-formed).
type verdict struct {
	results *reports.Results
	facts   *checker.Facts
}

// check is the check stage: it checks the recorded history (unless the run
// was interrupted or its lock client broke its protocol: then the verdict
// is unknown), holds the verdict against the scenario's expectation and
// judges the run by the faults that failed.
func check(ctx context.Context, p *plan, st *runStore, rd recorded) verdict {
	s := &p.s
	h := rd.history
	expect := s.Expect
	results := &reports.Results{Scenario: s.Name, Lock: s.Lock.Algorithm, OwnLock: s.Lock.Own, Seed: s.Seed, HistoryVersion: history.Version(h), Stats: reports.CountStats(h), LockClient: rd.lockClient, Expected: &expect}
	var facts *checker.Facts
	switch {
	case errors.Is(rd.err, ErrLockClient):
		results.Verdict = checker.Unknown
		results.Checkers = []checker.Result{{Name: "run", Verdict: checker.Unknown, Note: "the lock client broke its protocol, so the run stopped: " + rd.err.Error()}}
	case rd.historyErr != nil:
		results.Verdict = checker.Unknown
		results.Checkers = []checker.Result{{Name: "run", Verdict: checker.Unknown, Note: "the history could not be recorded: " + rd.historyErr.Error()}}
	case rd.interrupted:
		results.Verdict = checker.Unknown
		results.Checkers = []checker.Result{{Name: "run", Verdict: checker.Unknown, Note: "the run was interrupted; check the stored history with `jepsen-lite check`"}}
	default:
		copts := p.cfg.check
		copts.OutDir = st.dir
		if copts.Drift == 0 && s.Lock.TTL > 0 {
			copts.Drift = float64(s.Lock.Drift) / float64(s.Lock.TTL)
		}
		results.Checkers, results.Liveness, facts = checker.CheckAnalyzed(context.WithoutCancel(ctx), h, copts, checker.LivenessOptions{})
		results.Verdict = checker.Overall(results.Checkers)
		if facts != nil {
			results.Margins = checker.Margins(h, copts.EffectiveDrift())
		}
		results.ExpectationMet = expect.Met(results.Verdict, results.Checkers, results.Liveness)
	}
	judgeFaults(results, rd.nem, s.Nemesis.Steps, rd.interrupted, st.log)
	return verdict{results: results, facts: facts}
}

// report is the report stage: it writes results.json, and report.html from
// what the run holds in memory (its results, history, scenario and the
// checker's analysis; the offline `report` command reads the same back
// from the store), and points the store's latest link at the run. A
// report that cannot be written is logged: the verdict stands without it.
func report(p *plan, st *runStore, rd recorded, v verdict) error {
	err := reports.WriteResults(st.dir, v.results)
	in := reports.ReportInput{
		Results:     *v.results,
		History:     rd.history,
		Description: strings.TrimSpace(p.s.Description),
		Scenario:    string(st.scenario),
		Links:       reports.RunLinks(st.dir),
		Facts:       v.facts,
	}
	if rerr := reports.WriteReport(st.dir, in); rerr != nil {
		st.log.Printf("report: %v", rerr)
	}
	if lerr := reports.SetLatest(p.cfg.store, st.dir); lerr != nil && err == nil {
		err = lerr
	}
	return err
}

// judgeFaults lists in results every fault and heal of the run that failed
// (nem is nil when the run never got to its nemesis), logs each, and judges
// the run by them (reports.Results.JudgeFailedFaults): a step that expected a
// failure that did not come counts only when the run was not interrupted.
func judgeFaults(results *reports.Results, nem *nemesis.Runner, steps nemesis.Schedule, interrupted bool, logger *log.Logger) {
	if nem == nil {
		return
	}
	failedSteps := map[string]bool{}
	for _, err := range nem.Failed() {
		f := reports.FailedFault{Step: err.Error(), Error: err.Error()}
		var fe *nemesis.FailedError
		if errors.As(err, &fe) {
			f = reports.FailedFault{Step: fe.Step.String(), Heal: fe.Heal, Error: fe.Err.Error(), Expected: fe.Step.ExpectFailure}
			failedSteps[fe.Step.String()] = true
		}
		results.FailedFaults = append(results.FailedFaults, f)
		logger.Printf("failed (heal %v, expected %v): %s: %s", f.Heal, f.Expected, f.Step, f.Error)
	}
	var missing []string
	for _, st := range steps {
		if st.ExpectFailure && !interrupted && !failedSteps[st.String()] {
			missing = append(missing, st.String())
		}
	}
	results.JudgeFailedFaults(missing)
}
