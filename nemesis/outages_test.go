package nemesis

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// stoppableCluster is a bareCluster that pretends to kill, start, pause and
// resume its nodes, and fails to act on the nodes named in fail.
type stoppableCluster struct {
	bareCluster
	mu   sync.Mutex
	fail map[string]bool
	acts []string // "kill n3", "start n3", ...
}

func (c *stoppableCluster) act(what, node string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail[node] {
		return errors.New("cannot " + what + " " + node)
	}
	c.acts = append(c.acts, what+" "+node)
	return nil
}

func (c *stoppableCluster) Kill(_ context.Context, n string) error   { return c.act("kill", n) }
func (c *stoppableCluster) Start(_ context.Context, n string) error  { return c.act("start", n) }
func (c *stoppableCluster) Pause(_ context.Context, n string) error  { return c.act("pause", n) }
func (c *stoppableCluster) Resume(_ context.Context, n string) error { return c.act("resume", n) }

// outageEnv returns an Env over a fake cluster of nodes, with links from
// two workers to every server node through which nothing ever connects.
func outageEnv(t *testing.T, nodes []cluster.Node, fail ...string) (*Env, *history.Recorder) {
	t.Helper()
	nw, err := cluster.NewNetwork(linknet.WithProxies()) // latency needs proxies
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nw.Close() })
	for _, n := range serverNodes(nodes) {
		for _, w := range []string{"w0", "w1"} {
			// Nothing listens upstream: no connection is ever made here.
			if _, err := nw.Link(linknet.Name(w, n.Name), "127.0.0.1:9"); err != nil {
				t.Fatal(err)
			}
		}
	}
	c := &stoppableCluster{bareCluster: bareCluster{system: cluster.Redis, nodes: nodes}, fail: map[string]bool{}}
	for _, n := range fail {
		c.fail[n] = true
	}
	rec := history.NewRecorder()
	return &Env{Cluster: c, Network: nw, Workers: &quietWorkers{n: 2}, Recorder: rec}, rec
}

// nemesisTrail returns the nemesis ops of rec, each as its f, with the down
// nodes of an availability record: "kill", "availability 5 n3,n4"; a fault
// or heal that failed is marked "failed" ("start failed"), a fault that took
// effect in part "partly" ("pause partly").
func nemesisTrail(t *testing.T, rec *history.Recorder) []string {
	t.Helper()
	var out []string
	for _, op := range rec.History() {
		if !op.IsAvailability() {
			switch {
			case op.Type == history.Fail && op.Error != "":
				out = append(out, op.F+" failed")
			case op.Type == history.Info && op.Error != "":
				out = append(out, op.F+" partly")
			case op.Type == history.Info:
				out = append(out, op.F)
			default:
				t.Fatalf("nemesis op %+v is neither an info nor a fail with its error", op)
			}
			continue
		}
		a, ok := history.AvailabilityOf(op)
		if !ok {
			t.Fatalf("availability record %s does not decode", op.Value)
		}
		out = append(out, strings.TrimSpace("availability "+strconv.Itoa(a.Nodes)+" "+strings.Join(a.Down, ",")))
	}
	return out
}

// TestAvailabilityRecords checks the availability records and fault ops
// that each sequence of injections and heals leaves: a node down from just
// before the fault that takes it down acts until every fault that keeps it
// down is healed, and never a node a fault failed to act on.
func TestAvailabilityRecords(t *testing.T) {
	ctx := context.Background()
	for _, tc := range outageCases() {
		t.Run(tc.name, func(t *testing.T) {
			env, rec := outageEnv(t, tc.nodes, tc.fail...)
			r := NewRunner(env)
			playOutage(t, r, tc.actions, len(tc.fail) > 0)
			if tc.healAll {
				if err := r.HealAll(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if got := nemesisTrail(t, rec); !slices.Equal(got, tc.want) {
				t.Fatalf("nemesis ops\n%q\nwant\n%q", got, tc.want)
			}
			if a := env.Availability(); len(a.Down) != 0 {
				t.Fatalf("after every heal %v are still down", a.Down)
			}
		})
	}

	t.Run("a node that fails to start stays down", nodeFailingToStart)
}

// nodeFailingToStart checks that a node whose start fails at the heal of its
// kill stays down, and that the failed heal is reported.
func nodeFailingToStart(t *testing.T) {
	ctx := context.Background()
	env, rec := outageEnv(t, fiveMasters())
	r := NewRunner(env)
	act, err := r.inject(ctx, Step{Fault: "kill", Targets: []string{"n3", "n4"}})
	if err != nil {
		t.Fatal(err)
	}
	env.Cluster.(*stoppableCluster).fail["n4"] = true
	if err := r.heal(ctx, act); err == nil {
		t.Fatal("the heal of a node that cannot start returned no error")
	}
	want := []string{"availability 5 n3,n4", "kill", "availability 5 n4", "start failed"}
	if got := nemesisTrail(t, rec); !slices.Equal(got, want) {
		t.Fatalf("nemesis ops %q, want %q", got, want)
	}
	if a := env.Availability(); !slices.Equal(a.Down, []string{"n4"}) || !a.Majority() {
		t.Fatalf("availability %+v, want n4 down and a majority up", a)
	}
	var fe *FailedError
	if failed := r.Failed(); len(failed) != 1 || !errors.As(failed[0], &fe) || !fe.Heal || fe.Step.Fault != "kill" {
		t.Fatalf("Failed() = %v, want the failed heal of the kill", failed)
	}
}

// outageAction is an action of an outage case: a step injected, or the heal
// of the n-th injected step (from 1) when the step is zero.
type outageAction struct {
	step Step
	heal int
}

// outageInject is the action that injects fault on targets.
func outageInject(fault string, targets ...string) outageAction {
	return outageAction{step: Step{Fault: fault, Targets: targets}}
}

// outageHeal is the action that heals the n-th injected step.
func outageHeal(n int) outageAction { return outageAction{heal: n} }

// outageCase is a case of TestAvailabilityRecords: the actions on nodes
// (whose names in fail the cluster fails to act on), a final heal-all or
// not, and the nemesis ops they leave.
type outageCase struct {
	name    string
	nodes   []cluster.Node
	fail    []string
	actions []outageAction
	healAll bool
	want    []string
}

// outageCases are TestAvailabilityRecords' cases.
func outageCases() []outageCase {
	return []outageCase{
		{"a kill takes the node down before it acts and brings it back after the start",
			fiveMasters(), nil, []outageAction{outageInject("kill", "n3"), outageHeal(1)}, false,
			[]string{"availability 5 n3", "kill", "availability 5", "start"}},
		{"a node killed and partitioned stays down until both are healed",
			fiveMasters(), nil, []outageAction{outageInject("kill", "n3"), outageInject("partition", "n3"), outageHeal(1), outageHeal(2)}, false,
			[]string{"availability 5 n3", "kill", "partition", "start", "availability 5", "heal"}},
		{"healing the partition first keeps the killed node down",
			fiveMasters(), nil, []outageAction{outageInject("kill", "n3"), outageInject("partition", "n3"), outageHeal(2), outageHeal(1)}, false,
			[]string{"availability 5 n3", "kill", "partition", "heal", "availability 5", "start"}},
		{"overlapping kills and pauses count each node once",
			fiveMasters(), nil, []outageAction{outageInject("kill", "n1", "n2"), outageInject("pause", "n2", "n3"), outageHeal(1), outageHeal(2)}, false,
			[]string{"availability 5 n1,n2", "kill", "availability 5 n1,n2,n3", "pause", "availability 5 n2,n3", "start", "availability 5", "resume"}},
		{"latency and clock faults make no node unavailable",
			fiveMasters(), nil, []outageAction{outageInject("latency", "n1"), outageInject("client-clock", "w0")}, true,
			[]string{"latency", "client-clock", "client-clock-reset", "heal"}},
		{"a reset cuts the node off like a partition",
			fiveMasters(), nil, []outageAction{outageInject("reset", "n4"), outageHeal(1)}, false,
			[]string{"availability 5 n4", "reset", "availability 5", "heal"}},
		{"a worker partition makes the nodes it loses unavailable",
			fiveMasters(), nil, []outageAction{{step: Step{Fault: "partition", Targets: []string{"w0"}, Options: map[string]string{"nodes": "n1,n2"}}}, outageHeal(1)}, false,
			[]string{"availability 5 n1,n2", "partition", "availability 5", "heal"}},
		{"halves with workers on both sides cut every node off from some worker",
			fiveMasters(), nil, []outageAction{outageInject("partition", TargetHalves)}, true,
			[]string{"availability 5 n1,n2,n3,n4,n5", "partition", "availability 5", "heal"}},
		{"sentinels are not server nodes",
			sentinelTopology(), nil, []outageAction{outageInject("kill", "s1"), outageInject("kill", "n1"), outageHeal(2), outageHeal(1)}, false,
			[]string{"kill", "availability 3 n1", "kill", "availability 3", "start", "start"}},
		{"a node the fault failed to act on is never recorded down",
			fiveMasters(), []string{"n2"}, []outageAction{outageInject("pause", "n1", "n2"), outageHeal(1)}, false,
			[]string{"availability 5 n1", "pause partly", "availability 5", "resume"}},
		{"a kill that failed on every node takes nothing down and is not healed",
			fiveMasters(), []string{"n2"}, []outageAction{outageInject("kill", "n2")}, true,
			[]string{"kill failed"}},
		{"a pause that failed is recorded as failed, and the next fault as usual",
			fiveMasters(), []string{"n1"}, []outageAction{outageInject("pause", "n1"), outageInject("kill", "n3"), outageHeal(2)}, false,
			[]string{"pause failed", "availability 5 n3", "kill", "availability 5", "start"}},
		{"heal-all ends every outage",
			fiveMasters(), nil, []outageAction{outageInject("partition", "n5"), outageInject("kill", "n1")}, true,
			[]string{"availability 5 n5", "partition", "availability 5 n1,n5", "kill", "availability 5 n5", "start", "availability 5", "heal"}},
	}
}

// playOutage performs actions with r; an injection may fail when failing.
func playOutage(t *testing.T, r *Runner, actions []outageAction, failing bool) {
	t.Helper()
	ctx := context.Background()
	var injected []*active
	for _, a := range actions {
		if a.heal > 0 {
			if injected[a.heal-1] == nil {
				t.Fatalf("step %d took no effect: nothing to heal", a.heal)
			}
			if err := r.heal(ctx, injected[a.heal-1]); err != nil {
				t.Fatal(err)
			}
			continue
		}
		act, err := r.inject(ctx, a.step)
		if err != nil && !failing {
			t.Fatalf("%s: %v", a.step, err)
		}
		injected = append(injected, act)
	}
}

// TestAvailabilityMajority checks the majority rule of an availability
// record: Nodes/2+1 of Nodes up.
func TestAvailabilityMajority(t *testing.T) {
	tests := []struct {
		nodes int
		down  []string
		want  bool
	}{
		{5, nil, true},
		{5, []string{"n1", "n2"}, true},
		{5, []string{"n1", "n2", "n3"}, false},
		{4, []string{"n1", "n2"}, false},
		{3, []string{"n1"}, true},
		{1, []string{"n1"}, false},
		{0, nil, false},
	}
	for _, tc := range tests {
		a := history.Availability{Nodes: tc.nodes, Down: tc.down}
		if got := a.Majority(); got != tc.want {
			t.Errorf("%d nodes, %v down: majority %v, want %v", tc.nodes, tc.down, got, tc.want)
		}
	}
}

// TestAvailabilityRecordTime checks that a record is stamped by the run's
// recorder like every other op: its time never goes backwards.
func TestAvailabilityRecordTime(t *testing.T) {
	env, rec := outageEnv(t, fiveMasters())
	r := NewRunner(env)
	if err := r.Run(context.Background(), time.Now(), Schedule{{At: 0, Fault: "kill", Targets: []string{"n1"}}}); err != nil {
		t.Fatal(err)
	}
	if err := r.HealAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := history.Validate(rec.History()); err != nil {
		t.Fatalf("the nemesis's history is not well-formed: %v", err)
	}
}

// slowStartCluster is a stoppableCluster whose starts take a while, as a
// node's restart does on a loaded machine; it notes when each begins and
// ends.
type slowStartCluster struct {
	*stoppableCluster
	startTakes time.Duration
}

func (c *slowStartCluster) Start(ctx context.Context, n string) error {
	c.note("start " + n + " begins")
	time.Sleep(c.startTakes)
	c.note("start " + n + " ends")
	return nil
}

func (c *slowStartCluster) Kill(ctx context.Context, n string) error {
	c.note("kill " + n)
	return nil
}

func (c *slowStartCluster) note(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.acts = append(c.acts, s)
}

// TestNemesisActsOneAtATime runs a schedule whose second kill of a node is
// due while the heal of its first (the node's start) is still going on, as
// a random schedule can draw it: like Jepsen's nemesis, the runner carries
// out one fault or heal at a time, so the second kill waits for the start
// to end instead of killing the node as it starts (which made the start
// fail and the run's verdict unknown), and every heal took effect.
func TestNemesisActsOneAtATime(t *testing.T) {
	env, rec := outageEnv(t, fiveMasters())
	c := &slowStartCluster{stoppableCluster: env.Cluster.(*stoppableCluster), startTakes: 150 * time.Millisecond}
	env.Cluster = c
	r := NewRunner(env)
	schedule := Schedule{
		{At: 0, Fault: "kill", Targets: []string{"n3"}, Duration: 20 * time.Millisecond},
		{At: 60 * time.Millisecond, Fault: "kill", Targets: []string{"n3"}, Duration: 20 * time.Millisecond},
	}
	if err := r.Run(context.Background(), time.Now(), schedule); err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := []string{"kill n3", "start n3 begins", "start n3 ends", "kill n3", "start n3 begins", "start n3 ends"}
	if !slices.Equal(c.acts, want) {
		t.Errorf("the cluster saw %q, want %q: a fault acted while a heal was acting", c.acts, want)
	}
	trail := nemesisTrail(t, rec)
	if slices.Contains(trail, "start failed") {
		t.Errorf("nemesis ops %q: a heal failed", trail)
	}
}
