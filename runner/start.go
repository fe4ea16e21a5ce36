package runner

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/jepsen-lite/jepsen-lite/clients"
	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
	"github.com/jepsen-lite/jepsen-lite/history"
	"github.com/jepsen-lite/jepsen-lite/nemesis"
	"github.com/jepsen-lite/jepsen-lite/reports"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// started is what the start stage hands to the workload: the cluster and
// its network, the recorder whose clock started when every client was
// ready, the workers with the loop each runs, and everything to tear down.
type started struct {
	cluster cluster.Cluster
	net     *linknet.Network
	rec     *history.Recorder
	workers workerSet
	// run is worker i's loop: it works until stop ends, and gives up a
	// call in flight when abort ends.
	run func(i int, stop, abort context.Context)
	// lockClient is the external client the workers run, if any.
	lockClient *reports.LockClient
	down       teardown
}

// teardown is what a run must undo, in the order it was made; run undoes
// it last first.
type teardown []func()

func (t *teardown) push(f func()) { *t = append(*t, f) }

func (t teardown) run() {
	for i := len(t) - 1; i >= 0; i-- {
		t[i]()
	}
}

// record runs the stages that need servers (start, workload and nemesis,
// heal), tears down everything start made on every path (normal end,
// error, a worker's panic, cancellation of ctx), and returns what was
// recorded.
func record(ctx context.Context, p *plan, st *runStore) recorded {
	rd := execute(ctx, p, st)
	err := st.finishHistory()
	rd.historyErr = err
	if st.rec != nil {
		rd.ops = st.rec.Len()
		rd.stats = st.counts.stats()
	}
	if rd.err == nil {
		rd.err = err
	}
	return rd
}

// execute is record before the history is read: run.down is undone when it
// returns.
func execute(ctx context.Context, p *plan, st *runStore) recorded {
	run := &started{}
	defer func() { run.down.run() }() // what start pushed by then
	p.cfg.phase(PhaseStarting, st.counts)
	interrupted, err := start(ctx, p, st, run)
	if err != nil {
		return recorded{interrupted: interrupted, err: err, lockClient: run.lockClient}
	}
	rd := drive(ctx, p, st, run)
	p.cfg.phase(PhaseStopping, st.counts)
	return rd
}

// start is the start stage: the network, the cluster on it and the
// workers' clients on that; the run's clock starts when all are ready. It
// reports whether ctx was cancelled; its errors wrap ErrSetup.
func start(ctx context.Context, p *plan, st *runStore, run *started) (bool, error) {
	if interrupted, err := startCluster(ctx, p, st, run); err != nil {
		return interrupted, err
	}
	if p.s.Workload == scenarios.WorkloadQueue {
		return false, startQueue(ctx, p, st, run)
	}
	return startLockers(ctx, p, st, run)
}

// startCluster starts the run's network and its cluster through the
// backend, and logs the cluster's nodes.
func startCluster(ctx context.Context, p *plan, st *runStore, run *started) (bool, error) {
	net, err := cluster.NewNetwork(networkOptions(p.s.Nemesis.Steps, p.cfg.backend)...)
	if err != nil {
		return false, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	run.net = net
	run.down.push(func() {
		if cerr := net.Close(); cerr != nil {
			st.log.Printf("closing network: %v", cerr)
		}
	})
	spec := p.spec
	spec.LogDir = st.dir
	startCtx, cancelStart := context.WithTimeout(ctx, 60*time.Second)
	c, err := p.cfg.backend.Start(startCtx, spec, net)
	cancelStart()
	if err != nil {
		if ctx.Err() != nil {
			return true, fmt.Errorf("%w: %w", ErrSetup, ErrInterrupted)
		}
		return false, fmt.Errorf("%w: starting %s: %w", ErrSetup, p.s.System.Name, err)
	}
	run.cluster = c
	run.down.push(func() {
		if cerr := c.Close(); cerr != nil {
			st.log.Printf("closing cluster: %v", cerr)
		}
	})
	for _, n := range c.Nodes() {
		st.log.Printf("node %s %s at %s", n.Name, n.Role, n.Addr)
	}
	return false, nil
}

// startLockers starts the lock workload's clients, one per worker, checks
// that the lock can do what the scenario asks of it, starts the clock and
// makes the workers.
func startLockers(ctx context.Context, p *plan, st *runStore, run *started) (bool, error) {
	s := &p.s
	clockDir, err := cluster.TempDir("clocks")
	if err != nil {
		return false, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	run.down.push(func() { os.RemoveAll(clockDir) })
	setups, err := workerSetups(s, run.cluster, run.net, s.Workers, clockDir, logLines{st.log})
	if err != nil {
		return false, err
	}
	run.down.push(func() {
		for _, su := range setups {
			su.clock.close()
		}
	})
	if err := probeClientClock(ctx, s, p.factory, setups[0].target, clockDir); err != nil {
		return false, err
	}
	lockers, interrupted, err := openLockers(ctx, p, setups, run)
	if err != nil {
		return interrupted, err
	}
	if e, ok := lockers[0].(externalClient); ok {
		run.lockClient = &reports.LockClient{Command: s.Lock.Options[clients.ExecCommandOption], Name: e.Client()}
	}
	if err := checkAbilities(s, lockers[0]); err != nil {
		return false, err
	}
	run.rec = st.startClock()
	run.workers = lockWorkers(p, run.rec, setups, lockers)
	run.run = func(i int, stop, abort context.Context) { run.workers[i].run(stop, abort) }
	st.log.Printf("cluster and %d workers ready", len(run.workers))
	return false, nil
}

// openLockers starts the workers' lock clients together: an external
// client's process may take a second to start. Every client that started
// is closed when the run is torn down (by its worker once it has one),
// whatever else fails.
func openLockers(ctx context.Context, p *plan, setups []workerSetup, run *started) ([]clients.Locker, bool, error) {
	made, errs := openTogether(ctx, setups, p.factory)
	var lockers []clients.Locker
	for i, l := range made {
		if errs[i] == nil && l != nil {
			lockers = append(lockers, l)
		}
	}
	run.down.push(func() {
		if len(run.workers) > 0 {
			for _, w := range run.workers {
				_ = w.locker.Close()
			}
			return
		}
		for _, l := range lockers {
			_ = l.Close()
		}
	})
	if ctx.Err() != nil {
		return nil, true, fmt.Errorf("%w: %w", ErrSetup, ErrInterrupted)
	}
	for i, err := range errs {
		if err != nil {
			return nil, false, fmt.Errorf("%w: worker %d: %s: %w", ErrSetup, i, p.s.Lock.Algorithm, err)
		}
	}
	return lockers, false, nil
}

// clientStartBound is how long one worker's client may take to start (an
// external client's process and its init included).
const clientStartBound = 30 * time.Second

// openTogether starts one client per worker setup with open, all at once,
// each within clientStartBound of its own start, so that their start-ups do
// not add up. It returns every client by worker, and each one's error.
func openTogether[C any](ctx context.Context, setups []workerSetup, open func(context.Context, clients.Target) (C, error)) ([]C, []error) {
	made := make([]C, len(setups))
	errs := make([]error, len(setups))
	var starting sync.WaitGroup
	for i, su := range setups {
		starting.Add(1)
		go func() {
			defer starting.Done()
			octx, cancel := context.WithTimeout(ctx, clientStartBound)
			defer cancel()
			made[i], errs[i] = open(octx, su.target)
		}()
	}
	starting.Wait()
	return made, errs
}

// checkAbilities checks that the lock can do what the scenario asks of it:
// renew, wait, stop while a call is in flight, keep the guarded register.
// A Locker's abilities are those of its type and, for an external client,
// what it said when it started, so they are read from the first client
// started, before the clock or any worker starts.
func checkAbilities(s *scenarios.Scenario, l clients.Locker) error {
	if s.Lock.Renew > 0 && !clients.CanRenew(l) {
		return &IncapableError{Field: "lock.renew", Reason: lockName(s, l) + " cannot renew a lease"}
	}
	if s.Lock.Wait > 0 && !clients.CanWait(l) {
		return &IncapableError{Field: "lock.acquire", Reason: lockName(s, l) + " cannot wait for a lock"}
	}
	if _, ok := l.(clients.InCallHooker); pausesAt(s, nemesis.InCall) && !ok {
		return &IncapableError{Field: "client-pause point " + nemesis.InCall, Reason: lockName(s, l) + " is no process of its own to stop while a call is in flight (only the exec algorithm's clients are)"}
	}
	_, err := registerMaker(s, nil)(l)
	return err
}

// IncapableError says that the lock cannot do what the scenario's field
// asks of it, found when its first client started (an external client's
// abilities are known only then). It is a setup error (errors.Is
// ErrSetup); a hunt draws the run's workload again without the field.
type IncapableError struct {
	// Field is the scenario field the lock cannot serve: lock.renew,
	// lock.acquire or a client-pause point.
	Field  string
	Reason string
}

func (e *IncapableError) Error() string {
	return fmt.Sprintf("%v: %s: %s", ErrSetup, e.Field, e.Reason)
}

// Unwrap makes an IncapableError a setup error.
func (e *IncapableError) Unwrap() error { return ErrSetup }

// registerMaker returns how a worker's register is made for each Locker it
// gets: the harness's resource, or the register the Locker keeps in its
// system (resource: guarded).
func registerMaker(s *scenarios.Scenario, resource *clients.Resource) func(clients.Locker) (register, error) {
	return func(l clients.Locker) (register, error) {
		if s.Resource != scenarios.Guarded {
			return harnessRegister{resource}, nil
		}
		g, ok := l.(clients.GuardedResource)
		if !ok {
			return nil, fmt.Errorf("%w: resource %q: %s keeps no register in its system (algorithms that do: the pg locks, etcd-mutex)", ErrSetup, scenarios.Guarded, s.Lock.Algorithm)
		}
		return guardedRegister{g: g}, nil
	}
}

// lockWorkers makes the lock workload's workers, one per Locker, each with
// its own clock, random source and process numbering; a crashed process's
// Locker is closed and its successor gets a new one built the same way.
func lockWorkers(p *plan, rec *history.Recorder, setups []workerSetup, lockers []clients.Locker) workerSet {
	s := &p.s
	newRegister := registerMaker(s, clients.NewResource(s.Resource == scenarios.Fenced, rec.Now))
	var ws workerSet
	for i, l := range lockers {
		target := setups[i].target
		proc := clients.NewProcess(i, s.Workers)
		open := func(ctx context.Context) (clients.Locker, error) {
			t := target
			t.Process = proc.ID()
			return p.factory(ctx, t)
		}
		ws = append(ws, &worker{
			id:          i,
			locker:      &clients.Recorded{Locker: l, Rec: rec, Proc: proc, Open: open, KeepClient: s.Lock.OnError == scenarios.OnErrorKeepClient},
			rec:         rec,
			newRegister: newRegister,
			rng:         setups[i].rng,
			clock:       setups[i].clock,
			keys:        s.Lock.Keys,
			ttl:         s.Lock.TTL,
			think:       s.Think,
			hold:        s.Hold,
			renew:       s.Lock.Renew,
			wait:        s.Lock.Wait,
			opTime:      max(s.Lock.TTL, time.Second),
			pauses:      map[string]pause{},
			inCall:      make(chan struct{}, 1),
		})
	}
	return ws
}
