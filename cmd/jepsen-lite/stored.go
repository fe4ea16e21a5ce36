package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

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
	file := path
	if isDir {
		file = filepath.Join(path, reports.HistoryFile)
		if res, err := reports.ReadResults(path); err == nil && res.SetupError != "" {
			return nil, fmt.Errorf("%s: %w: the run's setup failed: %s", path, errNothingToJudge, res.SetupError)
		}
	}
	h, info, err := history.ReadFile(file)
	if err != nil {
		return nil, err
	}
	if err := judgeable(file, h, info); err != nil {
		return nil, err
	}
	r := &storedRun{h: h, info: info}
	if isDir {
		if res, err := reports.ReadResults(path); err == nil {
			r.failed = res.FailedFaults
		}
		if sc, err := scenarios.Load(path, runner.Names()); err == nil {
			r.sc = sc
		}
	}
	history.DropReplyTimes(r.h, r.sc != nil && r.sc.Resource == scenarios.Guarded)
	return r, nil
}

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
	if r.sc != nil {
		res.Scenario, res.Seed = r.sc.Name, r.sc.Seed
		exp := r.sc.Expect
		res.Expected = &exp
	}
	res.Checkers, res.Liveness = checker.CheckWithLiveness(ctx, r.h, opts, checker.LivenessOptions{})
	res.Verdict = checker.Overall(res.Checkers)
	if res.Expected != nil {
		res.ExpectationMet = res.Expected.Met(res.Verdict, res.Checkers, res.Liveness)
	}
	res.FailedFaults = r.failed
	res.JudgeFailedFaults(nil)
	return res
}

// errNothingToJudge reports a history that gives no verdict at all: it holds
// no worker op, or it comes from a run whose setup failed.
var errNothingToJudge = errors.New("nothing to judge")

// judgeable returns an error wrapping errNothingToJudge, naming file, when h
// holds no worker op (an empty file, a header alone, nemesis ops alone, or a
// file whose only line was incomplete and was left out).
func judgeable(file string, h history.History, info history.ReadInfo) error {
	for _, op := range h {
		if !op.IsNemesis() {
			return nil
		}
	}
	why := "the history has no worker op"
	switch {
	case len(h) == 0 && info.Truncated:
		why = "its only line was incomplete and was left out, and nothing is left"
	case len(h) == 0:
		why = "the file holds no op"
	case len(h) == 1 && h[0].IsHeader():
		why = "the history holds only its header"
	}
	return fmt.Errorf("%s: %w: %s", file, errNothingToJudge, why)
}
