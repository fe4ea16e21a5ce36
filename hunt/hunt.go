// Package hunt owns fault campaigns: for a lock's scenario, it draws seeded
// random fault schedules of every fault kind that the lock's system and the
// backend can take (read from the fault declarations, nemesis.Faults), over
// varied workloads, runs them, and tallies what each fault kind found and
// how close its runs came to a violation (their safety margins,
// checker.Margins). No schedule is timed by hand: each run's schedule is a
// nemesis.RandomSpec of one fault kind, drawn from the run's seed, or, in a
// steered campaign (Options.Steer), a mutation of the schedule of one of
// the kind's earlier runs with the smallest margins; either way a finding
// names the kind that caused it and replays from its stored run.
package hunt

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/history"
	"github.com/jepsen-lite/jepsen-lite/nemesis"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// NoFault is the kind of the runs without any fault, the campaign's
// baseline.
const NoFault = "none"

// Outcome is what one run gave.
type Outcome struct {
	// Dir is the run's directory in the store; empty when it has none.
	Dir string
	// Verdict is the run's verdict; checker.Unknown for a run that did not
	// finish, whose setup failed or whose faults failed.
	Verdict checker.Verdict
	// Anomalies are the kinds of anomaly the run's checkers found, and
	// Finding the first anomaly in the checker's words ("stale-write:
	// worker 3 wrote k at ..."), empty when none.
	Anomalies []string
	Finding   string
	// FaultFailed reports that a fault or heal of the run failed, so its
	// verdict says nothing about the fault kind.
	FaultFailed bool
	// SetupFailed, when not empty, says why the run could not start after
	// its scenario passed validation (a server would not start, a
	// worker's client could not be made): the setup error's text, on one
	// line. The run's verdict is unknown, and it says nothing about the
	// fault kind: the kind's next run is made all the same, up to
	// MaxSetupFailures in a row.
	SetupFailed string
	// OutOfBudget reports that the run's verdict is unknown because a
	// check ran out of its time budget (checker.OutOfBudget: the run's
	// --check-timeout).
	OutOfBudget bool
	// Unavailable, when not empty, says that the run's fault could not
	// be made on this cluster at all (the cluster said it is unavailable:
	// a failover without a replica): its kind is not applicable.
	Unavailable string
	// Margins are the run's safety margins per key (checker.Margins): how
	// close it came to a violation; the steering orders runs by them.
	Margins []checker.Margin
	// HostTrouble reports that the run's host clock stepped or the
	// harness stalled (reports.Results.HostEvents), and OffScript that a
	// step of its schedule did not run as written
	// (reports.Results.StepIssues): what it found may come from the
	// machine or the schedule, not only from the fault kind.
	HostTrouble, OffScript bool
}

// RunFunc runs one scenario (its seed set) and reports its outcome. An
// error wrapping ErrNotApplicable says that the scenario cannot run here
// (its validation refused it before anything started); any other error ends
// the campaign. A run whose setup failed after validation passed is no
// error: its outcome says so (Outcome.SetupFailed).
type RunFunc func(ctx context.Context, sc *scenarios.Scenario) (Outcome, error)

// WorkloadError says that a run's lock cannot serve one field of the
// workload drawn for it (an external client that cannot renew or wait,
// known only when its first process started). The campaign draws the
// run's workload again without that field, and keeps it out of its
// later runs; a run that still hits the same field makes its kind not
// applicable.
type WorkloadError struct {
	// Field is the scenario field the lock cannot serve: lock.renew or
	// lock.acquire (waiting); any other field is not drawn again.
	Field string
	Err   error
}

func (e *WorkloadError) Error() string { return e.Err.Error() }

func (e *WorkloadError) Unwrap() error { return e.Err }

// ErrNotApplicable marks a scenario that cannot run (the lock lacks a
// capability the fault or workload needs, the topology has no replica to
// fail over, ...): the campaign records why and goes on.
var ErrNotApplicable = errors.New("hunt: not applicable")

// MaxSetupFailures is how many runs of one fault kind in a row may fail
// their setup (Outcome.SetupFailed) before the campaign gives the kind up:
// its remaining runs are not made and its row says why (Row.SetupGaveUp).
// One failed start is a run of unknown verdict, not a kind that cannot
// run; several in a row are a machine that cannot start the cluster, whose
// further runs would waste their time.
const MaxSetupFailures = 3

// Options are a campaign's settings; the zero value of each means its
// default.
type Options struct {
	// Faults are the fault kinds to hunt with; every kind the system and
	// backend can take by default. NoFault runs first unless NoBaseline.
	Faults []string
	// Runs is the number of runs per fault kind; 10 by default.
	Runs int
	// Budget bounds the campaign's wall time; none by default. A campaign
	// out of time stops before its next run and says so.
	Budget time.Duration
	// Seed is the campaign's seed: run i of a kind has seed Seed+i, so the
	// kinds' runs are comparable; 1 by default.
	Seed uint64
	// Backend names the backend the runs use, for the kinds it can take.
	Backend string
	// Log receives one line per run; nil for none.
	Log io.Writer
	// Steer mutates, with probability SteerProbability, the schedule of
	// one of the SteerBest runs of the kind so far with the smallest
	// margins instead of drawing a random one (steer.go); random by
	// default.
	Steer bool
	// Progress, when set, is called before each run with how far the
	// campaign has come; none by default.
	Progress func(Progress)
	// Shard restricts the campaign to one part of its runs, for a fleet of
	// machines that each run one; the whole campaign by default.
	Shard Shard
	// NoBaseline leaves out the runs without faults (NoFault), for a
	// campaign that looks for one thing under given faults; they run
	// first by default.
	NoBaseline bool
	// Stop, when set, is asked after each run whether the campaign has
	// found what it looks for (a known bug's mechanism, say); when it says
	// so, the campaign ends after that run and Report.Stopped names the
	// run. The campaign goes on to the end by default.
	Stop func(Outcome) bool
	// Lease is what the lock declares of its lease: the bounds of the
	// ttls drawn, and whether it renews by itself; a lock that declares
	// nothing by default (Lease).
	Lease Lease
}

// Shard is part Index (1 to Count) of Count of a campaign's runs. The zero
// Shard is the whole campaign. Its JSON form marks a campaign file that
// holds one part (MergeParts).
type Shard struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

// has reports whether run i of the campaign's kind at position k (NoFault
// first, then Kinds' order) belongs to s. The split depends on the kinds,
// the runs per kind and whether the campaign steers, so every machine of a
// fleet given the same arguments computes the same parts, and together the
// parts hold every run once. The runs of a random campaign are
// independent, so its runs in order (kind by kind) go to the parts in turn;
// a steered campaign's runs of a kind learn from the kind's earlier runs,
// so whole kinds go to the parts in turn.
func (s Shard) has(k, i, runs int, steer bool) bool {
	if s.Count <= 1 {
		return true
	}
	n := k*runs + i
	if steer {
		n = k
	}
	return n%s.Count == s.Index-1
}

// Planned is one run a campaign plans: its fault kind and its seed (a
// steered run's schedule is known only when it runs).
type Planned struct {
	Kind string
	Seed uint64
}

// Plan returns the runs a campaign with opts plans for a lock of system
// on opts.Backend, in the order it makes them: every applicable kind's
// runs, less those of other shards. A kind that turns out not applicable
// when it runs (the cluster cannot make its fault) is planned all the
// same.
func Plan(system string, opts Options) ([]Planned, error) {
	opts = opts.withDefaults()
	kinds, err := Kinds(system, opts.Backend, opts.Faults)
	if err != nil {
		return nil, err
	}
	var out []Planned
	for k, kind := range opts.all(kinds) {
		for i := range opts.Runs {
			if opts.Shard.has(k, i, opts.Runs, opts.Steer) {
				out = append(out, Planned{Kind: kind, Seed: opts.Seed + uint64(i)})
			}
		}
	}
	return out, nil
}

// all returns the kinds a campaign runs, in order: NoFault first (unless
// NoBaseline), then kinds.
func (o Options) all(kinds []string) []string {
	if o.NoBaseline {
		return slices.Clone(kinds)
	}
	return append([]string{NoFault}, kinds...)
}

// withDefaults fills in the defaults of the zero fields.
func (o Options) withDefaults() Options {
	if o.Runs <= 0 {
		o.Runs = 10
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	return o
}

// Progress is how far a campaign has come, told before each run.
type Progress struct {
	// Kind is the fault kind of the run about to start and Seed its seed.
	Kind string
	Seed uint64
	// Done counts the runs finished, of Total, the runs the campaign
	// plans: Runs for each kind, less those of a kind found not
	// applicable and those of a kind given up after failed setups.
	Done, Total int
	// Invalid counts the finished runs whose verdict was invalid.
	Invalid int
}

// Row is what one fault kind found. Its JSON form is the row of a campaign
// file (Report).
type Row struct {
	Fault string `json:"fault"`
	// Runs, Invalid and Unknown count the runs and those whose verdict was
	// invalid or unknown (a setup that failed, a fault that failed, a
	// check out of time, an interrupted check, a client that broke its
	// protocol). An unknown run counts neither as invalid nor as one that
	// held. Of the unknown runs, SetupFailed counts those whose setup
	// failed (Outcome.SetupFailed), FaultsFailed the others whose faults
	// failed (Outcome.FaultFailed) and OutOfBudget the others whose check
	// ran out of its time budget (Outcome.OutOfBudget); the rest are
	// unknown for another reason.
	Runs         int `json:"runs"`
	Invalid      int `json:"invalid"`
	Unknown      int `json:"unknown"`
	SetupFailed  int `json:"setup_failed,omitempty"`
	FaultsFailed int `json:"faults_failed,omitempty"`
	OutOfBudget  int `json:"out_of_budget,omitempty"`
	// Anomalies are the kinds found by its invalid runs, sorted.
	Anomalies []string `json:"anomalies,omitempty"`
	// Failing are the directories of its invalid runs, in the order of
	// their seeds, FailingSeeds their seeds, and Findings the first anomaly
	// of each in the checker's words (Outcome.Finding), so that a campaign
	// file says what its runs found without its store.
	Failing      []string `json:"failing,omitempty"`
	FailingSeeds []uint64 `json:"failing_seeds,omitempty"`
	Findings     []string `json:"findings,omitempty"`
	// Shrunk is the failing run (one of Failing) that hunt --shrink
	// reduced to a smaller scenario, so that a datasheet made without the
	// store quotes that run's finding beside its shrunk schedule; empty
	// when none was.
	Shrunk string `json:"shrunk,omitempty"`
	// NotApplicable says why the kind could not run; empty when it ran.
	NotApplicable string `json:"not_applicable,omitempty"`
	// SetupGaveUp, when not empty, says that the kind's runs stopped
	// because MaxSetupFailures of them in a row failed their setup, with
	// the last one's error ("setup failed in 3 runs in a row: ..."): the
	// kind is applicable, and the runs it did not make are missing from
	// Runs. Empty when the kind made its runs.
	SetupGaveUp string `json:"setup_gave_up,omitempty"`
	// Steered counts the runs whose schedule mutated an earlier run's.
	Steered int `json:"steered,omitempty"`
	// Margin is the smallest normalised margin (Score) of its runs, and
	// MarginRun the directory of the run that had it; HasMargin is false
	// when no margin applied to any of them.
	Margin    float64 `json:"margin"`
	HasMargin bool    `json:"has_margin"`
	MarginRun string  `json:"margin_run,omitempty"`
	// HostTrouble counts the runs whose host clock stepped or whose
	// harness stalled, and OffScript those with a step that did not run as
	// written (Outcome).
	HostTrouble int `json:"host_trouble,omitempty"`
	OffScript   int `json:"off_script,omitempty"`
}

// Report is a campaign's result: one row per fault kind, NoFault first
// (unless Options.NoBaseline).
// Its JSON form (`hunt --json`) is a campaign file, which `jepsen-lite
// matrix` reads.
type Report struct {
	Scenario string `json:"scenario"`
	Rows     []*Row `json:"rows"`
	Runs     int    `json:"runs"`
	// Elapsed is the campaign's wall time.
	Elapsed time.Duration `json:"elapsed_ns"`
	// OutOfTime reports that the budget ended the campaign early.
	OutOfTime bool `json:"out_of_time,omitempty"`
	// Steer reports that the campaign was steered (Options.Steer).
	Steer bool `json:"steer,omitempty"`
	// Stopped is the directory of the run after which Options.Stop ended
	// the campaign, and StoppedAfter how many runs it had made by then
	// (that one included); both empty when it ran to its end.
	Stopped      string `json:"stopped,omitempty"`
	StoppedAfter int    `json:"stopped_after,omitempty"`
}

// Found reports whether any run was invalid.
func (r *Report) Found() bool {
	return slices.ContainsFunc(r.Rows, func(row *Row) bool { return row.Invalid > 0 })
}

// Unknowns counts the campaign's runs whose verdict was unknown (Row), of
// them those whose setup failed, those whose faults failed and those
// whose check ran out of its time budget, over every row.
func (r *Report) Unknowns() (unknown, setupFailed, faultsFailed, outOfBudget int) {
	for _, row := range r.Rows {
		unknown += row.Unknown
		setupFailed += row.SetupFailed
		faultsFailed += row.FaultsFailed
		outOfBudget += row.OutOfBudget
	}
	return unknown, setupFailed, faultsFailed, outOfBudget
}

// Decided counts the campaign's runs whose verdict was known (invalid, or
// held: valid): only those say anything of the lock. "Found nothing" is
// true of these runs alone, and of none when every run was unknown.
func (r *Report) Decided() int {
	n := 0
	for _, row := range r.Rows {
		n += row.Runs - row.Unknown
	}
	return n
}

// Kinds returns the fault kinds a campaign on a scenario of system, on
// backend, hunts with: every declared fault that the system's nodes and the
// backend can take, in the declarations' order, restricted to want when it
// is not empty. An unknown name in want is an error.
func Kinds(system, backend string, want []string) ([]string, error) {
	var all, out []string
	for _, f := range nemesis.Faults() {
		facts := f.Facts()
		all = append(all, facts.Name)
		if len(facts.Systems) > 0 && !slices.Contains(facts.Systems, system) {
			continue
		}
		if len(facts.Backends) > 0 && backend != "" && !slices.Contains(facts.Backends, backend) {
			continue
		}
		if len(want) == 0 || slices.Contains(want, facts.Name) {
			out = append(out, facts.Name)
		}
	}
	for _, w := range want {
		if w != NoFault && !slices.Contains(all, w) {
			return nil, fmt.Errorf("hunt: unknown fault kind %q (known: %v)", w, all)
		}
	}
	return out, nil
}

// Schedule returns the random schedule of a run of fault kind on base: one
// kind, drawn from the run's seed over the run's length, with faults of up to
// three lease lengths (3 s for a lock without a lease), so that a pause or a
// partition can outlive a lease. Every shape of the kind is drawn: a
// network fault cuts one node, a minority or a majority off, or one
// worker (w0: its links to every node, a client-specific cut; the workers
// run the same loop, so one of them stands for any); and the kind's own
// options and pause points, as its facts declare them (faultkind.Hunt: a
// partition's direction, a client pause's point and isolation). A
// failover's quiet gaps are at least half the topology's PromotionRetry
// (a Redis Cluster replica's next election waits 8 s after its last): the
// promotions alternate between a primary and its replica, so one node's
// come at least PromotionRetry apart and each can run when drawn.
func Schedule(base *scenarios.Scenario, kind string) *nemesis.RandomSpec {
	ttl := base.Lock.TTL
	if ttl <= 0 {
		ttl = time.Second
	}
	f, _ := nemesis.FactsOf(kind)
	interval := max(time.Second, ttl)
	if top, err := cluster.TopologyOf(cluster.Spec{System: base.System.Name, Topology: base.System.Topology}); err == nil && f.Class == history.ClassFailover {
		interval = max(interval, top.PromotionRetry)
	}
	spec := &nemesis.RandomSpec{
		Faults:      []string{kind},
		Start:       500 * time.Millisecond,
		Interval:    interval,
		MinDuration: 200 * time.Millisecond,
		MaxDuration: 3 * ttl,
		Targets:     targets(base, kind),
		Workers:     []string{"one"},
		Offsets:     []time.Duration{-2 * ttl, 2 * ttl, 30 * time.Second},
	}
	if c := f.Hunt.Choices; c != nil {
		spec.Choices = map[string]map[string][]string{kind: c}
	}
	spec.Points = f.Hunt.Points
	return spec
}

// targets are the targets drawn for the faults of kind: one node, or for a
// cluster of three or more also a minority or a majority of them, and for
// a network fault also the first worker's links.
func targets(base *scenarios.Scenario, kind string) []string {
	out := []string{nemesis.TargetOne}
	if base.System.Nodes >= 3 {
		out = append(out, nemesis.TargetMinority, nemesis.TargetMajority)
	}
	if f, _ := nemesis.FactsOf(kind); f.Targets == nemesis.TargetsLinks && base.Workers > 0 {
		out = append(out, "w0")
	}
	return out
}

// Lease is what a campaign knows of the lock's lease before its runs, as
// the lock declares it. MinTTL, MaxTTL and TTLStep bound the ttls drawn:
// from MinTTL to MaxTTL, in whole TTLSteps (etcd grants whole seconds);
// each zero is a lock's that declares no bound: DefaultMinTTL, twice the
// base's ttl, 10 ms. FixedTTL keeps the base's ttl in every run: a lock
// whose lease the ttl does not set (a ZooKeeper session's timeout is an
// option of its own; a lock that never expires has no lease).
// SelfRenewing says that the lock renews its leases by itself (a
// session's keep-alive, a watchdog of its own), so that holds longer than
// the ttl are drawn without a drawn renewal.
type Lease struct {
	MinTTL, MaxTTL, TTLStep time.Duration
	FixedTTL                bool
	SelfRenewing            bool
}

// DefaultMinTTL is the shortest ttl drawn for a lock that declares no
// bound: short enough for sub-second leases, long enough for a renewal
// every ttl/3 (scenarios refuse renewal under 300 ms).
const DefaultMinTTL = 300 * time.Millisecond

// bounds returns l's ttl bounds and step for base, the defaults filled
// in, the least rounded up to a step and the most at least the least.
func (l Lease) bounds(base time.Duration) (lo, hi, step time.Duration) {
	lo, hi, step = cmp.Or(l.MinTTL, DefaultMinTTL), cmp.Or(l.MaxTTL, 2*base), cmp.Or(l.TTLStep, 10*time.Millisecond)
	lo = (lo + step - 1) / step * step
	return lo, max(hi, lo), step
}

// draw draws a run's ttl from rng: the base's, the shortest, one up to a
// second (a sub-second lease, when the bounds allow one), or one anywhere
// in the bounds; each a whole number of steps within them.
func (l Lease) draw(rng *rand.Rand, base time.Duration) time.Duration {
	lo, hi, step := l.bounds(base)
	pick := rng.IntN(4)
	if l.FixedTTL || base <= 0 {
		return base
	}
	var d time.Duration
	switch pick {
	case 0:
		return base
	case 1:
		d = lo
	case 2:
		d = lo + time.Duration(rng.Int64N(int64(max(min(hi, time.Second)-lo, 0))+1))
	default:
		d = lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
	}
	d = (d + step - 1) / step * step
	return min(max(d, lo), hi)
}

// Latency delays drawn per run for the latency kind: short, the default
// (nemesis.DefaultLatency), and LatencyShare of the run's ttl.
const (
	ShortLatency = 20 * time.Millisecond
	LatencyShare = 0.4
)

// latencyDelay draws the delay of a run's latency faults from rng: one of
// ShortLatency, nemesis.DefaultLatency and LatencyShare of ttl.
func latencyDelay(rng *rand.Rand, ttl time.Duration) time.Duration {
	return latencyDelays(ttl)[rng.IntN(3)]
}

// latencyDelays are the delays a run of ttl may draw for its latency
// faults: ShortLatency, nemesis.DefaultLatency and LatencyShare of ttl.
func latencyDelays(ttl time.Duration) [3]time.Duration {
	return [3]time.Duration{ShortLatency, nemesis.DefaultLatency, time.Duration(float64(ttl) * LatencyShare).Round(10 * time.Millisecond)}
}

// Variant returns the scenario of run seed of kind on base: base with the
// kind's schedule (none for NoFault), its seed, no expectation but a valid
// verdict, and a workload drawn from the seed (drawWorkload): the lease's
// ttl within lease's bounds, the lock taken by trying or by waiting, renewed by a
// watchdog every ttl/3 or not, the register fenced or not, the hold after
// the write, and for the latency kind its faults' delay (ShortLatency,
// nemesis.DefaultLatency or LatencyShare of the ttl). The schedule's
// timing is the base's (Schedule), so that a kind's runs, and a steered
// run's mutations, share one space (NewSpace). Each draw comes from its
// own stream of the seed, so that what one lock cannot run does not
// change another draw of the same seed.
func Variant(base *scenarios.Scenario, kind string, seed uint64, lease Lease, validate func(*scenarios.Scenario) error) *scenarios.Scenario {
	sc := *base
	sc.Tags = slices.Clone(base.Tags)
	sc.Name = base.Name + "-hunt-" + kind
	sc.Seed = seed
	sc.Nemesis = scenarios.Nemesis{}
	if kind != NoFault {
		sc.Nemesis.Random = Schedule(base, kind)
	}
	sc.Expect = checker.Expectation{Verdict: checker.Valid}
	if sc.Workload != "" && sc.Workload != scenarios.WorkloadLock {
		return &sc
	}
	varied := drawWorkload(&sc, seed, lease, validate)
	if r := varied.Nemesis.Random; r != nil && kind == (nemesis.Latency{}).Name() {
		delay := latencyDelay(rand.New(rand.NewPCG(seed, 0x64656c6179)), varied.Lock.TTL) // "delay"
		r.Options = map[string]map[string]string{kind: {"delay": delay.String()}}
	}
	return varied
}

// drawWorkload returns sc with the workload drawn from seed: its ttl (from
// lease; the base's when validate refuses it), the acquire and renewal, the
// register, the hold. A drawn field the lock cannot run (validate refuses
// it) is dropped: waiting for trying, renewal for none, and when neither
// helps the workload falls back to sc's (with the drawn ttl); a fenced
// register that validate refuses (a lock without tokens), to unfenced.
func drawWorkload(sc *scenarios.Scenario, seed uint64, lease Lease, validate func(*scenarios.Scenario) error) *scenarios.Scenario {
	ok := func(v *scenarios.Scenario) bool { return validate == nil || validate(v) == nil }
	if drawn := *sc; sc.Lock.TTL > 0 {
		drawn.Lock.TTL = lease.draw(rand.New(rand.NewPCG(seed, 0x74746c)), sc.Lock.TTL) // "ttl"
		if drawn.Lock.Drift >= drawn.Lock.TTL {
			drawn.Lock.Drift = drawn.Lock.TTL / 2
		}
		if ok(&drawn) {
			*sc = drawn
		}
	}
	ttl := sc.Lock.TTL
	rng := rand.New(rand.NewPCG(seed, 0x68756e74))
	wait := rng.IntN(2) == 0
	renew := rng.IntN(2) == 0 && ttl >= 300*time.Millisecond
	workload := func(wait, renew bool) scenarios.Scenario {
		v := *sc
		if wait {
			v.Lock.Acquire, v.Lock.Wait = scenarios.AcquireWait, 3*max(ttl, time.Second)
		} else {
			v.Lock.Acquire, v.Lock.Wait = scenarios.AcquireTry, 0
		}
		v.Lock.Renew = 0
		if renew {
			v.Lock.Renew = (ttl / 3).Round(10 * time.Millisecond)
		}
		return v
	}
	// A lock that cannot wait, or cannot renew, loses only that draw: a
	// lock that cannot wait still renews in the seeds that drew renewal.
	varied, runs := *sc, false
	for _, w := range [][2]bool{{wait, renew}, {false, renew}, {wait, false}, {false, false}} {
		if varied = workload(w[0], w[1]); ok(&varied) {
			runs = true
			break
		}
	}
	if !runs {
		return sc
	}
	// Fenced or not: drawn after the acquire and renewal, so that a seed's
	// are the same for every lock; kept only for a lock that can run it
	// (its grants carry fencing tokens).
	if fenced := varied; rng.IntN(2) == 0 && (sc.Resource == "" || sc.Resource == scenarios.Unfenced) {
		fenced.Resource = scenarios.Fenced
		if ok(&fenced) {
			varied = fenced
		}
	}
	varied.Hold = drawHold(rng, sc.Hold, ttl, varied.Lock.Renew > 0 || lease.SelfRenewing)
	if !ok(&varied) {
		varied.Hold = sc.Hold
	}
	return &varied
}

// drawHold draws how long a holder works under the lock after its write:
// base, a quarter of the lease, or nine tenths of it (a holder still
// inside its lease when a fault strikes, for a lease that a fault ends
// early); and for a lease that is renewed (renewed) two and a half or
// four leases (a holder that lives on its renewals, for a renewal loop
// that fails), for one that nobody renews a half or three quarters of it
// instead (a holder that ends late in its lease, where a lease the
// service keeps shorter than the lock claims shows).
func drawHold(rng *rand.Rand, base, ttl time.Duration, renewed bool) time.Duration {
	var h time.Duration
	switch pick := rng.IntN(5); {
	case pick == 0:
		return base
	case pick == 1:
		h = ttl / 4
	case pick == 2:
		h = ttl * 9 / 10
	case pick == 3 && renewed:
		h = ttl * 5 / 2
	case pick == 3:
		h = ttl / 2
	case renewed:
		h = 4 * ttl
	default:
		h = ttl * 3 / 4
	}
	return h.Round(10 * time.Millisecond)
}

// NotApplicable says why fault kind cannot run on base's cluster, as its
// declared topology (cluster.Layout) shows before anything starts: a
// failover needs a replica to promote, a sentinel failover needs
// sentinels. It returns "" for a kind that can run, or whose cluster
// cannot be told from the declaration (the run then says it, Unavailable).
func NotApplicable(base *scenarios.Scenario, kind string) string {
	var role string
	switch kind {
	case nemesis.Failover{}.Name():
		role = cluster.RoleReplica
	case nemesis.SentinelFailover{}.Name():
		role = cluster.RoleSentinel
	default:
		return ""
	}
	nodes, err := cluster.Layout(cluster.Spec{System: base.System.Name, Topology: base.System.Topology, Nodes: base.System.Nodes})
	if err != nil || slices.ContainsFunc(nodes, func(n cluster.Node) bool { return n.Role == role }) {
		return ""
	}
	n, unit := max(base.System.Nodes, 1), "nodes"
	if n == 1 {
		unit = "node"
	}
	return fmt.Sprintf("%s needs a %s node; %s/%s (%d %s) has none", kind, role, base.System.Name, cmp.Or(base.System.Topology, "default"), n, unit)
}

// Campaign runs the campaign on base and returns its report. A kind that
// is not applicable to base's topology (NotApplicable) is reported so
// before anything of it starts.
func Campaign(ctx context.Context, base *scenarios.Scenario, run RunFunc, validate func(*scenarios.Scenario) error, opts Options) (*Report, error) {
	began := time.Now()
	opts = opts.withDefaults()
	kinds, err := Kinds(base.System.Name, opts.Backend, opts.Faults)
	if err != nil {
		return nil, err
	}
	planned, err := Plan(base.System.Name, opts)
	if err != nil {
		return nil, err
	}
	c := &campaign{base: base, run: run, opts: opts, began: began, rep: &Report{Scenario: base.Name, Steer: opts.Steer}, cannot: map[string]bool{}}
	c.validate = func(sc *scenarios.Scenario) error {
		if err := c.refused(sc); err != nil {
			return err
		}
		if validate == nil {
			return nil
		}
		return validate(sc)
	}
	defer func() { c.rep.Elapsed = time.Since(began) }()
	c.told = Progress{Total: len(planned)}
	for k, kind := range opts.all(kinds) {
		c.kind = k
		row := &Row{Fault: kind}
		c.rep.Rows = append(c.rep.Rows, row)
		if why := NotApplicable(base, kind); why != "" {
			row.NotApplicable = why
			fmt.Fprintf(c.opts.Log, "hunt: %s: not applicable: %s (from the base's topology; nothing started)\n", kind, why)
			c.told.Total -= c.shardRuns()
			continue
		}
		if err := c.hunt(ctx, row); err != nil {
			return c.rep, err
		}
		if c.rep.OutOfTime || c.rep.Stopped != "" {
			break
		}
	}
	return c.rep, nil
}

// campaign is a campaign under way.
type campaign struct {
	base     *scenarios.Scenario
	run      RunFunc
	validate func(*scenarios.Scenario) error
	opts     Options
	// rng draws the steering's choices of the kind being hunted
	// (steerRand); nil for a random campaign.
	rng   *rand.Rand
	began time.Time
	rep   *Report
	// told is how far the campaign has come (Options.Progress).
	told Progress
	// kind is the position of the kind being hunted (NoFault first).
	kind int
	// cannot holds the workload fields that the lock turned out not to
	// serve (WorkloadError); no later run draws them.
	cannot map[string]bool
}

// drawnFields are the workload fields a campaign draws and can draw again
// without (WorkloadError), each with whether a scenario asks for it.
var drawnFields = map[string]func(*scenarios.Scenario) bool{
	"lock.renew":   func(sc *scenarios.Scenario) bool { return sc.Lock.Renew > 0 },
	"lock.acquire": func(sc *scenarios.Scenario) bool { return sc.Lock.Acquire == scenarios.AcquireWait },
}

// refused refuses a scenario that asks for a workload field the lock
// turned out not to serve.
func (c *campaign) refused(sc *scenarios.Scenario) error {
	for field := range c.cannot {
		if drawnFields[field](sc) {
			return fmt.Errorf("hunt: the lock cannot serve %s", field)
		}
	}
	return nil
}

// hunt makes the runs of row's fault kind and tallies them in row. A run
// whose setup failed is tallied as unknown and the next run is made; after
// MaxSetupFailures such runs in a row, the kind's remaining runs are not
// made (Row.SetupGaveUp).
func (c *campaign) hunt(ctx context.Context, row *Row) error {
	kind := row.Fault
	anomalies := map[string]bool{}
	var corpus Corpus
	var sp Space
	if kind != NoFault {
		sp = NewSpace(c.base, kind)
	}
	if c.opts.Steer {
		c.rng = steerRand(c.opts.Seed, kind)
	}
	left := c.shardRuns() // this shard's runs of the kind not yet made
	failedSetups := 0     // the kind's last runs in a row whose setup failed
	for i := range c.opts.Runs {
		if !c.opts.Shard.has(c.kind, i, c.opts.Runs, c.opts.Steer) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if c.opts.Budget > 0 && time.Since(c.began) > c.opts.Budget {
			c.rep.OutOfTime = true
			break
		}
		sc, how, out, err := c.runOne(ctx, kind, i, &corpus, sp)
		if errors.Is(err, ErrNotApplicable) {
			row.NotApplicable = err.Error()
			fmt.Fprintf(c.opts.Log, "hunt: %s: not applicable: %v\n", kind, err)
			c.told.Total -= left
			break
		}
		if err != nil {
			return err
		}
		if out.Unavailable != "" {
			row.NotApplicable = out.Unavailable
			fmt.Fprintf(c.opts.Log, "hunt: %s: not applicable: %s (%s)\n", kind, out.Unavailable, out.Dir)
			c.told.Total -= left
			break
		}
		left--
		c.told.Done++
		c.rep.Runs++
		score, has := c.tally(row, sc, out, anomalies)
		if how != "" {
			row.Steered++
		}
		if !unknown(out) {
			corpus.Add(Entry{Scenario: sc, Schedule: Resolved(sc), Margin: score, HasMargin: has, Order: i, Dir: out.Dir})
		}
		c.logRun(kind, i, sc, how, out, score, has)
		if c.opts.Stop != nil && c.opts.Stop(out) {
			c.rep.Stopped, c.rep.StoppedAfter = cmp.Or(out.Dir, "(no directory)"), c.rep.Runs
			fmt.Fprintf(c.opts.Log, "hunt: %s run %d/%d found what the campaign looks for; it stops after %d runs\n", kind, i+1, c.opts.Runs, c.rep.Runs)
			break
		}
		failedSetups++
		if out.SetupFailed == "" {
			failedSetups = 0
		}
		if failedSetups >= MaxSetupFailures && left > 0 {
			row.SetupGaveUp = fmt.Sprintf("setup failed in %d runs in a row: %s", failedSetups, out.SetupFailed)
			fmt.Fprintf(c.opts.Log, "hunt: %s: %s; the kind's %d remaining runs are not made\n", kind, row.SetupGaveUp, left)
			c.told.Total -= left
			break
		}
	}
	for a := range anomalies {
		row.Anomalies = append(row.Anomalies, a)
	}
	slices.Sort(row.Anomalies)
	return nil
}

// shardRuns returns the number of this shard's runs of the kind being
// hunted.
func (c *campaign) shardRuns() int {
	n := 0
	for i := range c.opts.Runs {
		if c.opts.Shard.has(c.kind, i, c.opts.Runs, c.opts.Steer) {
			n++
		}
	}
	return n
}

// runOne makes run i of kind and returns its scenario, how its schedule was
// made (next) and its outcome. A workload field the lock turns out not to
// serve is drawn again without it, once per field; a run whose lock cannot
// serve its workload otherwise is not applicable (ErrNotApplicable).
func (c *campaign) runOne(ctx context.Context, kind string, i int, corpus *Corpus, sp Space) (*scenarios.Scenario, string, Outcome, error) {
	sc, how := c.next(kind, i, corpus, sp)
	if c.opts.Progress != nil {
		c.told.Kind, c.told.Seed = kind, sc.Seed
		c.opts.Progress(c.told)
	}
	out, err := c.run(ctx, sc)
	var we *WorkloadError
	for errors.As(err, &we) && !c.cannot[we.Field] && drawnFields[we.Field] != nil {
		c.cannot[we.Field] = true
		fmt.Fprintf(c.opts.Log, "hunt: %s run %d/%d: %v; its workload is drawn again, and no later run asks for %s\n", kind, i+1, c.opts.Runs, err, we.Field)
		sc, how = c.next(kind, i, corpus, sp)
		out, err = c.run(ctx, sc)
	}
	if errors.As(err, &we) {
		err = fmt.Errorf("%w: %v", ErrNotApplicable, err)
	}
	return sc, how, out, err
}

// logRun logs run i of kind: its seed, its workload (ttl, acquire,
// renewal, hold, register, and the latency's delay for the latency kind),
// how its schedule was made, its verdict, anomalies and margin, and its
// directory.
func (c *campaign) logRun(kind string, i int, sc *scenarios.Scenario, how string, out Outcome, score float64, has bool) {
	if how == "" {
		how = "random"
	}
	delay := ""
	if d, ok := Delay(sc); ok {
		delay = ", delay " + d
	}
	fmt.Fprintf(c.opts.Log, "hunt: %s run %d/%d (seed %d, ttl %v, acquire %s, renew %v, hold %v, %s register%s, %s): %s %v margin %s %s\n",
		kind, i+1, c.opts.Runs, sc.Seed, sc.Lock.TTL, orTry(sc.Lock.Acquire), sc.Lock.Renew, sc.Hold, cmp.Or(sc.Resource, scenarios.Unfenced), delay, how, verdictText(out), out.Anomalies, FormatMargin(score, has), out.Dir)
}

// Delay returns the delay option of sc's latency faults (its random
// schedule's, or its first latency step's), and false when it has none.
func Delay(sc *scenarios.Scenario) (string, bool) {
	latency := nemesis.Latency{}.Name()
	if r := sc.Nemesis.Random; r != nil {
		if d, ok := r.Options[latency]["delay"]; ok {
			return d, true
		}
	}
	for _, st := range sc.Nemesis.Steps {
		if d, ok := st.Options["delay"]; ok && st.Fault == latency {
			return d, true
		}
	}
	return "", false
}

// next returns the scenario of run i of kind, and how its schedule was
// made when it mutated an earlier run's (empty for a random one).
func (c *campaign) next(kind string, i int, corpus *Corpus, sp Space) (*scenarios.Scenario, string) {
	seed := c.opts.Seed + uint64(i)
	if c.rng != nil && kind != NoFault && corpus.Len() > 0 && c.rng.Float64() < SteerProbability {
		if parents := corpus.Parents(SteerBest); len(parents) > 0 {
			parent := parents[c.rng.IntN(len(parents))]
			if steps, what, ok := Mutate(c.rng, parent.Schedule, sp.Of(parent.Scenario)); ok {
				return Mutant(parent.Scenario, steps, seed), fmt.Sprintf("run %d mutated (margin %s): %s", parent.Order+1, FormatMargin(parent.Margin, parent.HasMargin), what)
			}
		}
	}
	return Variant(c.base, kind, seed, c.opts.Lease, c.validate), ""
}

// tally counts the outcome out of a run of sc in row, and returns the
// run's smallest normalised margin (Score, in lease lengths of the run's
// own ttl).
func (c *campaign) tally(row *Row, sc *scenarios.Scenario, out Outcome, anomalies map[string]bool) (float64, bool) {
	row.Runs++
	if out.HostTrouble {
		row.HostTrouble++
	}
	if out.OffScript {
		row.OffScript++
	}
	switch {
	case unknown(out):
		row.Unknown++
		switch {
		case out.SetupFailed != "":
			row.SetupFailed++
		case out.FaultFailed:
			row.FaultsFailed++
		case out.OutOfBudget:
			row.OutOfBudget++
		}
	case out.Verdict == checker.Invalid:
		row.Invalid++
		c.told.Invalid++
		row.Failing = append(row.Failing, out.Dir)
		row.FailingSeeds = append(row.FailingSeeds, sc.Seed)
		row.Findings = append(row.Findings, out.Finding)
		for _, a := range out.Anomalies {
			anomalies[a] = true
		}
	}
	score, has := Score(out.Margins, sc.Lock.TTL)
	if has && (!row.HasMargin || score < row.Margin) {
		row.Margin, row.HasMargin, row.MarginRun = score, true, out.Dir
	}
	return score, has
}

// unknown reports whether a run's verdict is unknown: its setup or its
// faults failed (whatever its verdict), or its verdict is unknown (or none
// at all). Such a run counts neither as invalid nor as one that held, and
// steers nothing (it stays out of the corpus).
func unknown(out Outcome) bool {
	return out.SetupFailed != "" || out.FaultFailed || (out.Verdict != checker.Valid && out.Verdict != checker.Invalid)
}

// verdictText is a run's verdict in its log line, with why for an unknown
// one: "unknown (setup failed: ...)", "unknown (check out of its
// budget)", "unknown (faults failed)".
func verdictText(out Outcome) string {
	switch {
	case out.SetupFailed != "":
		return "unknown (setup failed: " + out.SetupFailed + ")"
	case out.FaultFailed:
		return "unknown (faults failed)"
	case unknown(out) && out.OutOfBudget:
		return "unknown (check out of its budget)"
	case unknown(out):
		return "unknown"
	}
	return string(out.Verdict)
}

func orTry(acquire string) string {
	if acquire == "" {
		return scenarios.AcquireTry
	}
	return acquire
}
