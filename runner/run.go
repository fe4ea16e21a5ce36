// Package runner carries out one run, in stages that each hand the next a
// typed value: validate (the plan: the scenario with the run's overrides,
// its fault targets, the lock's name, algorithm and options and what the
// backend runs, all checked before anything starts), start (the proxied
// network, the cluster and one recorded client per worker; the run's clock
// starts when all are ready), workload and nemesis for the scenario's
// duration, heal (every fault, once), the quiet period, teardown, check
// (the verdict) and report (results.json and report.html from what the run
// holds in memory). Teardown happens on every path: normal end, error,
// panic in a worker, and cancellation of the context (Ctrl-C).
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/clients"
	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
	"github.com/jepsen-lite/jepsen-lite/cluster/local"
	"github.com/jepsen-lite/jepsen-lite/history"
	"github.com/jepsen-lite/jepsen-lite/hostwatch"
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

// Progress is a snapshot of a run, for live display.
type Progress struct {
	// Phase is the stage the run is in: PhaseStarting, PhaseRunning,
	// PhaseStopping, PhaseChecking or PhaseReporting.
	Phase string
	// Elapsed is the time since the run's clock started, of Total, the
	// scenario's duration and quiet period; both are 0 before the clock
	// starts.
	Elapsed, Total time.Duration
	// Ops counts the ops recorded so far (the header aside), OK, Fail and
	// Inf those of the workers by type.
	Ops, OK, Fail, Inf int64
	Faults             []string // the faults active now (PhaseRunning)
}

// The phases of a run (Progress.Phase), in order.
const (
	// PhaseStarting is starting the network, the servers and the lock
	// clients.
	PhaseStarting = "starting servers"
	// PhaseRunning is the workload and the nemesis, for the scenario's
	// duration and its quiet period.
	PhaseRunning = "running"
	// PhaseStopping is stopping the clients and the servers.
	PhaseStopping = "stopping servers"
	// PhaseChecking is checking the history.
	PhaseChecking = "checking"
	// PhaseReporting is writing results.json and report.html.
	PhaseReporting = "writing report"
)

// StartFunc starts a cluster for a spec; a cluster.Backend's Start fits.
type StartFunc = cluster.StartFunc

// Backend starts the clusters of a run. A Backend that is also a
// SpecChecker is asked before anything starts whether it can run the
// scenario's cluster.
type Backend interface {
	Start(ctx context.Context, spec cluster.Spec, net *linknet.Network) (cluster.Cluster, error)
}

// startFunc is a StartFunc as a Backend that declares nothing.
type startFunc StartFunc

func (f startFunc) Start(ctx context.Context, spec cluster.Spec, net *linknet.Network) (cluster.Cluster, error) {
	return f(ctx, spec, net)
}

// clusterBackend is a cluster.Backend as a Backend that declares the
// systems it runs (SpecChecker).
type clusterBackend struct{ b cluster.Backend }

func (c clusterBackend) Start(ctx context.Context, spec cluster.Spec, net *linknet.Network) (cluster.Cluster, error) {
	return c.b.Start(ctx, spec, net)
}

func (c clusterBackend) CheckSpec(spec cluster.Spec) error { return c.b.Check(spec) }

// LinkAddress returns the backend's cluster.Backend.LinkAddress.
func (c clusterBackend) LinkAddress() string { return c.b.LinkAddress }

// linkAddresser is a Backend whose clusters' nodes reach the workers'
// links on an address of the harness's other than 127.0.0.1 (empty:
// 127.0.0.1).
type linkAddresser interface{ LinkAddress() string }

type config struct {
	seed      *uint64
	timeLimit time.Duration
	workers   int
	store     string
	factory   clients.Factory
	lockName  string // the name of the caller's own Locker; "" for the default
	// tokens is the declaration of WithLockTokens.
	tokens   bool
	backend  Backend
	progress func(Progress)
	logOut   io.Writer
	check    checker.Options
	// hostClock gives the clocks the host watch reads, counted from the
	// run's clock start (WithHostClock); nil: the host's own.
	hostClock func(start time.Time) hostwatch.Clock
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

// WithLockTokens declares that the leases of the lock under test, a Locker
// of the caller's own (WithLocker) or an external client (the exec
// algorithm), carry fencing tokens, which neither declares otherwise. Only
// then may a hunt (Hunt) draw a fenced register for it; without it every
// run of a hunt keeps its register unfenced. A built-in algorithm declares
// its tokens itself (clients.LeaseSemantics.Token) and ignores it.
func WithLockTokens() Option { return func(c *config) { c.tokens = true } }

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

// WithBackend sets how the cluster is started; the default is LocalBackend
// (server processes on 127.0.0.1).
func WithBackend(start StartFunc) Option { return func(c *config) { c.backend = startFunc(start) } }

// WithClusterBackend runs the clusters on b (local.Backend,
// docker.Backend), which the validate stage asks first whether it runs the
// scenario's system.
func WithClusterBackend(b cluster.Backend) Option {
	return func(c *config) { c.backend = clusterBackend{b} }
}

// WithBackendOf is WithBackend for a Backend value, which may declare what
// it runs (SpecChecker).
func WithBackendOf(b Backend) Option { return func(c *config) { c.backend = b } }

// WithProgress has fn called with a snapshot of the run at the start of
// each of its phases (Progress.Phase) and about four times a second while
// its workload runs; it is called from one goroutine at a time and must
// return quickly. By default there is none.
func WithProgress(fn func(Progress)) Option { return func(c *config) { c.progress = fn } }

// WithLog copies run.log's lines to w as well.
func WithLog(w io.Writer) Option { return func(c *config) { c.logOut = w } }

// WithHostClock sets the clocks the run's host watch reads (package
// hostwatch), given the start of the run's clock; by default the host's
// own (hostwatch.SystemClock). A test gives clocks it steps.
func WithHostClock(clock func(start time.Time) hostwatch.Clock) Option {
	return func(c *config) { c.hostClock = clock }
}

// WithCheck sets the checker options (drift, time budget); the run's
// directory is always where linearizability.html goes.
func WithCheck(o checker.Options) Option { return func(c *config) { c.check = o } }

// Names returns the names scenarios may use: the algorithms of
// clients.Algorithms and the systems they run on, the systems the backends
// start and the faults of nemesis.Faults. Pass it to scenarios.Load and
// scenarios.Parse.
func Names() scenarios.Names {
	return scenarios.Names{
		Algorithms:      clients.Names(),
		QueueAlgorithms: clients.QueueNames(),
		Systems:         cluster.SystemNames(),
		Faults:          nemesis.Names(),
		Nodes: func(system, topology string, nodes int) ([]cluster.Node, error) {
			return cluster.Layout(cluster.Spec{System: system, Topology: topology, Nodes: nodes})
		},
		LockOptions:      clients.CheckOptions,
		AlgorithmSystems: algorithmSystems(),
	}
}

// algorithmSystems returns the system each algorithm and queue
// implementation runs on, by name, as clients declares them.
func algorithmSystems() map[string]string {
	out := map[string]string{}
	for _, a := range clients.Algorithms() {
		out[a.Name] = a.System
	}
	for _, q := range clients.QueueAlgorithms() {
		out[q.Name] = q.System
	}
	return out
}

// lockNeeds returns the capabilities s asks of its lock, each with the
// scenario field that asks for it: clients.CheckCapabilities checks them
// against the algorithm's declaration before anything starts.
func lockNeeds(s *scenarios.Scenario) []clients.Need {
	var needs []clients.Need
	if s.Lock.Renew > 0 {
		needs = append(needs, clients.Need{Capability: clients.CapRenew, Field: "lock.renew"})
	}
	if s.Lock.Wait > 0 {
		needs = append(needs, clients.Need{Capability: clients.CapWait, Field: "lock.acquire"})
	}
	if s.Resource == scenarios.Guarded {
		needs = append(needs, clients.Need{Capability: clients.CapGuarded, Field: "resource"})
	}
	if pausesAt(s, nemesis.InCall) {
		needs = append(needs, clients.Need{Capability: clients.CapInCall, Field: "client-pause point " + nemesis.InCall})
	}
	return needs
}

// LocalBackend starts clusters as local processes.
func LocalBackend(ctx context.Context, spec cluster.Spec, net *linknet.Network) (cluster.Cluster, error) {
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
//
// The run goes through its stages in order, each handing the next a typed
// value: validate (a plan: everything that can be known before anything
// starts, so that bad input is refused with nothing started and no store
// directory made), start (the cluster, the network and the workers'
// clients), workload and nemesis, heal (once), check (a verdict) and
// report (from memory). Everything start made is torn down before check,
// on every path.
func Run(ctx context.Context, sc *scenarios.Scenario, opts ...Option) (*Result, error) {
	began := time.Now()
	cfg := newConfig(opts)
	p, err := validate(sc, &cfg)
	if err != nil {
		return nil, err
	}
	st, err := openStore(p, began)
	if st == nil {
		return nil, err
	}
	defer st.close()
	res := &Result{Dir: st.dir}
	if err != nil {
		return res, err
	}
	rd := record(ctx, p, st)
	if errors.Is(rd.err, ErrSetup) {
		st.failedSetup(p, rd.err)
		return res, rd.err
	}
	p.cfg.phase(PhaseChecking, st.counts)
	v := check(ctx, p, st, rd)
	res.Results = v.results
	p.cfg.phase(PhaseReporting, st.counts)
	err = report(ctx, p, st, rd, v)
	res.Elapsed = time.Since(began)
	st.log.Printf("verdict %s (expected %s, met %v) in %v", v.results.Verdict, p.s.Expect.Verdict, v.results.ExpectationMet, res.Elapsed.Round(time.Millisecond))
	switch {
	case rd.err != nil:
		return res, rd.err
	case err != nil:
		return res, err
	case rd.interrupted || ctx.Err() != nil:
		return res, ErrInterrupted
	}
	return res, nil
}

// skewsNodeClocks reports whether a step of the schedule skews node clocks
// and expects that to work: its cluster must then be able to.
func skewsNodeClocks(steps []nemesis.Step) bool { return nemesis.SkewsNodeClocks(steps) }

// networkOptions returns the options of the run's network: links go
// through proxies only when a step of the schedule needs them (latency), so that
// every other run's links cost nothing; they listen on the backend's link
// address when it has one (linkAddresser: the ssh backend's hosts reach
// the harness on its address on their network), else on 127.0.0.1.
func networkOptions(steps []nemesis.Step, b Backend) []linknet.Option {
	var opts []linknet.Option
	if nemesis.NeedsProxies(steps) {
		opts = append(opts, linknet.WithProxies())
	}
	if la, ok := b.(linkAddresser); ok && la.LinkAddress() != "" {
		opts = append(opts, linknet.WithLinkAddress(la.LinkAddress()))
	}
	return opts
}

// isolator returns a function that cuts (or heals) every link of worker
// through the nemesis's link record, so that healing the isolation leaves a
// partition of the same links in place, and healing that partition leaves
// the isolation.
func isolator(env *nemesis.Env, worker string) func(cut bool) error {
	cable := linknet.Fault{Kind: linknet.FaultCut}
	return func(cut bool) error {
		links := env.Network.LinksFrom(worker)
		if cut {
			return env.ApplyLinks(cable, links...)
		}
		return env.HealLinks(cable, links...)
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

// Append counts op as reports.CountStats counts it.
func (c *countingSink) Append(op history.Op) error {
	if op.IsHeader() {
		return nil
	}
	c.ops.Add(1)
	if op.IsNemesis() {
		return nil
	}
	switch op.Type {
	case history.OK:
		c.ok.Add(1)
	case history.Fail:
		c.fail.Add(1)
	case history.Info:
		c.info.Add(1)
	}
	return nil
}

// stats is what the sink counted.
func (c *countingSink) stats() reports.Stats {
	return reports.Stats{Ops: int(c.ops.Load()), OK: int(c.ok.Load()), Fail: int(c.fail.Load()), Info: int(c.info.Load())}
}

// counted returns a snapshot of the run in phase with c's counts.
func (c *countingSink) counted(phase string) Progress {
	return Progress{Phase: phase, Ops: c.ops.Load(), OK: c.ok.Load(), Fail: c.fail.Load(), Inf: c.info.Load()}
}

// phase tells the progress callback, if any, that the run begins phase,
// with the counts of c so far.
func (cfg *config) phase(phase string, c *countingSink) {
	if cfg.progress != nil {
		cfg.progress(c.counted(phase))
	}
}

// reportProgress calls fn, if not nil, with a snapshot of the running
// workload four times a second, and once more when ctx ends.
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
		p := c.counted(PhaseRunning)
		p.Elapsed, p.Total, p.Faults = time.Since(start), total, faults
		return p
	}
	fn(snap())
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
func workerSetups(s *scenarios.Scenario, c cluster.Cluster, net *linknet.Network, n int, clockDir string, log io.Writer) ([]workerSetup, error) {
	root := rand.New(rand.NewPCG(s.Seed, 0x6a65707365656e))
	var setups []workerSetup
	for i := range n {
		var eps []clients.Endpoint
		for _, nd := range c.Nodes() {
			addr, err := net.Link(linknet.Name(fmt.Sprintf("w%d", i), nd.Name), nd.Addr)
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

// newConfig returns the configuration of opts over the defaults.
func newConfig(opts []Option) config {
	cfg := config{store: "store", backend: clusterBackend{local.Backend}}
	for _, o := range opts {
		o(&cfg)
	}
	return cfg
}

// Validate runs the first stage of Run alone: it checks what Run checks
// before a server starts (the scenario with opts' overrides, its fault
// targets, the lock's algorithm, options and capabilities, the backend's
// support) and returns Run's error for it, or nil. Nothing starts and
// nothing is written.
func Validate(sc *scenarios.Scenario, opts ...Option) error {
	cfg := newConfig(opts)
	_, err := validate(sc, &cfg)
	return err
}
