package runner

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/checker/anomaly"
	"github.com/jepsen-lite/jepsen-lite/history"
	"github.com/jepsen-lite/jepsen-lite/nemesis"
	"github.com/jepsen-lite/jepsen-lite/reports"
)

// verdict is what the check stage hands to the report: the run's results.
type verdict struct {
	results *reports.Results
}

// check is the check stage: it checks the recorded history (unless the run
// was interrupted or its lock client broke its protocol: then the verdict
// is unknown), holds the verdict against the scenario's expectation and
// judges the run by the faults that failed.
func check(ctx context.Context, p *plan, st *runStore, rd recorded) verdict {
	s := &p.s
	expect := s.Expect
	results := &reports.Results{Scenario: s.Name, Lock: s.Lock.Algorithm, OwnLock: s.Lock.Own, Seed: s.Seed, HistoryVersion: history.FormatVersion, Stats: rd.stats, LockClient: rd.lockClient, Expected: &expect}
	if rd.ops == 0 {
		results.HistoryVersion = history.Version(nil) // no header was recorded
	}
	switch {
	case errors.Is(rd.err, ErrLockClient):
		results.Verdict = checker.Unknown
		results.Checkers = []checker.Result{{Name: "run", Verdict: checker.Unknown, Note: "the lock client broke its protocol, so the run stopped: " + rd.err.Error()}}
	case rd.historyErr != nil:
		results.Verdict = checker.Unknown
		results.Checkers = []checker.Result{{Name: "run", Verdict: checker.Unknown, Note: "the history could not be recorded: " + rd.historyErr.Error()}}
	case rd.interrupted:
		results.Verdict = checker.Unknown
		results.Checkers = []checker.Result{{Name: "run", Verdict: checker.Unknown, Note: fmt.Sprintf("the run was interrupted; check the stored history with `jepsen-lite check %s`", st.dir)}}
	default:
		copts := p.cfg.check
		copts.OutDir = st.dir
		if copts.Drift == 0 && s.Lock.TTL > 0 {
			copts.Drift = float64(s.Lock.Drift) / float64(s.Lock.TTL)
		}
		checkRecorded(ctx, results, st, rd, copts)
		judgeSilent(results, rd.silent)
	}
	judgeFaults(results, rd.nem, s.Nemesis.Steps, rd.interrupted, st.log)
	return verdict{results: results}
}

// checkRecorded reads the run's history back from its file as a stream and
// checks it (checker.CheckFile), so that a run of any length is checked in
// bounded memory. A file that cannot be read back, or that holds other than
// the ops recorded, gives an unknown verdict saying so. A check
// interrupted (ctx ends: Ctrl-C) stops within a second and gives an
// unknown verdict that says so and how to check the stored history later;
// Run then returns ErrInterrupted.
func checkRecorded(ctx context.Context, results *reports.Results, st *runStore, rd recorded, copts checker.Options) {
	res, err := checker.CheckFile(ctx, st.historyPath(), checker.FileOptions{Options: copts})
	if errors.Is(err, checker.ErrInterrupted) {
		results.Verdict = checker.Unknown
		results.Checkers = []checker.Result{{Name: "run", Verdict: checker.Unknown, Note: fmt.Sprintf("the check was interrupted; check the stored history with `jepsen-lite check %s`", st.dir)}}
		return
	}
	if err == nil && res.Results[0].Verdict == checker.Valid && res.Ops != rd.ops {
		err = fmt.Errorf("%d ops in the file, %d recorded", res.Ops, rd.ops)
	}
	if err != nil {
		results.Verdict = checker.Unknown
		results.Checkers = []checker.Result{{Name: "run", Verdict: checker.Unknown, Note: "the history could not be read back: " + err.Error()}}
		return
	}
	results.Checkers, results.Liveness, results.Margins = res.Results, res.Liveness, res.Margins
	results.SetHostEvents(res.HostEvents)
	results.Verdict = checker.Overall(results.Checkers)
	results.ExpectationMet = results.Expected.Met(results.Verdict, results.Checkers, results.Liveness)
}

// report is the report stage: it writes results.json, and report.html from
// the run's results and scenario and its history read back from
// history.jsonl: whole, with the checker's analysis, or, for a history of
// more than reports.LongHistoryOps ops, in summary, op by op (the offline
// `report` command reads the same from the store); and points the store's
// latest link at the run. A report that cannot be written is logged: the
// verdict stands without it. Once ctx has ended (Ctrl-C), report.html
// draws no history, so that the stage ends at once: `jepsen-lite report`
// draws it later.
func report(ctx context.Context, p *plan, st *runStore, rd recorded, v verdict) error {
	err := reports.WriteResults(st.dir, v.results)
	in := reports.ReportInput{
		Results:     *v.results,
		Description: strings.TrimSpace(p.s.Description),
		Scenario:    string(st.scenario),
		Links:       reports.RunLinks(st.dir),
	}
	rerr := error(nil)
	switch {
	case ctx.Err() != nil:
	case rd.ops > reports.LongHistoryOps:
		// drawn in summary, read op by op; the run's history is of this
		// version: no reply times to drop
		in.Summary, rerr = reports.SummarizeFile(st.historyPath(), v.results, false)
	case rd.ops > 0:
		// the report draws every op: it reads the history back whole
		in.History, _, rerr = history.ReadFile(st.historyPath())
		if rerr == nil && len(v.results.Checkers) > 0 && v.results.Checkers[0].Name == anomaly.CheckerWellFormed && v.results.Checkers[0].Verdict == checker.Valid {
			in.Facts = checker.Analyze(in.History)
		}
	}
	if rerr == nil {
		rerr = reports.WriteReport(st.dir, in)
	}
	if rerr != nil {
		st.log.Printf("report: %v", rerr)
	}
	if lerr := reports.SetLatest(p.cfg.store, st.dir); lerr != nil && err == nil {
		err = lerr
	}
	return err
}

// judgeSilent judges a run some of whose workers' lock client never
// answered (silent): what the others' ops prove stands, so an anomaly found
// keeps the run invalid, but a run found valid tested nothing of those
// workers and is unknown. A "run" result with its note says which.
func judgeSilent(results *reports.Results, silent []string) {
	if len(silent) == 0 || results.Checkers == nil || results.Checkers[0].Name == "run" {
		return
	}
	results.Checkers = append(results.Checkers, checker.Result{Name: "run", Verdict: checker.Unknown, Note: silentNote(silent)})
	results.Verdict = checker.Overall(results.Checkers)
	results.ExpectationMet = results.Expected.Met(results.Verdict, results.Checkers, results.Liveness)
}

// judgeFaults lists in results every fault and heal of the run that failed
// and every step that did not run as written (nem is nil when the run never
// got to its nemesis), logs them, and judges the run by them
// (reports.Results.JudgeFailedFaults): a step that expected a failure that
// did not come counts only when the run was not interrupted, and a step
// with expect-failure that was never reached did not fail to fail: it
// never ran.
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
	for _, is := range listStepIssues(results, nem.StepIssues(), logger) {
		failedSteps[is] = true
	}
	var missing []string
	for _, st := range steps {
		if st.ExpectFailure && !interrupted && !failedSteps[st.String()] {
			missing = append(missing, st.String())
		}
	}
	results.JudgeFailedFaults(missing)
}

// stepIssuesLogged is how many steps of a run that did not run as written
// run.log names one by one; results.json and the history hold them all.
const stepIssuesLogged = 20

// listStepIssues lists in results the steps of the run that did not run as
// written (nemesis.Runner.StepIssues), a step with expect-failure as one
// that allowed it, and logs them: a line counting them and a line for each
// of the first stepIssuesLogged. It returns the steps that were not run,
// each in one line.
func listStepIssues(results *reports.Results, issues []nemesis.StepIssue, logger *log.Logger) (notRun []string) {
	for _, is := range issues {
		s := reports.StepIssue{Step: is.Step.String(), Issue: reports.StepLate, LateNS: int64(is.Late), Heal: is.Heal, Expected: is.Step.ExpectFailure}
		if is.NotRun {
			s.Issue, s.LateNS = reports.StepNotRun, 0
			notRun = append(notRun, s.Step)
		}
		results.StepIssues = append(results.StepIssues, s)
	}
	if len(issues) == 0 {
		return nil
	}
	logger.Printf("%d steps did not run as written (%d not run, %d late beyond %v)", len(issues), len(notRun), len(issues)-len(notRun), nemesis.StepTolerance)
	for i, s := range results.StepIssues {
		if i == stepIssuesLogged {
			logger.Printf("... and %d more (see results.json)", len(issues)-i)
			break
		}
		logger.Printf("%s (heal %v, late %v, expected %v): %s", s.Issue, s.Heal, time.Duration(s.LateNS), s.Expected, s.Step)
	}
	return notRun
}
