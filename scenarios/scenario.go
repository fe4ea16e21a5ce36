// Package scenarios owns the scenario file format (YAML), its strict
// validation with file-and-line errors, the bounds of every size and
// duration a scenario gives (bounds.go), and the built-in catalog embedded
// from scenarios/catalog/*.yaml. A scenario names the system and topology,
// the lock algorithm, the resource mode, the workers, the duration, the seed,
// the nemesis schedule, the TCP timeouts of its clients and what the run is
// expected to show.
package scenarios

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/nemesis"
)

// ErrInvalid is wrapped by every error about a scenario's content.
var ErrInvalid = errors.New("scenarios: invalid scenario")

// ErrUnknownScenario reports a name that is neither a catalog entry nor a file.
var ErrUnknownScenario = errors.New("scenarios: unknown scenario")

// Scenario is one test: what runs, under which faults, and what is expected.
type Scenario struct {
	Name        string        `yaml:"name"`
	Description string        `yaml:"description,omitempty"`
	Source      string        `yaml:"source,omitempty"`
	Tags        []string      `yaml:"tags,omitempty"`
	System      System        `yaml:"system"`
	Lock        Lock          `yaml:"lock"`
	Resource    string        `yaml:"resource,omitempty"`
	Workers     int           `yaml:"workers"`
	Duration    time.Duration `yaml:"duration"`
	Quiet       time.Duration `yaml:"quiet,omitempty"`
	Think       time.Duration `yaml:"think,omitempty"`
	// Hold is how long a holder keeps the lock after its write, standing
	// for the work it does under the lock; zero by default.
	Hold time.Duration `yaml:"hold,omitempty"`
	// Workload is WorkloadLock (the default: acquire, read, write,
	// release) or WorkloadQueue (capture tasks, process each, set its
	// status), which Queue shapes.
	Workload string     `yaml:"workload,omitempty"`
	Queue    *QueueSpec `yaml:"queue,omitempty"`
	// TCP shortens the TCP timeouts of every connection the run's lock
	// clients open; absent, they are the client libraries' own.
	TCP     TCP                 `yaml:"tcp,omitempty"`
	Seed    uint64              `yaml:"seed,omitempty"`
	Nemesis Nemesis             `yaml:"nemesis,omitempty"`
	Expect  checker.Expectation `yaml:"expect,omitempty"`

	// File is where the scenario was read from ("catalog/x.yaml" for the
	// built-in ones); it is not part of the YAML.
	File string `yaml:"-"`
	// root is the parsed YAML the scenario was read from, for the lines
	// of later errors (CheckRun); nil for a scenario built in code.
	root *yaml.Node
}

// System is the system under test and its topology.
type System struct {
	Name        string `yaml:"name"`
	Topology    string `yaml:"topology,omitempty"`
	Nodes       int    `yaml:"nodes,omitempty"`
	Persistence bool   `yaml:"persistence,omitempty"`
}

// Lock is the algorithm under test and how the workload uses it.
type Lock struct {
	// Algorithm names the lock under test: one of the algorithms
	// (clients.Algorithms), or, with Own, the name of a Go Locker of the
	// caller's own. It may be left out of a scenario that is only ever run
	// with a Locker of the caller's own (runner.WithLocker).
	Algorithm string `yaml:"algorithm,omitempty"`
	// Own marks the lock as a Go Locker of the caller's own, given to the
	// runner with its factory (runner.WithLockerNamed): Algorithm is then
	// its name, which must not be a built-in algorithm's. The runner sets
	// it in the scenario.yaml it stores for such a run, so that the store,
	// the report and a replay name the caller's lock; only Go code that
	// gives the factory again can run such a scenario.
	Own     bool              `yaml:"own,omitempty"`
	TTL     time.Duration     `yaml:"ttl"`
	Drift   time.Duration     `yaml:"drift,omitempty"`
	Keys    []string          `yaml:"keys,omitempty"`
	Options map[string]string `yaml:"options,omitempty"`
	// Renew is the watchdog's period: while it holds the lock, a holder
	// renews its lease for the ttl every Renew, as Redisson's watchdog
	// does every ttl/3. Zero never renews. Only algorithms that can renew
	// (clients.Renewer) accept it.
	Renew time.Duration `yaml:"renew,omitempty"`
	// Acquire is how a worker asks for the lock: AcquireTry (the default)
	// tries once; AcquireWait waits for it, as the algorithm's library
	// or seed waits (clients.Waiter), for up to Wait.
	Acquire string        `yaml:"acquire,omitempty"`
	Wait    time.Duration `yaml:"wait,omitempty"`
	// OnError is what a worker does with its lock client after a call of
	// unknown outcome: OnErrorCrash (the default) ends the process and
	// closes the client, as a dying process loses it; OnErrorKeepClient
	// ends the process but keeps the client and its sessions, as an
	// application does that logs the error and calls again on the same
	// connection (docs/history.md §1, `kept`).
	OnError string `yaml:"on-error,omitempty"`
}

// The workloads.
const (
	WorkloadLock  = "lock"
	WorkloadQueue = "queue"
)

// QueueSpec shapes the queue workload: Tasks tasks spread over Queues
// queues (task i in queue i mod Queues, worker j captures from queue j mod
// Queues), each with a retry budget of Budget captures (nil: none); every
// capture asks for up to Limit tasks; a worker sets a processed task failed
// with probability FailRate, done otherwise; an optional reaper.
type QueueSpec struct {
	Tasks    int         `yaml:"tasks,omitempty"`
	Queues   int         `yaml:"queues,omitempty"`
	Budget   *int        `yaml:"budget,omitempty"`
	Limit    int         `yaml:"limit,omitempty"`
	FailRate float64     `yaml:"fail-rate,omitempty"`
	Reaper   *ReaperSpec `yaml:"reaper,omitempty"`
}

// ReaperSpec is the queue's reaper: a process of its own that, every
// Interval, sets the tasks in progress for longer than Timeout back to
// failed.
type ReaperSpec struct {
	Interval time.Duration `yaml:"interval"`
	Timeout  time.Duration `yaml:"timeout"`
}

// TCP is the TCP timeouts every connection of the run's lock clients is
// opened with (docs/network.md, "When a connection ends during a
// partition"), so that the OS ends a connection during a partition as soon
// as the scenario wants, as shortening them on the clients does under
// Jepsen's iptables drops. A field left out keeps what the client library
// sets by itself (keepalive) or the OS default (TCP_USER_TIMEOUT); a field
// given must be positive and within what the kernel accepts: the
// keepalive times in whole seconds up to MaxKeepAlive, the count up to
// MaxKeepAliveCount, the user timeout in whole milliseconds up to
// MaxUserTimeout.
type TCP struct {
	// KeepAliveIdle is how long a connection is idle before the first
	// keepalive probe (TCP_KEEPIDLE).
	KeepAliveIdle time.Duration `yaml:"keepalive-idle,omitempty"`
	// KeepAliveInterval is the time between unanswered keepalive probes
	// (TCP_KEEPINTVL).
	KeepAliveInterval time.Duration `yaml:"keepalive-interval,omitempty"`
	// KeepAliveCount is how many unanswered probes end the connection
	// (TCP_KEEPCNT).
	KeepAliveCount int `yaml:"keepalive-count,omitempty"`
	// UserTimeout is how long sent data may stay unacknowledged before
	// the OS ends the connection (TCP_USER_TIMEOUT).
	UserTimeout time.Duration `yaml:"user-timeout,omitempty"`
}

// The kernel's bounds on the TCP settings (linux/tcp.h: MAX_TCP_KEEPIDLE,
// MAX_TCP_KEEPINTVL, MAX_TCP_KEEPCNT; TCP_USER_TIMEOUT is an int of
// milliseconds).
const (
	MaxKeepAlive      = 32767 * time.Second
	MaxKeepAliveCount = 127
	MaxUserTimeout    = math.MaxInt32 * time.Millisecond
)

// check returns the hint and the field of the first setting of t that is
// out of bounds, with given reporting which fields the YAML has; "" when
// every one is fine.
func (t TCP) check(given func(field string) bool) (hint, field string) {
	for _, ka := range []struct {
		field string
		d     time.Duration
	}{{"keepalive-idle", t.KeepAliveIdle}, {"keepalive-interval", t.KeepAliveInterval}} {
		if (ka.d != 0 || given(ka.field)) && (ka.d < time.Second || ka.d > MaxKeepAlive || ka.d%time.Second != 0) {
			return fmt.Sprintf("must be a whole number of seconds from 1s to %ds, such as 5s (the kernel counts keepalive in seconds); leave it out to keep the client's own", MaxKeepAlive/time.Second), ka.field
		}
	}
	if (t.KeepAliveCount != 0 || given("keepalive-count")) && (t.KeepAliveCount < 1 || t.KeepAliveCount > MaxKeepAliveCount) {
		return fmt.Sprintf("must be a number of probes from 1 to %d; leave it out to keep the client's own", MaxKeepAliveCount), "keepalive-count"
	}
	if (t.UserTimeout != 0 || given("user-timeout")) && (t.UserTimeout < time.Millisecond || t.UserTimeout > MaxUserTimeout || t.UserTimeout%time.Millisecond != 0) {
		return fmt.Sprintf("must be a whole number of milliseconds from 1ms to %v, such as 2s; leave it out to keep the OS default (none)", MaxUserTimeout), "user-timeout"
	}
	return "", ""
}

// check returns the hint and the path below queue of the first value of q
// that is impossible; "" when every one is fine.
func (q *QueueSpec) check() (hint string, path []string) {
	switch {
	case q.Tasks < 0:
		return "must be at least 1", []string{"tasks"}
	case q.Queues < 0 || q.Queues > cmp.Or(q.Tasks, DefaultQueueTasks):
		return "must be at least 1 and at most the number of tasks", []string{"queues"}
	case q.Budget != nil && *q.Budget < 0:
		return "must not be negative", []string{"budget"}
	case q.Limit < 0:
		return "must be at least 1", []string{"limit"}
	case q.FailRate < 0 || q.FailRate > 1:
		return "must be a probability between 0 and 1", []string{"fail-rate"}
	case q.Reaper != nil && q.Reaper.Interval <= 0:
		return "must be a positive duration such as 200ms", []string{"reaper", "interval"}
	case q.Reaper != nil && q.Reaper.Timeout <= 0:
		return "must be a positive duration such as 1s", []string{"reaper", "timeout"}
	}
	return "", nil
}

// The queue workload's defaults, applied by Normalize.
const (
	DefaultQueueTasks = 50
	DefaultQueueLimit = 3
)

// Processes returns the number of worker processes the nemesis may target:
// the workers, and the reaper when the queue workload has one (it is the
// last, w<Workers>).
func (s *Scenario) Processes() int {
	if s.Workload == WorkloadQueue && s.Queue != nil && s.Queue.Reaper != nil {
		return s.Workers + 1
	}
	return s.Workers
}

// The ways of asking for a lock.
const (
	AcquireTry  = "try"
	AcquireWait = "wait"
)

// What a worker does with its client after an error of unknown outcome.
const (
	OnErrorCrash      = "crash"
	OnErrorKeepClient = "keep-client"
)

// Nemesis is the fault schedule: scripted steps and, when Random is set, a
// seeded random schedule. Before a run the random spec is expanded with the
// run's seed and merged with the steps (nemesis.Resolve); the resolved
// scenario stored with the run holds the exact steps and no random spec, so
// replaying it repeats the faults exactly.
type Nemesis struct {
	Steps  nemesis.Schedule    `yaml:"steps,omitempty"`
	Random *nemesis.RandomSpec `yaml:"random,omitempty"`
}

// The resource modes: the harness's register accepting every write, the
// harness's register refusing lower tokens, or a register kept in the locked
// system itself with the write guarded by the lease in the same statement or
// transaction (for the algorithms that implement clients.GuardedResource).
const (
	Unfenced = "unfenced"
	Fenced   = "fenced"
	Guarded  = "guarded"
)

// The defaults applied by Normalize.
const (
	DefaultQuiet = 2 * time.Second
	DefaultThink = 5 * time.Millisecond
)

// Normalize fills in defaults: one key "k", unfenced resource, one node, the
// default quiet period and think time.
func (s *Scenario) Normalize() {
	if len(s.Lock.Keys) == 0 {
		s.Lock.Keys = []string{"k"}
	}
	if s.Resource == "" {
		s.Resource = Unfenced
	}
	if s.System.Nodes == 0 {
		s.System.Nodes = 1
	}
	if s.Quiet == 0 {
		s.Quiet = DefaultQuiet
	}
	if s.Think == 0 {
		s.Think = DefaultThink
	}
	if s.Expect.Verdict == "" {
		s.Expect.Verdict = checker.Valid
	}
	if s.Workload == "" {
		s.Workload = WorkloadLock
	}
	if s.Workload == WorkloadQueue {
		if s.Queue == nil {
			s.Queue = &QueueSpec{}
		}
		if s.Queue.Tasks == 0 {
			s.Queue.Tasks = DefaultQueueTasks
		}
		if s.Queue.Queues == 0 {
			s.Queue.Queues = 1
		}
		if s.Queue.Limit == 0 {
			s.Queue.Limit = DefaultQueueLimit
		}
	}
}

// HasTag reports whether the scenario carries tag.
func (s *Scenario) HasTag(tag string) bool { return slices.Contains(s.Tags, tag) }

// Names lists what the validation accepts; the runner supplies the real
// lists (algorithm names from clients, fault names from nemesis) and the
// checks that need the cluster's layout or an algorithm's options, so that
// this package depends on names only.
type Names struct {
	Algorithms []string
	// QueueAlgorithms are the implementations the queue workload accepts.
	QueueAlgorithms []string
	Systems         []string
	Faults          []string
	// Nodes returns the nodes, by name and role, that the cluster of a
	// system, topology and node count will have (cluster.Layout), or why
	// there can be no such cluster; fault targets are checked against them
	// before any server starts. Nil skips those checks.
	Nodes func(system, topology string, nodes int) ([]cluster.Node, error)
	// LockOptions checks the lock options of an algorithm or a queue
	// implementation, names and values, as its factory will
	// (clients.CheckOptions). Nil skips that check.
	LockOptions func(algorithm string, options map[string]string) error
	// AlgorithmSystems are the systems the algorithms and queue
	// implementations run on, by name (their declarations' System): one of
	// Systems, or AnySystem for one that runs on whichever the scenario
	// starts. A scenario whose lock runs on another system than its own is
	// refused. An algorithm it does not name is not checked; nil checks
	// none.
	AlgorithmSystems map[string]string
}

// AnySystem is the system of an algorithm that runs on whichever system the
// scenario starts (an external client's), as the algorithms declare it.
const AnySystem = "any"

// Parse decodes and validates a scenario from data read from file. A file
// beyond its bounds (CheckFile), unknown fields, unknown names, sizes and
// durations beyond their bounds (CheckBounds) and impossible values are
// errors that name the file, the line and what is allowed; they wrap
// ErrInvalid.
func Parse(data []byte, file string, names Names) (*Scenario, error) {
	if err := CheckFile(data, file); err != nil {
		return nil, err
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("%w: %s: %s", ErrInvalid, file, yamlMessage(err))
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var s Scenario
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%w: %s: %s", ErrInvalid, file, yamlMessage(err))
	}
	s.File = file
	s.root = &root
	if err := s.validate(&root, names); err != nil {
		return nil, err
	}
	s.Normalize()
	if err := s.CheckRun(names); err != nil {
		return nil, err
	}
	return &s, nil
}

// CheckRun checks what the scenario asks of the cluster and the lock it
// will run against, with the values it has now (a run may override the
// number of workers), before any server starts: the tcp settings against
// the kernel's bounds, the system's topology and node count, every fault
// target against the cluster's nodes and the workers
// (nemesis.CheckTargets), and the lock options against the algorithm. Errors name the file and, for a scenario read from a file, the
// line; they wrap ErrInvalid. Parse calls it; a runner calls it again after
// its overrides.
func (s *Scenario) CheckRun(names Names) error {
	root := s.root
	if root == nil {
		root = &yaml.Node{}
	}
	fail := s.failer(root)
	if hint, field := s.TCP.check(func(f string) bool { return hasKey(root, "tcp", f) }); hint != "" {
		return fail(hint, "tcp", field)
	}
	if names.LockOptions != nil && len(s.Lock.Options) > 0 {
		if err := names.LockOptions(s.Lock.Algorithm, s.Lock.Options); err != nil {
			return fail(err.Error(), "lock", "options")
		}
	}
	if names.Nodes == nil {
		return nil
	}
	nodes, err := names.Nodes(s.System.Name, s.System.Topology, s.System.Nodes)
	if err != nil {
		path := []string{"system", "topology"}
		if s.System.Topology == "" {
			path = []string{"system", "nodes"}
		}
		return fail(err.Error(), path...)
	}
	for i, st := range s.Nemesis.Steps {
		if err := nemesis.CheckTargets(st, nodes, s.Processes()); err != nil {
			return fail(fmt.Sprintf("%v (the cluster's nodes: %s; workers: w0..w%d)", err, nodeList(nodes), s.Processes()-1), "nemesis", "steps", fmt.Sprint(i), "targets")
		}
	}
	if r := s.Nemesis.Random; r != nil {
		if err := r.CheckTargets(nodes, s.Processes()); err != nil {
			return fail(fmt.Sprintf("%v (the cluster's nodes: %s; workers: w0..w%d)", err, nodeList(nodes), s.Processes()-1), "nemesis", "random")
		}
	}
	return nil
}

// nodeList names nodes with their roles: "n1 (primary), n2 (replica)".
func nodeList(nodes []cluster.Node) string {
	var out []string
	for _, n := range nodes {
		if n.Role != "" {
			out = append(out, fmt.Sprintf("%s (%s)", n.Name, n.Role))
			continue
		}
		out = append(out, n.Name)
	}
	return strings.Join(out, ", ")
}

// failer returns the scenario's error maker: the file, the line of the field
// at path in root when there is one, the path and the hint.
func (s *Scenario) failer(root *yaml.Node) func(hint string, path ...string) error {
	return func(hint string, path ...string) error {
		line := lineOf(root, path...)
		where := s.File
		if line > 0 {
			where = fmt.Sprintf("%s:%d", s.File, line)
		}
		return fmt.Errorf("%w: %s: %s: %s", ErrInvalid, where, strings.Join(path, "."), hint)
	}
}

// yamlMessage turns yaml.v3's "yaml: line 3: ..." into "line 3: ...".
func yamlMessage(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = strings.TrimPrefix(msg, "unmarshal errors:\n  ")
	return strings.ReplaceAll(msg, "\n  ", "; ")
}

// validate checks names and values; errors carry the line of the offending
// field found in root.
func (s *Scenario) validate(root *yaml.Node, names Names) error {
	if err := s.CheckBounds(); err != nil {
		return err
	}
	fail := s.failer(root)
	switch {
	case s.Name == "":
		return fail("missing; give the scenario a name", "name")
	case !slices.Contains(names.Systems, s.System.Name):
		return fail(fmt.Sprintf("unknown system %q (known: %s)", s.System.Name, strings.Join(names.Systems, ", ")), "system", "name")
	case s.System.Nodes < 0:
		return fail("must be at least 1", "system", "nodes")
	case s.Workload != "" && s.Workload != WorkloadLock && s.Workload != WorkloadQueue:
		return fail(fmt.Sprintf("unknown workload %q (known: %s, %s)", s.Workload, WorkloadLock, WorkloadQueue), "workload")
	case s.Workload != WorkloadQueue && s.Queue != nil:
		return fail("is only for workload: queue", "queue")
	case s.Workload == WorkloadQueue && !slices.Contains(names.QueueAlgorithms, s.Lock.Algorithm):
		return fail(fmt.Sprintf("unknown queue implementation %q (known: %s)", s.Lock.Algorithm, strings.Join(names.QueueAlgorithms, ", ")), "lock", "algorithm")
	case s.Lock.Own && s.Workload == WorkloadQueue:
		return fail("is only for the lock workload", "lock", "own")
	case s.Lock.Own && s.Lock.Algorithm == "":
		return fail("missing: give the name of your own lock", "lock", "algorithm")
	case s.Lock.Own && slices.Contains(names.Algorithms, s.Lock.Algorithm):
		return fail(fmt.Sprintf("%q is a built-in algorithm's name; give your own lock a name of its own", s.Lock.Algorithm), "lock", "algorithm")
	case s.Workload != WorkloadQueue && !s.Lock.Own && s.Lock.Algorithm != "" && !slices.Contains(names.Algorithms, s.Lock.Algorithm):
		return fail(fmt.Sprintf("unknown algorithm %q (known: %s; a Go Locker of your own: leave it out, or set lock.own)", s.Lock.Algorithm, strings.Join(names.Algorithms, ", ")), "lock", "algorithm")
	case !s.Lock.Own && runsElsewhere(names.AlgorithmSystems[s.Lock.Algorithm], s.System.Name):
		return fail(fmt.Sprintf("%q runs on %s, not on the scenario's system %s", s.Lock.Algorithm, names.AlgorithmSystems[s.Lock.Algorithm], s.System.Name), "lock", "algorithm")
	case s.Lock.TTL <= 0:
		return fail("must be a positive duration such as 2s", "lock", "ttl")
	case s.Lock.Drift < 0 || s.Lock.Drift >= s.Lock.TTL:
		return fail("must be at least 0 and less than the ttl", "lock", "drift")
	case s.Lock.Renew < 0 || s.Lock.Renew >= s.Lock.TTL && s.Lock.Renew > 0:
		return fail("must be at least 0 and less than the ttl (a watchdog renews every ttl/3)", "lock", "renew")
	case s.Lock.Acquire != "" && s.Lock.Acquire != AcquireTry && s.Lock.Acquire != AcquireWait:
		return fail(fmt.Sprintf("unknown way %q (known: %s, %s)", s.Lock.Acquire, AcquireTry, AcquireWait), "lock", "acquire")
	case s.Lock.Acquire == AcquireWait && s.Lock.Wait <= 0:
		return fail("must be a positive duration with acquire: wait", "lock", "wait")
	case s.Lock.Acquire != AcquireWait && s.Lock.Wait != 0:
		return fail("is only for acquire: wait", "lock", "wait")
	case s.Lock.OnError != "" && s.Lock.OnError != OnErrorCrash && s.Lock.OnError != OnErrorKeepClient:
		return fail(fmt.Sprintf("unknown choice %q (known: %s, %s)", s.Lock.OnError, OnErrorCrash, OnErrorKeepClient), "lock", "on-error")
	case s.Resource != "" && s.Resource != Unfenced && s.Resource != Fenced && s.Resource != Guarded:
		return fail(fmt.Sprintf("unknown mode %q (known: %s, %s, %s)", s.Resource, Unfenced, Fenced, Guarded), "resource")
	case s.Workers < 1:
		return fail("must be at least 1", "workers")
	case s.Duration <= 0:
		return fail("must be a positive duration such as 10s", "duration")
	case s.Quiet < 0:
		return fail("must not be negative", "quiet")
	case s.Think < 0:
		return fail("must not be negative", "think")
	case s.Hold < 0:
		return fail("must not be negative", "hold")
	}
	if q := s.Queue; q != nil {
		if hint, path := q.check(); hint != "" {
			return fail(hint, append([]string{"queue"}, path...)...)
		}
	}
	switch s.Expect.Verdict {
	case "", checker.Valid, checker.Invalid, checker.Unknown:
	default:
		return fail(fmt.Sprintf("unknown verdict %q (known: valid, invalid, unknown)", s.Expect.Verdict), "expect", "verdict")
	}
	if s.Expect.Liveness != "" && !slices.Contains(checker.LivenessExpectations(), s.Expect.Liveness) {
		return fail(fmt.Sprintf("unknown liveness %q (known: %s)", s.Expect.Liveness, strings.Join(checker.LivenessExpectations(), ", ")), "expect", "liveness")
	}
	for field, kinds := range map[string][]string{"anomalies": s.Expect.Anomalies, "absent": s.Expect.Absent} {
		for i, k := range kinds {
			if !slices.Contains(checker.Kinds(), k) {
				return fail(fmt.Sprintf("unknown anomaly kind %q (known: %s)", k, strings.Join(checker.Kinds(), ", ")), "expect", field, fmt.Sprint(i))
			}
		}
	}
	return s.validateNemesis(fail, names)
}

// runsElsewhere reports whether an algorithm that runs on system algorithm
// (Names.AlgorithmSystems; empty when undeclared) cannot run on system.
func runsElsewhere(algorithm, system string) bool {
	return algorithm != "" && algorithm != AnySystem && algorithm != system
}

// validateNemesis checks the fault schedule's names and values: each step
// against its fault and the system, the random spec against the faults.
func (s *Scenario) validateNemesis(fail func(hint string, path ...string) error, names Names) error {
	for i, st := range s.Nemesis.Steps {
		idx := fmt.Sprint(i)
		if st.Fault != "heal" && st.Fault != "heal-all" && !slices.Contains(names.Faults, st.Fault) {
			return fail(fmt.Sprintf("unknown fault %q (known: %s, heal, heal-all)", st.Fault, strings.Join(names.Faults, ", ")), "nemesis", "steps", idx, "fault")
		}
		if st.At < 0 || st.At > s.Duration {
			return fail(fmt.Sprintf("must be between 0 and the duration %v", s.Duration), "nemesis", "steps", idx, "at")
		}
		if st.Duration < 0 {
			return fail("must not be negative", "nemesis", "steps", idx, "duration")
		}
		if st.Point != "" && !slices.Contains(nemesis.PausePoints, st.Point) {
			return fail(fmt.Sprintf("unknown pause point %q (known: %s)", st.Point, strings.Join(nemesis.PausePoints, ", ")), "nemesis", "steps", idx, "point")
		}
		if err := nemesis.CheckStep(st); err != nil {
			return fail(err.Error(), "nemesis", "steps", idx)
		}
		if err := nemesis.CheckSystem(st, s.System.Name); err != nil {
			return fail(err.Error()+"; a step that expects its failure runs (expect-failure: true)", "nemesis", "steps", idx, "fault")
		}
	}
	if r := s.Nemesis.Random; r != nil {
		if err := r.Validate(names.Faults); err != nil {
			return randomFail(fail, err)
		}
		for i, f := range r.Faults {
			if err := nemesis.CheckSystem(nemesis.Step{Fault: f}, s.System.Name); err != nil {
				return fail(err.Error(), "nemesis", "random", "faults", fmt.Sprint(i))
			}
		}
	}
	return nil
}

// hasKey reports whether root has the mapping key at path below the
// document root.
func hasKey(root *yaml.Node, path ...string) bool {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	for _, p := range path {
		var next *yaml.Node
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == p {
					next = n.Content[i+1]
				}
			}
		}
		if next == nil {
			return false
		}
		n = next
	}
	return true
}

// lineOf returns the line of the node at path (mapping keys, or sequence
// indexes as decimal strings) below the document root, or of the deepest
// node of path that exists; 0 when nothing matches.
func lineOf(root *yaml.Node, path ...string) int {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := 0
	for _, p := range path {
		var next *yaml.Node
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == p {
					line = n.Content[i].Line
					next = n.Content[i+1]
				}
			}
		case yaml.SequenceNode:
			var idx int
			if _, err := fmt.Sscan(p, &idx); err == nil && idx >= 0 && idx < len(n.Content) {
				next = n.Content[idx]
				line = next.Line
			}
		}
		if next == nil {
			return line
		}
		n = next
	}
	return line
}

// Marshal encodes s as YAML (the resolved scenario written into the store).
func Marshal(s *Scenario) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(s); err != nil {
		return nil, fmt.Errorf("scenarios: encoding %s: %w", s.Name, err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("scenarios: encoding %s: %w", s.Name, err)
	}
	return buf.Bytes(), nil
}

// Load finds a scenario by catalog name, by file path, or by run directory
// (whose scenario.yaml is replayed exactly).
func Load(nameOrPath string, names Names) (*Scenario, error) {
	if st, err := os.Stat(nameOrPath); err == nil {
		path := nameOrPath
		if st.IsDir() {
			path = filepath.Join(nameOrPath, "scenario.yaml")
		}
		data, err := readFile(path)
		if err != nil {
			return nil, err
		}
		return Parse(data, path, names)
	}
	cat, err := Catalog(names)
	if err != nil {
		return nil, err
	}
	for _, s := range cat {
		if s.Name == nameOrPath {
			return s, nil
		}
	}
	var known []string
	for _, s := range cat {
		known = append(known, s.Name)
	}
	return nil, fmt.Errorf("%w %q: neither a file nor a catalog name (known: %s)", ErrUnknownScenario, nameOrPath, strings.Join(known, ", "))
}
