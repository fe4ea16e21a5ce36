package renewbugs

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/clients"
	"github.com/jepsen-lite/jepsen-lite/hunt"
	"github.com/jepsen-lite/jepsen-lite/reports"
	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// renewBug is one planted bug: its buggy lock and the corrected twin, the
// fault kind that finds it, what a hunt knows of its lease, and the
// campaign seed and runs of the short hunt of TestHuntRenewBugs.
type renewBug struct {
	name         string
	buggy, fixed func(clients.Target) clients.Locker
	fault        string
	lease        hunt.Lease
	seed         uint64
	runs         int
}

// bugs are the three planted bugs. The seeds of the short hunts are ones
// whose first runs draw what finds the bug (a delay of 40% of the ttl and
// holds of several leases; a ttl between 1 s and 2 s held most of it), so
// that `make test` finds each in a few runs; the full measurement
// (measure_test.go) draws its campaigns' seeds blind.
var bugs = []renewBug{
	{
		name: "watchdog-slip",
		buggy: func(t clients.Target) clients.Locker {
			return &watchdogLock{redisLock: newRedisLock(t), every: 1.0 / 3, slip: true}
		},
		fixed: func(t clients.Target) clients.Locker {
			return &watchdogLock{redisLock: newRedisLock(t), every: 1.0 / 3}
		},
		fault: "latency", lease: hunt.Lease{SelfRenewing: true}, seed: 3, runs: 3,
	},
	{
		name:  "whole-seconds",
		buggy: func(t clients.Target) clients.Locker { return &secondsLock{redisLock: newRedisLock(t), truncate: true} },
		fixed: func(t clients.Target) clients.Locker { return &secondsLock{redisLock: newRedisLock(t)} },
		fault: hunt.NoFault, seed: 8, runs: 3,
	},
	{
		name: "first-renewal-from-return",
		buggy: func(t clients.Target) clients.Locker {
			return &watchdogLock{redisLock: newRedisLock(t), every: 2.0 / 3, fromReturn: true}
		},
		fixed: func(t clients.Target) clients.Locker {
			return &watchdogLock{redisLock: newRedisLock(t), every: 2.0 / 3}
		},
		fault: "latency", lease: hunt.Lease{SelfRenewing: true}, seed: 1, runs: 3,
	},
}

// runLength is the length of each hunted run.
const runLength = 3 * time.Second

// TestHuntRenewBugs hunts each planted bug from the plain Redis baseline
// with runs of its fault kind, up to the bug's few runs, to the first
// invalid run, and then its corrected twin with as many runs of the same
// seeds, which must all be valid (twinRuns: a run whose every finding the
// host's stall may explain is replaced by the next seed's): the hunt's
// drawn ttls, holds and latency delays find the bug, and nothing the twin
// does.
func TestHuntRenewBugs(t *testing.T) {
	for _, b := range bugs {
		t.Run(b.name, func(t *testing.T) {
			rep := huntLock(t, b, b.buggy, hunt.Options{Runs: b.runs, Seed: b.seed}, true)
			if rep.Stopped == "" {
				t.Fatalf("%s: no invalid run in %d runs of %s", b.name, rep.Runs, b.fault)
			}
			var twin twinRuns
			huntLock(t, b, b.fixed, hunt.Options{Runs: rep.StoppedAfter + twinSpare, Seed: b.seed, Stop: twin.enough(t, rep.StoppedAfter)}, false)
			if twin.clean < rep.StoppedAfter || len(twin.invalid) > 0 {
				t.Errorf("%s's corrected twin: %d of %d runs valid (%d wanted; %d undecided, %d invalid only where the host stalled), invalid: %v",
					b.name, twin.clean, twin.runs, rep.StoppedAfter, twin.undecided, twin.hostBlamed, twin.invalid)
			}
		})
	}
}

// twinSpare is how many runs beyond the buggy campaign's a corrected
// twin may take to make up for runs its host disturbed.
const twinSpare = 4

// twinRuns tallies a corrected twin's runs. An invalid run every one of
// whose anomalies the checker blames on the host as well (a harness stall
// or a step of the host's clock inside the finding's window:
// checker.Anomaly.Host) counts neither for nor against the twin: a stall
// of a few hundred milliseconds starves any self-renewing lock's watchdog
// as a pause of its process would, so what it finds is the machine's
// doing, not the twin's. Every other run must be decided and valid.
type twinRuns struct {
	runs, clean, hostBlamed, undecided int
	invalid                            []string
}

// enough returns the campaign's stop rule: stop after want decided runs
// that count, or at the first invalid one that counts.
func (w *twinRuns) enough(t *testing.T, want int) func(hunt.Outcome) bool {
	return func(out hunt.Outcome) bool {
		w.runs++
		switch {
		case out.Verdict == checker.Invalid && hostBlamed(t, out.Dir):
			w.hostBlamed++
			return false
		case out.Verdict == checker.Invalid:
			w.invalid = append(w.invalid, out.Finding+" ("+out.Dir+")")
			return true
		case out.Verdict != checker.Valid || out.FaultFailed:
			w.undecided++
			return false
		}
		w.clean++
		return w.clean >= want
	}
}

// hostBlamed reports whether every anomaly of the run in dir carries a
// host note.
func hostBlamed(t *testing.T, dir string) bool {
	t.Helper()
	res, err := reports.ReadResults(dir)
	if err != nil {
		t.Errorf("%s: %v", dir, err)
		return false
	}
	for _, cr := range res.Checkers {
		for _, a := range cr.Anomalies {
			if a.Host == "" {
				return false
			}
		}
	}
	return true
}

// huntLock runs a campaign of b's fault kind against the lock newLock
// makes, stopping at the first invalid run when stop is set.
func huntLock(t *testing.T, b renewBug, newLock func(clients.Target) clients.Locker, opts hunt.Options, stop bool) *hunt.Report {
	t.Helper()
	base, err := scenarios.Load("redis-single-baseline", runner.Names())
	if err != nil {
		t.Fatal(err)
	}
	base.Duration = runLength
	opts.Faults, opts.NoBaseline, opts.Lease = []string{b.fault}, b.fault != hunt.NoFault, b.lease
	if stop {
		opts.Stop = func(out hunt.Outcome) bool { return out.Verdict == checker.Invalid }
	}
	opts.Log = logWriter{t}
	factory := func(_ context.Context, target clients.Target) (clients.Locker, error) { return newLock(target), nil }
	rep, err := runner.Hunt(context.Background(), base, opts, runner.WithLockerNamed(b.name, factory), runner.WithStore(t.TempDir()))
	if err != nil {
		t.Fatalf("%s: hunt: %v", b.name, err)
	}
	return rep
}

// findings are a campaign's failing runs' first anomalies.
func findings(rep *hunt.Report) []string {
	var out []string
	for _, row := range rep.Rows {
		out = append(out, row.Findings...)
	}
	return out
}

// logWriter writes a campaign's lines to the test's log.
type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}
