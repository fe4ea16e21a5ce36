package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/clients"
	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/hunt"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// Hunt runs a fault campaign (package hunt) on base: for every fault kind
// the system and backend can take (or those of h.Faults), h.Runs runs of a
// random schedule of that kind, each a Run with opts and the run's seed.
// opts give what every run shares: the store, the backend, a Go Locker
// (WithLocker) to hunt with instead of the scenario's algorithm. A run
// that validation refuses, or whose servers cannot start, makes its kind
// not applicable; an interrupted run ends the campaign with ErrInterrupted.
func Hunt(ctx context.Context, base *scenarios.Scenario, h hunt.Options, opts ...Option) (*hunt.Report, error) {
	cfg := newConfig(opts)
	if h.Backend == "" {
		if b, ok := cfg.backend.(clusterBackend); ok {
			h.Backend = b.b.Name
		}
	}
	validate := func(sc *scenarios.Scenario) error {
		if sc.Resource == scenarios.Fenced && sc.Resource != base.Resource && !grantsTokens(sc, &cfg) {
			return fmt.Errorf("%w: %s: a fenced register needs fencing tokens, and the lock declares none", ErrSetup, sc.Name)
		}
		return Validate(sc, opts...)
	}
	run := func(ctx context.Context, sc *scenarios.Scenario) (hunt.Outcome, error) {
		if err := validate(sc); err != nil {
			return hunt.Outcome{}, fmt.Errorf("%w: %v", hunt.ErrNotApplicable, err)
		}
		res, err := Run(ctx, sc, append(opts[:len(opts):len(opts)], WithSeed(sc.Seed))...)
		out := hunt.Outcome{Verdict: checker.Unknown}
		if res != nil {
			out.Dir = res.Dir
		}
		var incapable *IncapableError
		switch {
		case errors.Is(err, ErrInterrupted):
			return out, err
		case errors.As(err, &incapable):
			return out, &hunt.WorkloadError{Field: incapable.Field, Err: err}
		case errors.Is(err, ErrSetup):
			return out, fmt.Errorf("%w: %v", hunt.ErrNotApplicable, err)
		case err != nil:
			return out, err
		}
		out.Verdict = res.Results.Verdict
		out.Margins = res.Results.Margins
		out.FaultFailed = res.Results.FaultsFailed()
		out.OutOfBudget = res.Results.Verdict == checker.Unknown && checker.OutOfBudget(res.Results.Checkers)
		for _, f := range res.Results.FailedFaults {
			if !f.Expected && strings.Contains(f.Error, cluster.ErrUnavailable.Error()) {
				out.Unavailable = f.Error
			}
		}
		out.Finding = checker.FirstFinding(res.Results.Checkers)
		out.HostTrouble, out.OffScript = len(res.Results.HostEvents) > 0, len(res.Results.StepIssues) > 0
		seen := map[string]bool{}
		for _, cr := range res.Results.Checkers {
			for _, a := range cr.Anomalies {
				if !seen[a.Kind] {
					seen[a.Kind] = true
					out.Anomalies = append(out.Anomalies, a.Kind)
				}
			}
		}
		slices.Sort(out.Anomalies)
		return out, nil
	}
	return hunt.Campaign(ctx, base, run, validate, h)
}

// grantsTokens reports whether the scenario's built-in algorithm declares
// fencing tokens (clients.LeaseSemantics.Token). A Locker of the caller's
// own and an external client (clients.ExecAlgorithm) declare none.
func grantsTokens(sc *scenarios.Scenario, cfg *config) bool {
	if cfg.factory != nil {
		return false
	}
	alg, err := clients.Lookup(sc.Lock.Algorithm)
	return err == nil && alg.Lease != nil && alg.Lease.Token != ""
}
