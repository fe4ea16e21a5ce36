package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/history"
	"github.com/jepsen-lite/jepsen-lite/reports"
	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// storedRun is a history read back for checking, with what its run
// directory says about it.
type storedRun struct {
	h    history.History
	info history.ReadInfo
	// sc is the run's resolved scenario, nil for a bare history file or a
	// run directory whose scenario.yaml could not be read.
	sc *scenarios.Scenario
	// failed lists the faults and heals that failed during the run, as its
	// results.json says: the history records them, but only the run knew
	// which its scenario expected.
	failed []reports.FailedFault
	// stepIssues lists the steps of the run's schedule that did not run
	// as written, as its results.json says: the history records them, but
	// only the run knew how late each was by the nemesis's rule and which
	// its scenario allowed.
	stepIssues []reports.StepIssue
}

// openStored reads what a run directory says about its history (nothing,
// for a bare history file: isDir false) and returns the history file's
// path. A run directory whose setup failed is an error
// (errNothingToJudge): there is no verdict to give about it.
func openStored(path string, isDir bool) (*storedRun, string, error) {
	r := &storedRun{}
	if !isDir {
		return r, path, nil
	}
	if res, err := reports.ReadResults(path); err == nil {
		if res.SetupError != "" {
			return nil, "", fmt.Errorf("%s: %w: the run's setup failed: %s", path, errNothingToJudge, res.SetupError)
		}
		r.failed, r.stepIssues = res.FailedFaults, res.StepIssues
	}
	if sc, err := scenarios.Load(path, runner.Names()); err == nil {
		r.sc = sc
	}
	return r, filepath.Join(path, reports.HistoryFile), nil
}

// readStored reads a run directory's history (or a bare history file) and
// its scenario. A version 1 history of a register kept in the locked system
// recorded the reply's time as `applied`; that time is not the moment the
// write took effect, so it is dropped here (docs/history.md, "The header op
// and versions").
//
// A run directory whose setup failed, and a history with no worker op, are
// errors (errNothingToJudge): there is no verdict to give about them.
func readStored(path string, isDir bool) (*storedRun, error) {
	r, file, err := openStored(path, isDir)
	if err != nil {
		return nil, err
	}
	h, info, err := history.ReadFile(file)
	if err != nil {
		return nil, err
	}
	if err := judgeable(file, tallyOf(h), info); err != nil {
		return nil, err
	}
	r.h, r.info = h, info
	history.DropReplyTimes(r.h, r.guarded())
	return r, nil
}

// guarded reports whether the run's register was kept in the locked
// system (resource: guarded).
func (r *storedRun) guarded() bool { return r.sc != nil && r.sc.Resource == scenarios.Guarded }

// options returns the checker options for the run: the scenario's drift
// (drift / ttl) unless drift is set (≥ 0; 0 means none).
func (r *storedRun) options(drift float64, driftSet bool, opts checker.Options) checker.Options {
	if r.sc != nil && r.sc.Lock.TTL > 0 {
		opts.Drift = float64(r.sc.Lock.Drift) / float64(r.sc.Lock.TTL)
	}
	if driftSet {
		opts.Drift = drift
		if drift == 0 {
			opts.Drift = checker.NoDrift
		}
	}
	return opts
}

// check runs every checker over the stored history with the current code
// and returns the results document, judged against the scenario's
// expectation when the run has one.
func (r *storedRun) check(ctx context.Context, opts checker.Options) *reports.Results {
	res := &reports.Results{Stats: reports.CountStats(r.h), Truncated: r.info.Truncated, HistoryVersion: history.Version(r.h)}
	res.Checkers, res.Liveness = checker.CheckWithLiveness(ctx, r.h, opts, checker.LivenessOptions{})
	res.SetHostEvents(checker.HostEvents(r.h))
	r.judge(res)
	return res
}

// checkFile is check for the history file of the run (openStored), read
// by checker.CheckFile, which tells progress how far it has come: the ops
// are counted, and their reply times dropped by readStored's rule, as they
// are read. It returns the results document and the number of ops; a file
// that cannot be read, a line that is not an op and a history with nothing
// to judge are errors, as for readStored.
func (r *storedRun) checkFile(ctx context.Context, file string, opts checker.Options, progress func(checker.FileProgress)) (*reports.Results, int, error) {
	t := tally{version: 1}
	guarded := r.guarded()
	rewrite := func(op *history.Op) {
		t.add(op)
		if guarded && t.version < 2 && op.F == history.FWrite {
			op.Applied = 0 // history.DropReplyTimes, op by op
		}
	}
	fr, err := checker.CheckFile(ctx, file, checker.FileOptions{Options: opts, Progress: progress, Rewrite: rewrite})
	if err != nil {
		return nil, 0, err
	}
	// A history that stops being well-formed before its first worker op
	// (a bad task table, header or fault) is refused for that op, naming
	// its line, not as one with nothing to judge: the reading stopped there.
	// So is one whose check's budget was spent before its first worker op
	// was read: its results say so.
	if err := judgeable(file, t, fr.Info); err != nil && !malformedAt(fr.Results) && !fr.BudgetSpent {
		return nil, 0, err
	}
	res := &reports.Results{Stats: t.stats, Truncated: fr.Info.Truncated, HistoryVersion: t.version}
	res.Checkers, res.Liveness = fr.Results, fr.Liveness
	res.SetHostEvents(fr.HostEvents)
	r.judge(res)
	return res, fr.Ops, nil
}

// judge completes res, whose checkers have run: the scenario and its
// expectation when the run has one, the verdict, whether the expectation
// was met, and the faults that failed and the steps that did not run as
// written.
func (r *storedRun) judge(res *reports.Results) {
	if r.sc != nil {
		res.Scenario, res.Seed = r.sc.Name, r.sc.Seed
		exp := r.sc.Expect
		res.Expected = &exp
	}
	res.Verdict = checker.Overall(res.Checkers)
	if res.Expected != nil {
		res.ExpectationMet = res.Expected.Met(res.Verdict, res.Checkers, res.Liveness)
	}
	res.FailedFaults, res.StepIssues = r.failed, r.stepIssues
	res.JudgeFailedFaults(nil)
}

// tally is what the check of a stored history counts of its ops, one at a
// time, in the order of the file.
type tally struct {
	// ops and workers count the ops and the worker ops among them.
	ops, workers int
	// headerFirst reports whether the first op is the header op.
	headerFirst bool
	// version is the history's format version (history.Version): the
	// header's, 1 without one.
	version int
	// stats are reports.CountStats's counts.
	stats reports.Stats
}

// add counts op, the next of the history.
func (t *tally) add(op *history.Op) {
	if t.ops == 0 && op.IsHeader() {
		t.headerFirst = true
		t.version = history.Version(history.History{*op})
	} else {
		t.stats.Ops++
	}
	t.ops++
	if op.IsNemesis() {
		return
	}
	t.workers++
	switch op.Type {
	case history.OK:
		t.stats.OK++
	case history.Fail:
		t.stats.Fail++
	case history.Info:
		t.stats.Info++
	}
}

// tallyOf returns the tally of h.
func tallyOf(h history.History) tally {
	t := tally{version: 1}
	for i := range h {
		t.add(&h[i])
	}
	return t
}

// errNothingToJudge reports a history that gives no verdict at all: it holds
// no worker op, or it comes from a run whose setup failed.
var errNothingToJudge = errors.New("nothing to judge")

// judgeable returns an error wrapping errNothingToJudge, naming file, when
// the history, as t counted it, holds no worker op (an empty file, a header
// alone, nemesis ops alone, or a file whose only line was incomplete and
// was left out).
func judgeable(file string, t tally, info history.ReadInfo) error {
	if t.workers > 0 {
		return nil
	}
	why := "the history has no worker op"
	switch {
	case t.ops == 0 && info.Truncated:
		why = "its only line was incomplete and was left out, and nothing is left"
	case t.ops == 0:
		why = "the file holds no op"
	case t.ops == 1 && t.headerFirst:
		why = "the history holds only its header"
	}
	return fmt.Errorf("%s: %w: %s", file, errNothingToJudge, why)
}

// malformedAt reports whether results are those of a history found not
// well-formed: the well-formed checker's malformed-history anomaly.
func malformedAt(results []checker.Result) bool {
	return len(results) > 0 && slices.ContainsFunc(results[0].Anomalies, func(a checker.Anomaly) bool { return a.Kind == checker.Malformed })
}
