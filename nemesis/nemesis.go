// Package nemesis owns the faults jepsen-lite injects, the targets they hit
// and the schedules that time them. Each fault kind is a small type in a file
// of its own (partition.go, kill.go, ...; the two failovers share
// failover.go) with its Facts, which declare it once (name, description,
// heal, moment or interval, class, targets, offset, the nodes it makes
// unavailable, the systems and backends that can take it, its docs column),
// a Check of a step's settings, an availability test against the running
// cluster, and an Inject that returns the fault's heal. Faults (faults.go) is
// the one list of them: adding a fault kind is its file plus one line there;
// everything else (list --faults, scenario validation, random schedules, the
// history's fault ops, the report, the docs table, the reference checker's
// generator) reads its Facts. Every injection and every heal is recorded in the
// history as a nemesis op (process -1), and Run heals whatever is still
// active before it returns, on every path. Whenever the faults change which
// server nodes are unavailable (down, or cut off from the workers), one more
// nemesis op, an availability record (history.FAvailability), says which
// are, so that a checker can tell offline, from the history alone, whether a
// majority was up: each fault kind says in its own code whether it makes
// nodes unavailable.
package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// ErrUnknownFault reports a fault name that is not in Faults().
var ErrUnknownFault = errors.New("nemesis: unknown fault")

// The pause points of the workload loop (docs/design.md §4).
const (
	// AfterResponse is after the acquire reply arrived, before it is
	// processed: an algorithm that checks its elapsed time sees the pause.
	AfterResponse = "after-response"
	// BeforeWrite is after the validity check, before the write:
	// Kleppmann's stop-the-world pause.
	BeforeWrite = "before-write"
	// InCall is while a call to an external client is in flight, right
	// after its request was sent (a waiting acquire waits there): only a
	// client that runs as a process of its own (the exec algorithm) has
	// it.
	InCall = "in-call"
)

// PausePoints lists the pause points, in the documented order.
var PausePoints = []string{BeforeWrite, AfterResponse, InCall}

// Workers is what the runner lets the nemesis do to its simulated clients.
type Workers interface {
	// Count returns the number of workers.
	Count() int
	// PauseAt arms a pause: the next time worker reaches point it stops
	// for d. The worker records the pause in the history when it begins.
	// With isolate, the worker's links are cut for the pause too, as when
	// a whole process stops: its lock client's heartbeats stop with it.
	PauseAt(worker int, point string, d time.Duration, isolate bool) error
	// SetClockOffset skews worker's own wall clock by offset (0 restores).
	SetClockOffset(worker int, offset time.Duration) error
}

// Env is what faults act on during one run.
type Env struct {
	Cluster  cluster.Cluster
	Network  *linknet.Network
	Workers  Workers
	Recorder *history.Recorder
	// Rand resolves random target specs ("one", "minority", ...). The
	// runner seeds it from the run's seed, so a replay picks the same
	// nodes; NewRunner supplies a fixed-seed source when it is nil.
	Rand *rand.Rand

	// links records the network faults applied through the Env.
	links linkLedger
	// outages records which server nodes the faults made unavailable, and
	// records each change in the history.
	outages outages
}

// Step is one timed fault of a schedule. At is measured from the start of the
// run. A fault with a Duration is healed Duration after it began; without
// one it stays until the end of the run or until a later step heals it
// (fault "heal" with the same targets, or "heal-all").
type Step struct {
	At       time.Duration `yaml:"at" json:"at"`
	Fault    string        `yaml:"fault" json:"fault"`
	Targets  []string      `yaml:"targets,omitempty" json:"targets,omitempty"`
	Duration time.Duration `yaml:"duration,omitempty" json:"duration,omitempty"`
	// Point is the pause point of client-pause (after-response, before-write).
	Point string `yaml:"point,omitempty" json:"point,omitempty"`
	// Offset is the clock offset of clock faults, e.g. "+30s" or "-5s".
	Offset time.Duration `yaml:"offset,omitempty" json:"offset,omitempty"`
	// Options carries fault-specific settings, documented by each fault.
	Options map[string]string `yaml:"options,omitempty" json:"options,omitempty"`
	// ExpectFailure says that the step's fault or its heal is expected to
	// fail (a clock fault on a Go server, a restart whose port was taken):
	// the run records the failure as usual, and its outcome is judged as if
	// nothing had failed, but a run in which neither failed does not meet
	// its expectation. Without it, a fault or heal that fails makes the
	// run's outcome unknown. It also allows the step not to run as written
	// (StepIssue): never reached, or late; a step never reached is no
	// failure that did not come.
	ExpectFailure bool `yaml:"expect-failure,omitempty" json:"expect-failure,omitempty"`
}

// String describes the step in one line.
func (s Step) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "at %v %s", s.At, s.Fault)
	if len(s.Targets) > 0 {
		fmt.Fprintf(&b, " %s", strings.Join(s.Targets, ","))
	}
	if s.Point != "" {
		fmt.Fprintf(&b, " at %s", s.Point)
	}
	if s.Offset != 0 {
		fmt.Fprintf(&b, " by %+v", s.Offset)
	}
	if s.Duration > 0 {
		fmt.Fprintf(&b, " for %v", s.Duration)
	}
	if s.ExpectFailure {
		b.WriteString(" (expected to fail)")
	}
	keys := make([]string, 0, len(s.Options))
	for k := range s.Options {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%s", k, s.Options[k])
	}
	return b.String()
}

// Heal undoes one injected fault. It must be safe to call once after the
// fault's own end (a heal that finds nothing to do returns nil).
type Heal func(ctx context.Context) error

// Fault is one kind of fault (Faults lists them all).
type Fault interface {
	// Facts declares the fault kind: its name, heal, class, targets and
	// the rest of what everything but its injection reads.
	Facts() Facts
	// Check checks a step's static settings (options, offset) before the
	// run, without a cluster.
	Check(step Step) error
	// Available returns nil when the fault can act on env, or an error
	// wrapping cluster.ErrUnavailable that says why not.
	Available(env *Env) error
	// Inject applies the fault as step describes and returns its heal (nil
	// when the fault ends on its own) and a value describing what was done to
	// whom, recorded in the history. With an error, a nil heal says that
	// the fault did not take effect at all (recorded as failed), unless the
	// error wraps ErrPartly; a heal says that it took effect in part and
	// undoes what it did.
	Inject(ctx context.Context, env *Env, step Step) (Heal, any, error)
}

// ErrPartly is wrapped by the error of a fault without a heal (it ends on its
// own) that took effect in part: the nemesis records it as a fault in force,
// with its error, rather than as one that failed.
var ErrPartly = errors.New("nemesis: the fault took effect in part")

// Lookup returns the fault called name.
func Lookup(name string) (Fault, error) {
	for _, f := range Faults() {
		if f.Facts().Name == name {
			return f, nil
		}
	}
	return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownFault, name, strings.Join(Names(), ", "))
}

// Names returns the names of every fault kind.
func Names() []string {
	var names []string
	for _, f := range Faults() {
		names = append(names, f.Facts().Name)
	}
	return names
}

// Schedule is the ordered list of steps one run executes.
type Schedule []Step

// Sorted returns the schedule ordered by At (stable).
func (s Schedule) Sorted() Schedule {
	out := append(Schedule(nil), s...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out
}

// active is an injected fault not yet healed. healDue is when the schedule
// heals it (its step's At plus Duration), noDue when it does not.
type active struct {
	step    Step
	heal    Heal
	desc    any
	facts   Facts
	healDue time.Duration
}

// Runner executes a schedule against an Env, recording every fault and heal,
// and, through the faults, every change of the nodes' availability.
type Runner struct {
	env *Env
	// acting is held while a fault or a heal acts: like Jepsen's nemesis,
	// the runner carries out one at a time, so a fault due while a heal
	// is still acting (a node's restart on a loaded machine) waits for it
	// rather than striking the node as it starts, and each is recorded
	// when it took effect.
	acting sync.Mutex
	// actions records when each fault and heal acted, for the lateness of
	// the next (actionLog.lateness); it is guarded by acting.
	actions actionLog
	mu      sync.Mutex
	// start is the run's start (Run's), from which steps are timed.
	start  time.Time
	active []*active
	errs   []error
	// issues are the steps that did not run as written (StepIssues);
	// issueAt finds a late step's entry, so that a heal-all late for
	// three faults is one issue.
	issues  []StepIssue
	issueAt map[issueKey]int
	// begun is closed once Run has injected every step due at its start
	// (see Begun).
	begun     chan struct{}
	beginOnce sync.Once
}

// NewRunner returns a Runner for env. When env.Rand is nil it is set to a
// source with a fixed seed, so target choices are still reproducible.
func NewRunner(env *Env) *Runner {
	if env.Rand == nil {
		env.Rand = rand.New(rand.NewPCG(0, 0))
	}
	return &Runner{env: env, begun: make(chan struct{})}
}

// Begun returns a channel that is closed once Run has injected every step
// due at the schedule's start (At ≤ 0), or has stopped before: a workload
// that waits for it meets the faults that a scenario puts "at: 0s" already
// in force, as the scenario says, instead of racing them.
func (r *Runner) Begun() <-chan struct{} { return r.begun }

func (r *Runner) begin() { r.beginOnce.Do(func() { close(r.begun) }) }

// Run executes schedule, each step at its time since start, until the
// schedule is done or ctx ends. Faults with a Duration are healed when it
// elapses. One fault or heal acts at a time: a step or a heal due while
// another acts begins when that one is done (and is recorded then). Run does
// not heal the faults still active when it returns; call HealAll for that
// (the runner does, in a defer). A fault or heal that failed is recorded in
// the history as failed (or, when it took effect in part, as a fault in
// force with its error); the errors of every fault and heal that failed so
// far (Failed) are returned joined at the end.
//
// A step is carried out as written when it begins to act within
// StepTolerance of its time, not counting the time it waited for the
// nemesis's other faults and heals; one that took effect later is recorded
// with its due time, and the steps not reached when ctx ends are recorded
// as not run, each as a fail op of its fault with its due time, when Run
// returns (docs/history.md §1, "Steps that did not run as written"). Both
// are listed by StepIssues.
func (r *Runner) Run(ctx context.Context, start time.Time, schedule Schedule) error {
	r.mu.Lock()
	r.start = start
	r.mu.Unlock()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer r.begin()
	steps := schedule.Sorted()
	for i, step := range steps {
		if step.At > 0 {
			r.begin()
		}
		if !sleepUntil(ctx, start.Add(step.At)) {
			r.notRun(steps[i:])
			break
		}
		a, _ := r.inject(ctx, step) // its errors are kept in r.errs
		if a != nil && step.Duration > 0 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if sleepUntil(ctx, start.Add(a.healDue)) {
					r.healTimed(context.WithoutCancel(ctx), a, timing{due: a.healDue, step: step, heal: true})
				}
			}()
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return errors.Join(r.errs...)
}

// notRun records each of steps as never reached, and lists it as a
// StepIssue.
func (r *Runner) notRun(steps []Step) {
	for _, step := range steps {
		r.record(notRunOp(step))
		r.addIssue(StepIssue{Step: step, NotRun: true})
	}
}

// issueKey names a StepIssue: its step and whether it is about its heal.
type issueKey struct {
	step string
	heal bool
}

// addIssue lists a step that did not run as written. A step late more than
// once (a heal step that healed several faults) keeps one entry, with the
// greatest lateness; every step not run has its own.
func (r *Runner) addIssue(is StepIssue) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if is.NotRun {
		r.issues = append(r.issues, is)
		return
	}
	key := issueKey{is.Step.String(), is.Heal}
	if i, ok := r.issueAt[key]; ok {
		r.issues[i].Late = max(r.issues[i].Late, is.Late)
		return
	}
	if r.issueAt == nil {
		r.issueAt = map[issueKey]int{}
	}
	r.issueAt[key] = len(r.issues)
	r.issues = append(r.issues, is)
}

// StepIssues returns the steps that did not run as written so far, in the
// order they were found: those that took effect late, then, once Run has
// returned, those it never reached.
func (r *Runner) StepIssues() []StepIssue {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.issues)
}

// now returns the harness time since Run's start, and false (and 0) before
// Run has started.
func (r *Runner) now() (time.Duration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.start.IsZero() {
		return 0, false
	}
	return time.Since(r.start), true
}

// endAction is called holding r.acting, as the fault or heal that began to
// act at began is done: it records the action for the lateness of the
// next.
func (r *Runner) endAction(began time.Duration) {
	if end, ok := r.now(); ok {
		r.actions.add(began, end)
	}
}

// overdueHeal returns what timed the heal of a that begins at now: t, unless
// a's own heal, after its step's Duration, was due by now and before t
// (its timer was cut short when the run ended, or it waited while a heal
// step healed a).
func overdueHeal(a *active, t timing, now time.Duration) timing {
	if a.healDue != noDue && a.healDue <= now && (t.due == noDue || a.healDue < t.due) {
		return timing{due: a.healDue, step: a.step, heal: true}
	}
	return t
}

// markLate records, on the op of a fault or heal timed by t that took
// effect late by late, its due time, and lists its step, when late is more
// than StepTolerance. An op that failed took no effect, late or not.
func (r *Runner) markLate(op *history.Op, t timing, late time.Duration) {
	if late <= StepTolerance || op.Type == history.Fail {
		return
	}
	due := t.due
	op.Due = &due
	r.addIssue(StepIssue{Step: t.step, Heal: t.heal, Late: late})
}

// inject carries out one step of the schedule. The errors of the faults and
// heals that failed are kept in r.errs (see Failed) as well as returned.
func (r *Runner) inject(ctx context.Context, step Step) (*active, error) {
	t := timing{due: step.At, step: step}
	switch step.Fault {
	case "heal-all":
		return nil, r.healAll(ctx, t)
	case "heal":
		return nil, r.healMatching(ctx, step.Targets, t)
	}
	a, err := r.injectFault(ctx, step)
	if err != nil {
		r.mu.Lock()
		r.errs = append(r.errs, err)
		r.mu.Unlock()
	}
	return a, err
}

func (r *Runner) injectFault(ctx context.Context, step Step) (*active, error) {
	f, err := Lookup(step.Fault)
	if err != nil {
		r.record(history.Op{Type: history.Fail, F: step.Fault, Class: history.ClassOther, Value: history.JSONValue(step.String()), Error: err.Error()})
		return nil, &FailedError{Step: step, Err: err}
	}
	facts := f.Facts()
	if err := f.Available(r.env); err != nil {
		op := faultOp(facts, history.Fail, history.JSONValue(step.String()), false)
		op.Error = err.Error()
		r.record(op)
		return nil, &FailedError{Step: step, Err: err}
	}
	r.acting.Lock()
	defer r.acting.Unlock()
	began, _ := r.now()
	defer r.endAction(began)
	late := r.actions.lateness(step.At, began)
	heal, desc, err := f.Inject(ctx, r.env, step)
	// The op names the heal only when a heal op will follow.
	op := faultOp(facts, history.Info, history.JSONValue(desc), heal != nil)
	if desc == nil {
		op.Value = history.JSONValue(step.String())
	}
	if err != nil {
		op.Error = err.Error()
		if heal == nil && !errors.Is(err, ErrPartly) {
			// Nothing of it took effect (docs/history.md §1, "Faults
			// that failed").
			op.Type = history.Fail
		}
	}
	r.markLate(&op, timing{due: step.At, step: step}, late)
	r.record(op)
	var a *active
	if heal != nil {
		// A fault that failed half-way still returns the heal of what it
		// did; it is kept so that HealAll undoes it.
		a = &active{step: step, heal: heal, desc: desc, facts: facts, healDue: noDue}
		if step.Duration > 0 {
			a.healDue = step.At + step.Duration
		}
		r.mu.Lock()
		r.active = append(r.active, a)
		r.mu.Unlock()
	}
	if err != nil {
		return a, &FailedError{Step: step, Err: err}
	}
	return a, nil
}

// FailedError reports a fault or a heal of the schedule that failed in whole
// or in part; the history records it (docs/history.md §1, "Faults that
// failed"). Heal is set for a heal that failed, which left its fault in
// force.
type FailedError struct {
	Step Step
	Heal bool
	Err  error
}

func (e *FailedError) Error() string {
	if e.Heal {
		return fmt.Sprintf("nemesis: healing %s: %v", e.Step, e.Err)
	}
	return fmt.Sprintf("nemesis: %s: %v", e.Step, e.Err)
}

func (e *FailedError) Unwrap() error { return e.Err }

// heal runs a's heal once and records it, timed by no step (the heal of the
// faults in force at the end).
func (r *Runner) heal(ctx context.Context, a *active) error {
	return r.healTimed(ctx, a, timing{due: noDue})
}

// healTimed runs a's heal once and records it; t says when it was due and
// which step timed it (overdueHeal).
func (r *Runner) healTimed(ctx context.Context, a *active, t timing) error {
	r.acting.Lock()
	defer r.acting.Unlock()
	r.mu.Lock()
	found := false
	for i, x := range r.active {
		if x == a {
			r.active = append(r.active[:i], r.active[i+1:]...)
			found = true
			break
		}
	}
	r.mu.Unlock()
	if !found {
		return nil
	}
	began, _ := r.now()
	defer r.endAction(began)
	t = overdueHeal(a, t, began)
	late := r.actions.lateness(t.due, began)
	err := a.heal(ctx)
	op := history.Op{Type: history.Info, F: a.facts.Heal, Value: history.JSONValue(a.desc)}
	if err != nil {
		// The fault stays in force (docs/history.md §1): a node whose
		// restart failed stays down, in the availability record too.
		op.Type = history.Fail
		op.Error = err.Error()
		err = &FailedError{Step: a.step, Heal: true, Err: err}
		r.mu.Lock()
		r.errs = append(r.errs, err)
		r.mu.Unlock()
	}
	r.markLate(&op, t, late)
	r.record(op)
	return err
}

// Failed returns every fault and heal that failed so far, in whole or in
// part, in the order they failed: each a *FailedError.
func (r *Runner) Failed() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.errs)
}

// healMatching heals, for the heal step that t times, every active fault
// with the same targets (every one when targets is empty).
func (r *Runner) healMatching(ctx context.Context, targets []string, t timing) error {
	r.mu.Lock()
	var match []*active
	for _, a := range r.active {
		if len(targets) == 0 || sameTargets(a.step.Targets, targets) {
			match = append(match, a)
		}
	}
	r.mu.Unlock()
	var errs []error
	for _, a := range match {
		errs = append(errs, r.healTimed(ctx, a, t))
	}
	return errors.Join(errs...)
}

// HealAll heals every fault still active, newest first: paused nodes are
// resumed, killed nodes started, skewed clocks reset and toxics removed.
// Then, as a safety net for heals that failed, it removes every toxic of the
// Network and resets the clock of every node that can be skewed. It returns
// the joined errors and is safe to call more than once. A heal that a
// fault's Duration timed and that was due by then is judged late or not
// like any (StepIssues); the others end the faults with the run.
func (r *Runner) HealAll(ctx context.Context) error {
	return r.healAll(ctx, timing{due: noDue})
}

// healAll is HealAll for a heal-all step that t times (noDue for none).
func (r *Runner) healAll(ctx context.Context, t timing) error {
	var errs []error
	for {
		r.mu.Lock()
		if len(r.active) == 0 {
			r.mu.Unlock()
			break
		}
		a := r.active[len(r.active)-1]
		r.mu.Unlock()
		errs = append(errs, r.healTimed(ctx, a, t))
	}
	errs = append(errs, sweep(r.env))
	return errors.Join(errs...)
}

// sweep removes every toxic and resets every skewable node's clock. Once the
// network is healed, no node is cut off any more.
func sweep(env *Env) error {
	var errs []error
	if env.Network != nil {
		err := env.Network.HealAll()
		errs = append(errs, err)
		env.links.forget()
		if err == nil {
			env.outages.endNetwork(env)
		}
	}
	if sk, ok := env.Cluster.(cluster.ClockSkewer); ok {
		for _, n := range env.Cluster.Nodes() {
			if err := sk.SetClockOffset(n.Name, 0); err != nil && !errors.Is(err, cluster.ErrUnavailable) {
				errs = append(errs, fmt.Errorf("nemesis: resetting the clock of %s: %w", n.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Active returns the steps of the faults active now.
func (r *Runner) Active() []Step {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Step
	for _, a := range r.active {
		out = append(out, a.step)
	}
	return out
}

func (r *Runner) record(op history.Op) {
	if r.env.Recorder == nil {
		return
	}
	op.Process = history.NemesisProcess
	r.env.Recorder.Record(op)
}

func sameTargets(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// sleepUntil waits until t or until ctx ends, and reports whether t came.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}
