package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
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
// The runs' ttls are drawn within what the lock declares (huntLease)
// unless h.Lease bounds them otherwise; h.Lease.SelfRenewing adds to
// what the lock declares.
// opts give what every run shares: the store, the backend, a Go Locker
// (WithLocker) to hunt with instead of the scenario's algorithm. A fenced
// register is drawn only for a lock that declares fencing tokens: a
// built-in algorithm that has them, or a Go Locker or external client
// given WithLockTokens. A run
// that validation refuses (nothing started) makes its kind not applicable.
// A run whose setup fails after validation passed (a server would not
// start, a worker's client could not be made: ErrSetup from Run) is a run
// of unknown verdict (hunt.Outcome.SetupFailed), kept in the store, and
// the campaign goes on to the kind's next run; after
// hunt.MaxSetupFailures of them in a row it gives the kind up
// (hunt.Row.SetupGaveUp). A lock that cannot serve a drawn workload field
// has the field drawn again without it (hunt.WorkloadError). An
// interrupted run ends the campaign with ErrInterrupted.
func Hunt(ctx context.Context, base *scenarios.Scenario, h hunt.Options, opts ...Option) (*hunt.Report, error) {
	cfg := newConfig(opts)
	if h.Backend == "" {
		if b, ok := cfg.backend.(clusterBackend); ok {
			h.Backend = b.b.Name
		}
	}
	h.Lease = huntLease(base, &cfg, h.Lease)
	validate, err := huntValidate(ctx, base, &cfg, h.Log, opts)
	if err != nil {
		return nil, err
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
		case errors.Is(err, ErrSetup) && res == nil:
			// Run's own validation refused it: nothing started.
			return out, fmt.Errorf("%w: %v", hunt.ErrNotApplicable, err)
		case errors.Is(err, ErrSetup):
			// The error on one line, for the campaign's log and table; the
			// run's store keeps it whole (results.json's setup_error).
			out.SetupFailed = strings.Join(strings.Fields(err.Error()), " ")
			return out, nil
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

// huntValidate returns the validation of a hunt's runs on base: Validate,
// and no fenced register for a lock that declares no fencing tokens
// (grantsTokens). For a Locker of the caller's own (WithLocker) and an
// external client (the exec algorithm) it first learns, before any
// cluster starts, the abilities of one client made with no server
// answering (probeAbilities), and refuses a waiting acquire to a lock that
// cannot wait and renewal to one that cannot renew, so that neither is
// drawn. A probe that fails is logged to log: the hunt then learns what
// the lock cannot do from its runs (hunt.WorkloadError). Only an interrupt
// while probing is an error.
func huntValidate(ctx context.Context, base *scenarios.Scenario, cfg *config, log io.Writer, opts []Option) (func(*scenarios.Scenario) error, error) {
	if log == nil {
		log = io.Discard
	}
	var can map[clients.Capability]bool
	if cfg.factory != nil || base.Lock.Algorithm == clients.ExecAlgorithm {
		name, probed, err := probeAbilities(ctx, base, cfg.factory)
		switch {
		case ctx.Err() != nil:
			return nil, fmt.Errorf("%w: %w", ErrInterrupted, ctx.Err())
		case err != nil:
			fmt.Fprintf(log, "hunt: the lock's abilities are unknown before the campaign (%v); its runs show what it cannot do\n", err)
		default:
			can = probed
			fmt.Fprintf(log, "hunt: the lock client %q claims wait %v, renew %v: a waiting acquire is drawn only with wait, a renewal only with renew\n", name, can[clients.CapWait], can[clients.CapRenew])
		}
	}
	return func(sc *scenarios.Scenario) error {
		if sc.Resource == scenarios.Fenced && sc.Resource != base.Resource && !grantsTokens(sc, cfg) {
			return fmt.Errorf("%w: %s: a fenced register needs fencing tokens, and the lock declares none", ErrSetup, sc.Name)
		}
		if can != nil && sc.Lock.Acquire == scenarios.AcquireWait && !can[clients.CapWait] {
			return &IncapableError{Field: "lock.acquire", Reason: "the lock cannot wait"}
		}
		if can != nil && sc.Lock.Renew > 0 && !can[clients.CapRenew] {
			return &IncapableError{Field: "lock.renew", Reason: "the lock cannot renew"}
		}
		return Validate(sc, opts...)
	}, nil
}

// grantsTokens reports whether the scenario's lock declares fencing
// tokens: a built-in algorithm in its lease semantics
// (clients.LeaseSemantics.Token); a Locker of the caller's own and an
// external client (clients.ExecAlgorithm) only through WithLockTokens.
func grantsTokens(sc *scenarios.Scenario, cfg *config) bool {
	if cfg.factory != nil || sc.Lock.Algorithm == clients.ExecAlgorithm {
		return cfg.tokens
	}
	alg, err := clients.Lookup(sc.Lock.Algorithm)
	return err == nil && alg.Lease != nil && alg.Lease.Token != ""
}

// huntLease is what a hunt knows of the lease of base's lock before its
// runs (hunt.Lease): for a built-in algorithm, its declaration
// (clients.LeaseSemantics): a lease that expires a ttl after the grant is
// drawn in the service's steps (TTLStep); one that lives with a session
// is drawn in its steps when the ttl sets it (etcd's lease), kept at the
// base's when it does not (a ZooKeeper session's timeout is an option of
// its own), and renews itself; a lock that never expires keeps the base's
// ttl. A Go Locker of the caller's own and an external client declare no
// bound: the zero hunt.Lease. given, the caller's, is kept whole when it
// bounds the ttls; its SelfRenewing adds to what the lock declares.
func huntLease(base *scenarios.Scenario, cfg *config, given hunt.Lease) hunt.Lease {
	if given != (hunt.Lease{SelfRenewing: given.SelfRenewing}) {
		return given
	}
	l := declaredLease(base, cfg)
	l.SelfRenewing = l.SelfRenewing || given.SelfRenewing
	return l
}

// declaredLease is what base's lock declares of its lease (huntLease).
func declaredLease(base *scenarios.Scenario, cfg *config) hunt.Lease {
	if cfg.factory != nil || base.Lock.Algorithm == clients.ExecAlgorithm {
		return hunt.Lease{}
	}
	alg, err := clients.Lookup(base.Lock.Algorithm)
	if err != nil || alg.Lease == nil {
		return hunt.Lease{}
	}
	step := alg.Lease.TTLStep
	switch alg.Lease.Expiry {
	case clients.ExpiresAfterTTL:
		return hunt.Lease{MinTTL: step, TTLStep: step}
	case clients.ExpiresWithSession:
		return hunt.Lease{MinTTL: step, TTLStep: step, FixedTTL: step == 0, SelfRenewing: true}
	}
	return hunt.Lease{FixedTTL: true, SelfRenewing: true}
}
