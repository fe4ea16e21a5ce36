package runner

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/jepsen-lite/jepsen-lite/clients"
	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/nemesis"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// plan is what the validate stage hands to every later stage: the scenario
// as it will run (normalized, the run's overrides applied, its seed, lock
// name and exact fault schedule resolved), how its clients are made and
// the cluster to start. Nothing has started and nothing is written while
// there is only a plan.
type plan struct {
	s   scenarios.Scenario
	cfg *config
	// factory makes the lock workload's Lockers; queue, the queue
	// workload's Queues.
	factory clients.Factory
	queue   clients.QueueAlgorithm
	spec    cluster.Spec
}

// SpecChecker is a backend that tells, before anything starts, whether it
// can start a cluster of spec (its systems, topologies and abilities): an
// error names what it cannot run. The validate stage asks the backend of
// WithBackendOf; a run refused by it starts nothing and writes nothing.
type SpecChecker interface {
	CheckSpec(spec cluster.Spec) error
}

// validate is the first stage: it checks everything that can be known
// before a server starts (the scenario with the run's overrides, every size
// and duration against its bound, its fault targets, the lock's name,
// algorithm and options, the stored scenario's size, and what the backend
// runs) and returns the run's plan. Its errors are one line each and wrap
// scenarios.ErrInvalid, clients.ErrUnknownAlgorithm or ErrSetup.
func validate(sc *scenarios.Scenario, cfg *config) (*plan, error) {
	p := &plan{s: *sc, cfg: cfg}
	s := &p.s
	s.Normalize()
	s.Seed = resolveSeed(cfg.seed, s.Seed)
	if cfg.timeLimit > 0 {
		s.Duration = cfg.timeLimit
	}
	if cfg.workers > 0 {
		s.Workers = cfg.workers
	}
	// Every size and duration within its bound, with the overrides, before
	// the schedule is resolved.
	if err := s.CheckBounds(); err != nil {
		return nil, err
	}
	if err := nameLock(s, cfg); err != nil {
		return nil, err
	}
	if err := checkLock(s, cfg); err != nil {
		return nil, err
	}
	if err := p.lookupClients(); err != nil {
		return nil, err
	}
	// The stored scenario holds the exact schedule, so a replay repeats it,
	// and it must be a file the replay can read.
	s.Nemesis = scenarios.Nemesis{Steps: schedule(s)}
	if err := s.CheckStored(); err != nil {
		return nil, err
	}
	p.spec = cluster.Spec{System: s.System.Name, Topology: s.System.Topology, Nodes: s.System.Nodes, Persistence: s.System.Persistence, ClockSkew: skewsNodeClocks(s.Nemesis.Steps)}
	if err := checkBackend(cfg.backend, p.spec); err != nil {
		return nil, err
	}
	return p, nil
}

// checkLock checks, before anything starts, that the scenario asks for
// nothing its cluster, its workers or its lock do not have, with the run's
// overrides: its fields, its fault targets and its lock options (read by
// the algorithm's factory, clients.CheckOptions; a Locker of the caller's
// own reads its options itself). It is the one place the run asks the
// clients package what a lock accepts.
func checkLock(s *scenarios.Scenario, cfg *config) error {
	names := Names()
	if cfg.factory != nil {
		names.LockOptions = nil
	}
	return s.CheckRun(names)
}

// lookupClients finds how the run's clients are made: the caller's own
// factory, the scenario's algorithm or its queue implementation.
func (p *plan) lookupClients() error {
	switch {
	case p.s.Workload == scenarios.WorkloadQueue:
		alg, err := clients.LookupQueue(p.s.Lock.Algorithm)
		if err != nil {
			return err
		}
		p.queue = alg
	case p.cfg.factory != nil:
		p.factory = p.cfg.factory
	default:
		alg, err := clients.Lookup(p.s.Lock.Algorithm)
		if err != nil {
			return err
		}
		// What the scenario asks of its lock, against the algorithm's
		// declaration; an external client's own abilities are read from
		// its first process (checkAbilities).
		if err := clients.CheckCapabilities(alg.Name, lockNeeds(&p.s)); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrSetup, cmp.Or(p.s.File, p.s.Name), err)
		}
		p.factory = alg.New
	}
	return nil
}

// checkBackend asks a backend that declares what it runs (SpecChecker)
// whether it can start spec. A backend given as a StartFunc declares
// nothing: it refuses what it cannot run when it starts.
func checkBackend(b Backend, spec cluster.Spec) error {
	c, ok := b.(SpecChecker)
	if !ok {
		return nil
	}
	if err := c.CheckSpec(spec); err != nil {
		return fmt.Errorf("%w: backend: %w", ErrSetup, err)
	}
	return nil
}

// nameLock names the lock of a run of the lock workload: with a Locker of
// the caller's own, s's lock becomes its name, marked lock.own (so the
// stored scenario, results and report name it, and a replay from the
// command line refuses it); without one, s must name a built-in algorithm.
func nameLock(s *scenarios.Scenario, cfg *config) error {
	if s.Workload == scenarios.WorkloadQueue {
		return nil
	}
	if cfg.factory == nil {
		switch {
		case s.Lock.Own:
			return &ownLockError{name: s.Lock.Algorithm}
		case s.Lock.Algorithm == "":
			return fmt.Errorf("%w: %s: lock.algorithm: missing: name an algorithm (jepsen-lite list --algorithms), or run the scenario with a Locker of your own (runner.WithLocker)", scenarios.ErrInvalid, s.File)
		}
		return nil
	}
	name := cfg.lockName
	switch {
	case name != "":
	case s.Lock.Own:
		name = s.Lock.Algorithm
	default:
		name = DefaultLockerName
	}
	if slices.Contains(clients.Names(), name) || slices.Contains(clients.QueueNames(), name) {
		return fmt.Errorf("runner: WithLockerNamed: %q is a built-in algorithm's name; give your own lock a name of its own", name)
	}
	s.Lock.Algorithm, s.Lock.Own = name, true
	return nil
}

// resolveSeed picks the run's seed: the option, else the scenario's, else
// one from the clock.
func resolveSeed(opt *uint64, scenario uint64) uint64 {
	switch {
	case opt != nil:
		return *opt
	case scenario != 0:
		return scenario
	default:
		return uint64(time.Now().UnixNano())&0xffffffff | 1
	}
}

// schedule returns the exact nemesis schedule of s: its steps that fall
// inside its duration, merged with its random spec expanded from its seed.
func schedule(s *scenarios.Scenario) nemesis.Schedule {
	return nemesis.Resolve(s.Nemesis.Steps, s.Nemesis.Random, s.Seed, s.Duration)
}
