// Package runner wires one run: it starts the cluster and the proxied
// network, builds one recorded Locker per worker, runs the workload and the
// nemesis for the scenario's duration, heals every fault, lets the system
// settle for the quiet period, stops the workers, tears everything down,
// checks the history and writes the run's store directory. Teardown happens
// on every path: normal end, error, panic in a worker, and cancellation of
// the context (Ctrl-C).
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/clients"
	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/local"
	"github.com/jepsen-lite/jepsen-lite/history"
	"github.com/jepsen-lite/jepsen-lite/nemesis"
	"github.com/jepsen-lite/jepsen-lite/reports"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// ErrInterrupted reports a run cut short by its context (Ctrl-C). What was
// recorded up to then is in the store and checkable.
var ErrInterrupted = errors.New("runner: run interrupted")

// ErrSetup reports that the run could not start: a server would not start, a
// lock client could not connect. It wraps the cause.
var ErrSetup = errors.New("runner: setup failed")

// ErrLockClient reports a run stopped because its lock client broke its
// protocol (clients.ErrProtocol, wrapped): what was recorded is kept and
// the verdict is unknown.
var ErrLockClient = errors.New("runner: the lock client broke its protocol")

// Result is what a run produced.
type Result struct {
	Dir     string           // the run's store directory
	Results *reports.Results // the verdict document written to results.json
	// Elapsed is the wall time of the whole run, setup to report.
	Elapsed time.Duration
}

// Progress is a snapshot of a running run, for live display.
type Progress struct {
	Elapsed, Total     time.Duration
	Ops, OK, Fail, Inf int64
	Faults             []string // the faults active now
}

// StartFunc starts a cluster for a spec; a cluster.Backend's Start fits.
type StartFunc = cluster.StartFunc

type config struct {
	seed      *uint64
	timeLimit time.Duration
	workers   int
	store     string
	factory   clients.Factory
	lockName  string // the name of the caller's own Locker; "" for the default
	start     StartFunc
	progress  func(Progress)
	logOut    io.Writer
	check     checker.Options
	// lockClient is filled by the run: the external client it ran, if any.
	lockClient *reports.LockClient
}

// Option configures Run.
type Option func(*config)

// WithSeed sets the run's seed; by default the scenario's seed, or a fresh
// one from the clock when the scenario has none. The seed is logged and
// written into the stored scenario.yaml.
func WithSeed(seed uint64) Option { return func(c *config) { c.seed = &seed } }

// WithTimeLimit overrides the scenario's duration (the quiet period comes on
// top). Scheduled faults later than the limit do not run.
func WithTimeLimit(d time.Duration) Option { return func(c *config) { c.timeLimit = d } }

// WithWorkers overrides the scenario's number of workers.
func WithWorkers(n int) Option { return func(c *config) { c.workers = n } }

// WithStore sets the store directory; the default is "store".
func WithStore(dir string) Option { return func(c *config) { c.store = dir } }

// DefaultLockerName is the name under which a run stores a Locker of the
// caller's own given without one (WithLocker) to a scenario that does not
// name it (lock.own).
const DefaultLockerName = "own-locker"

// WithLocker runs the scenario against a Locker of the caller's own instead
// of the scenario's algorithm; the scenario then need not name one. The
// factory receives each worker's Target: the worker's own links to the
// scenario's nodes, its clock, its random source and the scenario's lock
// options. The run names the lock as the scenario does when it sets
// lock.own (a stored run of such a lock), and DefaultLockerName otherwise;
// WithLockerNamed names it.
func WithLocker(f clients.Factory) Option { return func(c *config) { c.factory = f } }

// WithLockerNamed is WithLocker with the lock's name, which the run's
// stored scenario.yaml (lock.algorithm, with lock.own set), its
// results.json (lock) and its report show. The name must not be a
// built-in algorithm's: a replay must never run a built-in algorithm in
// place of the caller's lock.
func WithLockerNamed(name string, f clients.Factory) Option {
	return func(c *config) { c.factory, c.lockName = f, name }
}

// ErrOwnLock reports a scenario whose lock is a Go Locker of the caller's
// own (lock.own; a stored run of one) run without its factory, as from the
// command line: nothing starts. Its errors are also ErrSetup.
var ErrOwnLock = errors.New("runner: the scenario's lock is a Go Locker of its own; give its factory (WithLockerNamed)")

// ownLockError is the ErrOwnLock of a lock name.
type ownLockError struct{ name string }

func (e *ownLockError) Error() string {
	return fmt.Sprintf("the lock %q is a Go Locker of its own: only Go code that has its factory can run it (runner.WithLockerNamed(%q, factory)), not the command line", e.name, e.name)
}

func (e *ownLockError) Is(target error) bool { return target == ErrOwnLock || target == ErrSetup }

// WithBackend sets how the cluster is started; the default is local.Start
// (server processes on 127.0.0.1).
func WithBackend(start StartFunc) Option { return func(c *config) { c.start = start } }

// WithProgress has fn called about four times a second with a snapshot.
func WithProgress(fn func(Progress)) Option { return func(c *config) { c.progress = fn } }

// WithLog copies run.log's lines to w as well.
func WithLog(w io.Writer) Option { return func(c *config) { c.logOut = w } }

// WithCheck sets the checker options (drift, time budget); the run's
// directory is always where linearizability.html goes.
func WithCheck(o checker.Options) Option { return func(c *config) { c.check = o } }

// Names returns the names scenarios may use: the algorithms of
// clients.Algorithms, the systems the backends start and the faults of
// nemesis.Faults. Pass it to scenarios.Load and scenarios.Parse.
func Names() scenarios.Names {
	return scenarios.Names{
		Algorithms:      clients.Names(),
		QueueAlgorithms: clients.QueueNames(),
		Systems:         []string{cluster.Redis, cluster.Postgres, cluster.ZooKeeper, cluster.Etcd},
		Faults:          nemesis.Names(),
		Nodes: func(system, topology string, nodes int) ([]cluster.Node, error) {
			return cluster.Layout(cluster.Spec{System: system, Topology: topology, Nodes: nodes})
		},
		LockOptions: clients.CheckOptions,
	}
}

// LocalBackend starts clusters as local processes.
func LocalBackend(ctx context.Context, spec cluster.Spec, net *cluster.Network) (cluster.Cluster, error) {
	c, err := local.Start(ctx, spec, net)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Run executes one run of sc and returns its result. The verdict is in
// Result.Results; the error is non-nil when the run could not be carried out
// (ErrSetup), was interrupted (ErrInterrupted: results still describe what was
// recorded), or its store could not be written.
func Run(ctx context.Context, sc *scenarios.Scenario, opts ...Option) (res *Result, err error) {
	began := time.Now()
	cfg := config{store: "store", start: LocalBackend}
	for _, o := range opts {
		o(&cfg)
	}
	s := *sc
	s.Normalize()
	s.Seed = resolveSeed(cfg.seed, s.Seed)
	if cfg.timeLimit > 0 {
		s.Duration = cfg.timeLimit
	}
	if cfg.workers > 0 {
		s.Workers = cfg.workers
	}
	if err := nameLock(&s, &cfg); err != nil {
		return nil, err
	}
	// Nothing starts for a scenario that asks for what its cluster, its
	// workers or its lock do not have, with the run's overrides.
	names := Names()
	if cfg.factory != nil {
		names.LockOptions = nil // the caller's own Locker reads its options
	}
	if err := s.CheckRun(names); err != nil {
		return nil, err
	}
	factory := cfg.factory
	if factory == nil && s.Workload != scenarios.WorkloadQueue {
		alg, err := clients.Lookup(s.Lock.Algorithm)
		if err != nil {
			return nil, err
		}
		factory = alg.New
	}

	dir, err := reports.NewRunDir(cfg.store, s.Name, began)
	if err != nil {
		return nil, err
	}
	res = &Result{Dir: dir}
	logFile, err := os.Create(filepath.Join(dir, reports.RunLogFile))
	if err != nil {
		return res, fmt.Errorf("runner: %w", err)
	}
	defer logFile.Close()
	var logw io.Writer = logFile
	if cfg.logOut != nil {
		logw = io.MultiWriter(logFile, cfg.logOut)
	}
	logger := log.New(logw, "", log.Ltime|log.Lmicroseconds)
	logger.Printf("scenario %s, seed %d, %d workers, %v + %v quiet, store %s", s.Name, s.Seed, s.Workers, s.Duration, s.Quiet, dir)
	if s.Lock.Own {
		logger.Printf("lock %s: a Go Locker of the caller's own", s.Lock.Algorithm)
	}
	// The stored scenario holds the exact schedule, so a replay repeats it.
	s.Nemesis = scenarios.Nemesis{Steps: schedule(&s)}
	if err := writeSchedule(dir, s.Nemesis.Steps); err != nil {
		return res, err
	}

	if y, err := scenarios.Marshal(&s); err == nil {
		err = os.WriteFile(filepath.Join(dir, reports.ScenarioFile), y, 0o644)
		if err != nil {
			return res, fmt.Errorf("runner: %w", err)
		}
	} else {
		return res, err
	}

	hw, err := history.CreateFile(filepath.Join(dir, reports.HistoryFile))
	if err != nil {
		return res, fmt.Errorf("runner: %w", err)
	}
	counts := &countingSink{}
	// The run's clock starts when the cluster and every lock client are
	// ready, so that setup time does not eat into the scenario's duration
	// and "at: 1s" means one second of workload.
	var rec *history.Recorder
	startClock := func() *history.Recorder {
		rec = history.NewRecorder(hw, counts)
		rec.Record(history.Header())
		return rec
	}
	var nem *nemesis.Runner
	interrupted, runErr := execute(ctx, &s, &cfg, factory, startClock, counts, dir, logger, func(n *nemesis.Runner) { nem = n })
	if rec == nil {
		rec = history.NewRecorder()
	}
	if err := hw.Close(); err != nil && runErr == nil {
		runErr = fmt.Errorf("runner: writing history: %w", err)
	}
	if runErr != nil && errors.Is(runErr, ErrSetup) {
		logger.Printf("setup failed: %v", runErr)
		// The run directory says why there is nothing to judge, so that
		// `check` and `gate --from-store` never take it for a valid run.
		expect := s.Expect
		failed := &reports.Results{Scenario: s.Name, Lock: s.Lock.Algorithm, OwnLock: s.Lock.Own, Seed: s.Seed, HistoryVersion: history.FormatVersion, Verdict: checker.Unknown, Expected: &expect, SetupError: runErr.Error()}
		if err := reports.WriteResults(dir, failed); err != nil {
			logger.Printf("writing results: %v", err)
		}
		return res, runErr
	}

	h := rec.History()
	results := &reports.Results{Scenario: s.Name, Lock: s.Lock.Algorithm, OwnLock: s.Lock.Own, Seed: s.Seed, HistoryVersion: history.Version(h), Stats: reports.CountStats(h), LockClient: cfg.lockClient}
	expect := s.Expect
	results.Expected = &expect
	switch {
	case errors.Is(runErr, ErrLockClient):
		results.Verdict = checker.Unknown
		results.Checkers = []checker.Result{{Name: "run", Verdict: checker.Unknown, Note: "the lock client broke its protocol, so the run stopped: " + runErr.Error()}}
	case interrupted:
		results.Verdict = checker.Unknown
		results.Checkers = []checker.Result{{Name: "run", Verdict: checker.Unknown, Note: "the run was interrupted; check the stored history with `jepsen-lite check`"}}
	default:
		copts := cfg.check
		copts.OutDir = dir
		if copts.Drift == 0 && s.Lock.TTL > 0 {
			copts.Drift = float64(s.Lock.Drift) / float64(s.Lock.TTL)
		}
		results.Checkers, results.Liveness = checker.CheckWithLiveness(context.WithoutCancel(ctx), h, copts, checker.LivenessOptions{})
		results.Verdict = checker.Overall(results.Checkers)
		results.ExpectationMet = expect.Met(results.Verdict, results.Checkers, results.Liveness)
	}
	judgeFaults(results, nem, s.Nemesis.Steps, interrupted, logger)
	if err := reports.WriteResults(dir, results); err != nil && runErr == nil {
		runErr = err
	}
	res.Results = results
	if err := reports.WriteHTML(dir); err != nil {
		logger.Printf("report: %v", err)
	}
	if err := reports.SetLatest(cfg.store, dir); err != nil && runErr == nil {
		runErr = err
	}
	res.Elapsed = time.Since(began)
	logger.Printf("verdict %s (expected %s, met %v) in %v", results.Verdict, expect.Verdict, results.ExpectationMet, res.Elapsed.Round(time.Millisecond))
	if interrupted && runErr == nil {
		runErr = ErrInterrupted
	}
	return res, runErr
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

// execute runs the cluster, workers and nemesis, and tears all of it down
// before it returns, on every path. It reports whether ctx was cancelled.
func execute(ctx context.Context, s *scenarios.Scenario, cfg *config, factory clients.Factory, startClock func() *history.Recorder, counts *countingSink, dir string, logger *log.Logger, onNemesis func(*nemesis.Runner)) (interrupted bool, err error) {
	teardown := context.WithoutCancel(ctx)
	net, err := cluster.NewNetwork(networkOptions(s.Nemesis.Steps)...)
	if err != nil {
		return false, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	defer func() {
		if cerr := net.Close(); cerr != nil {
			logger.Printf("closing network: %v", cerr)
		}
	}()
	spec := cluster.Spec{System: s.System.Name, Topology: s.System.Topology, Nodes: s.System.Nodes, Persistence: s.System.Persistence, LogDir: dir, ClockSkew: skewsNodeClocks(s.Nemesis.Steps)}
	startCtx, cancelStart := context.WithTimeout(ctx, 60*time.Second)
	c, err := cfg.start(startCtx, spec, net)
	cancelStart()
	if err != nil {
		if ctx.Err() != nil {
			return true, fmt.Errorf("%w: %w", ErrSetup, ErrInterrupted)
		}
		return false, fmt.Errorf("%w: starting %s: %w", ErrSetup, s.System.Name, err)
	}
	defer func() {
		if cerr := c.Close(); cerr != nil {
			logger.Printf("closing cluster: %v", cerr)
		}
	}()
	for _, n := range c.Nodes() {
		logger.Printf("node %s %s at %s", n.Name, n.Role, n.Addr)
	}
	if s.Workload == scenarios.WorkloadQueue {
		return executeQueue(ctx, teardown, s, cfg, c, net, startClock, counts, logger, onNemesis)
	}

	var ws workerSet
	defer func() {
		for _, w := range ws {
			_ = w.locker.Close()
		}
	}()
	var lockers []clients.Locker
	defer func() {
		// The workers close their own lockers; close those that never
		// got a worker.
		for _, l := range lockers[min(len(ws), len(lockers)):] {
			_ = l.Close()
		}
	}()
	clockDir, err := os.MkdirTemp("", "jepsen-lite-clocks-")
	if err != nil {
		return false, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	defer os.RemoveAll(clockDir)
	setups, err := workerSetups(s, c, net, s.Workers, clockDir, logLines{logger})
	if err != nil {
		return false, err
	}
	defer func() {
		for _, su := range setups {
			su.clock.close()
		}
	}()
	if err := probeClientClock(ctx, s, factory, setups[0].target, clockDir); err != nil {
		return false, err
	}
	// The workers' lock clients start together: an external client's
	// process may take a second to start.
	made := make([]clients.Locker, len(setups))
	errs := make([]error, len(setups))
	var starting sync.WaitGroup
	for i, su := range setups {
		starting.Add(1)
		go func() {
			defer starting.Done()
			lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			made[i], errs[i] = factory(lctx, su.target)
		}()
	}
	starting.Wait()
	if ctx.Err() != nil {
		for _, l := range made {
			if l != nil {
				_ = l.Close()
			}
		}
		return true, fmt.Errorf("%w: %w", ErrSetup, ErrInterrupted)
	}
	for i, l := range made {
		if errs[i] == nil {
			lockers = append(lockers, l)
		}
	}
	for i, err := range errs {
		if err != nil {
			return false, fmt.Errorf("%w: worker %d: %s: %w", ErrSetup, i, s.Lock.Algorithm, err)
		}
	}
	if e, ok := lockers[0].(externalClient); ok {
		cfg.lockClient = &reports.LockClient{Command: s.Lock.Options[clients.ExecCommandOption], Name: e.Client()}
	}
	rec := startClock()
	resource := clients.NewResource(s.Resource == scenarios.Fenced, rec.Now)
	if s.Lock.Renew > 0 && !clients.CanRenew(lockers[0]) {
		return false, fmt.Errorf("%w: lock.renew: %s cannot renew a lease", ErrSetup, lockName(s, lockers[0]))
	}
	if s.Lock.Wait > 0 && !clients.CanWait(lockers[0]) {
		return false, fmt.Errorf("%w: lock.acquire: %s cannot wait for a lock", ErrSetup, lockName(s, lockers[0]))
	}
	if _, ok := lockers[0].(clients.InCallHooker); pausesAt(s, nemesis.InCall) && !ok {
		return false, fmt.Errorf("%w: client-pause point %s: %s is no process of its own to stop while a call is in flight (only the exec algorithm's clients are)", ErrSetup, nemesis.InCall, lockName(s, lockers[0]))
	}
	newRegister := func(l clients.Locker) (register, error) {
		if s.Resource != scenarios.Guarded {
			return harnessRegister{resource}, nil
		}
		g, ok := l.(clients.GuardedResource)
		if !ok {
			return nil, fmt.Errorf("%w: resource %q: %s keeps no register in its system (algorithms that do: the pg locks, etcd-mutex)", ErrSetup, scenarios.Guarded, s.Lock.Algorithm)
		}
		return guardedRegister{g: g}, nil
	}
	if _, err := newRegister(lockers[0]); err != nil {
		return false, err
	}
	for i, l := range lockers {
		clock, wrng, target := setups[i].clock, setups[i].rng, setups[i].target
		// A crashed process's Locker is closed; its successor gets a new
		// one built the same way.
		proc := clients.NewProcess(i, s.Workers)
		open := func(ctx context.Context) (clients.Locker, error) {
			t := target
			t.Process = proc.ID()
			return factory(ctx, t)
		}
		ws = append(ws, &worker{
			id:          i,
			locker:      &clients.Recorded{Locker: l, Rec: rec, Proc: proc, Open: open, KeepClient: s.Lock.OnError == scenarios.OnErrorKeepClient},
			rec:         rec,
			newRegister: newRegister,
			rng:         wrng,
			clock:       clock,
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
	logger.Printf("cluster and %d workers ready", len(ws))

	return drive(ctx, teardown, s, cfg, c, net, rec, ws, func(i int, stop, abort context.Context) { ws[i].run(stop, abort) }, counts, logger, onNemesis)
}

// drive runs the workers (run(i, stop, abort) is worker i's loop) and the
// nemesis for the scenario's duration, heals every fault, lets the system
// settle for the quiet period and stops the workers. It reports whether ctx
// was cancelled.
func drive(ctx, teardown context.Context, s *scenarios.Scenario, cfg *config, c cluster.Cluster, net *cluster.Network, rec *history.Recorder, ws workerSet, run func(i int, stop, abort context.Context), counts *countingSink, logger *log.Logger, onNemesis func(*nemesis.Runner)) (bool, error) {
	env := &nemesis.Env{Cluster: c, Network: net, Workers: ws, Recorder: rec, Rand: nemesis.TargetRand(s.Seed)}
	for _, w := range ws {
		w.isolate = isolator(env, fmt.Sprintf("w%d", w.id))
	}
	nem := nemesis.NewRunner(env)
	onNemesis(nem)
	defer func() {
		if herr := nem.HealAll(teardown); herr != nil {
			logger.Printf("healing: %v", herr)
		}
		if herr := net.HealAll(); herr != nil {
			logger.Printf("healing network: %v", herr)
		}
	}()

	// The run's clock: the recorder's start. Nemesis steps are timed from
	// it, so "at: 1s" means 1s of harness time.
	start := rec.Start()
	stop, stopWorkers := context.WithCancel(ctx)
	defer stopWorkers()
	nemDone := make(chan error, 1)
	nemCtx, stopNemesis := context.WithDeadline(stop, start.Add(s.Duration))
	defer stopNemesis()
	go func() { nemDone <- nem.Run(nemCtx, start, s.Nemesis.Steps) }() // resolved in Run
	// Faults due at the start are in force before the first worker asks.
	select {
	case <-nem.Begun():
	case <-stop.Done():
	}

	var wg sync.WaitGroup
	var panicked, broken atomic.Value
	for _, w := range ws {
		w.fatal = func(err error) {
			if broken.CompareAndSwap(nil, err) {
				logger.Printf("stopping the run: %v", err)
			}
			stopWorkers()
		}
	}
	for i, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if p := recover(); p != nil {
					panicked.Store(fmt.Sprintf("worker %d panicked: %v", w.id, p))
					stopWorkers()
				}
			}()
			run(i, stop, ctx)
		}()
	}
	progressDone := make(chan struct{})
	go func() {
		defer close(progressDone)
		reportProgress(stop, cfg.progress, start, s.Duration+s.Quiet, counts, nem)
	}()

	// Faults until the duration ends; then heal and let the system settle.
	waitUntil(stop, start.Add(s.Duration))
	stopNemesis()
	if nerr := <-nemDone; nerr != nil {
		logger.Printf("nemesis: %v", nerr)
	}
	if herr := nem.HealAll(teardown); herr != nil {
		logger.Printf("healing: %v", herr)
	}
	if herr := net.HealAll(); herr != nil {
		logger.Printf("healing network: %v", herr)
	}
	waitUntil(stop, start.Add(s.Duration+s.Quiet))
	stopWorkers()
	wg.Wait()
	// The end record: the history says until when it recorded, so a wait
	// still pending is known to have waited until now.
	rec.Record(history.EndOp())
	<-progressDone
	if p := panicked.Load(); p != nil {
		return ctx.Err() != nil, fmt.Errorf("runner: %s", p)
	}
	if err, ok := broken.Load().(error); ok {
		return ctx.Err() != nil, fmt.Errorf("%w: %w", ErrLockClient, err)
	}
	logger.Printf("workers stopped after %d ops", rec.Len())
	return ctx.Err() != nil, nil
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

// skewsNodeClocks reports whether a step of the schedule skews node clocks
// and expects that to work: its cluster must then be able to.
func skewsNodeClocks(steps []nemesis.Step) bool {
	for _, st := range steps {
		if (st.Fault == (nemesis.ClockBump{}).Name() || st.Fault == (nemesis.ClockStrobe{}).Name()) && !st.ExpectFailure {
			return true
		}
	}
	return false
}

// networkOptions returns the options of the run's network: links go
// through proxies only when a step of the schedule adds latency, so that
// every other run's links cost nothing.
func networkOptions(steps []nemesis.Step) []cluster.NetworkOption {
	for _, st := range steps {
		if st.Fault == (nemesis.Latency{}).Name() {
			return []cluster.NetworkOption{cluster.WithProxies()}
		}
	}
	return nil
}

// isolator returns a function that cuts (or heals) every link of worker
// through the nemesis's link record, so that healing the isolation leaves a
// partition of the same links in place, and healing that partition leaves
// the isolation.
func isolator(env *nemesis.Env, worker string) func(cut bool) error {
	cable := cluster.Fault{Kind: cluster.FaultCut}
	return func(cut bool) error {
		links := env.Network.LinksFrom(worker)
		if cut {
			return env.ApplyLinks(cable, links...)
		}
		return env.HealLinks(cable, links...)
	}
}

// schedule returns the exact nemesis schedule of s: its steps that fall
// inside its duration, merged with its random spec expanded from its seed.
func schedule(s *scenarios.Scenario) nemesis.Schedule {
	return nemesis.Resolve(s.Nemesis.Steps, s.Nemesis.Random, s.Seed, s.Duration)
}

// writeSchedule writes the schedule as nemesis.jsonl, one step per line.
func writeSchedule(dir string, steps nemesis.Schedule) error {
	f, err := os.Create(filepath.Join(dir, reports.NemesisFile))
	if err != nil {
		return fmt.Errorf("runner: %w", err)
	}
	if err := nemesis.WriteSchedule(f, steps); err != nil {
		f.Close()
		return fmt.Errorf("runner: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("runner: %w", err)
	}
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

func waitUntil(ctx context.Context, t time.Time) {
	d := time.Until(t)
	if d <= 0 {
		return
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
}

// countingSink counts ops by type for the progress line.
type countingSink struct{ ops, ok, fail, info atomic.Int64 }

func (c *countingSink) Append(op history.Op) error {
	if op.IsHeader() {
		return nil
	}
	c.ops.Add(1)
	switch op.Type {
	case history.OK:
		c.ok.Add(1)
	case history.Fail:
		c.fail.Add(1)
	case history.Info:
		if !op.IsNemesis() {
			c.info.Add(1)
		}
	}
	return nil
}

func reportProgress(ctx context.Context, fn func(Progress), start time.Time, total time.Duration, c *countingSink, nem *nemesis.Runner) {
	if fn == nil {
		<-ctx.Done()
		return
	}
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	snap := func() Progress {
		var faults []string
		for _, st := range nem.Active() {
			faults = append(faults, st.Fault+" "+strings.Join(st.Targets, ","))
		}
		sort.Strings(faults)
		return Progress{Elapsed: time.Since(start), Total: total, Ops: c.ops.Load(), OK: c.ok.Load(), Fail: c.fail.Load(), Inf: c.info.Load(), Faults: faults}
	}
	for {
		select {
		case <-t.C:
			fn(snap())
		case <-ctx.Done():
			fn(snap())
			return
		}
	}
}

// workerSetup is what one worker is given before the run starts: its
// clock, its random source and the target its client dials.
type workerSetup struct {
	clock  *workerClock
	rng    *rand.Rand
	target clients.Target
}

// workerSetups makes the set-up of workers w0..w(n-1): each dials every
// node through its own link, keeps its own clock, and draws from a random
// source derived from the run's seed, in worker order.
func workerSetups(s *scenarios.Scenario, c cluster.Cluster, net *cluster.Network, n int, clockDir string, log io.Writer) ([]workerSetup, error) {
	root := rand.New(rand.NewPCG(s.Seed, 0x6a65707365656e))
	var setups []workerSetup
	for i := range n {
		var eps []clients.Endpoint
		for _, nd := range c.Nodes() {
			addr, err := net.Link(cluster.LinkName(fmt.Sprintf("w%d", i), nd.Name), nd.Addr)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrSetup, err)
			}
			eps = append(eps, clients.Endpoint{Name: nd.Name, Addr: addr, Role: nd.Role})
		}
		clock := &workerClock{dir: clockDir, needed: skewsClients(s)}
		wrng := rand.New(rand.NewPCG(root.Uint64(), root.Uint64()))
		target := clients.Target{Worker: i, Process: i, System: s.System.Name, Endpoints: eps, Clock: clock, Rand: wrng, Drift: s.Lock.Drift, Options: s.Lock.Options, TCP: clients.TCP(s.TCP), Log: log}
		setups = append(setups, workerSetup{clock: clock, rng: wrng, target: target})
	}
	return setups, nil
}
