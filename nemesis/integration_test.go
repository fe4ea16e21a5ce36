package nemesis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
	"github.com/jepsen-lite/jepsen-lite/cluster/local"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// The local cluster lets the failover heal rejoin the old primary itself.
var _ Follower = (*local.Cluster)(nil)

// quietWorkers is a Workers for runs whose workers are driven by the test.
type quietWorkers struct {
	n      int
	mu     sync.Mutex
	clocks map[int]time.Duration
}

func (w *quietWorkers) Count() int                                     { return w.n }
func (w *quietWorkers) PauseAt(int, string, time.Duration, bool) error { return nil }
func (w *quietWorkers) SetClockOffset(i int, off time.Duration) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.clocks == nil {
		w.clocks = map[int]time.Duration{}
	}
	w.clocks[i] = off
	return nil
}

// testRun is a started cluster with its network, worker links and a
// nemesis Runner recording into rec.
type testRun struct {
	c      *local.Cluster
	net    *linknet.Network
	env    *Env
	rec    *history.Recorder
	runner *Runner
}

// startRun starts a local cluster for spec with links "wX->nY" for workers
// workers, the way the runner wires a run (opts: WithProxies for latency).
// Everything is torn down in t.Cleanup, after a final HealAll.
func startRun(t *testing.T, spec cluster.Spec, workers int, opts ...linknet.Option) *testRun {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not installed")
	}
	nw, err := cluster.NewNetwork(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nw.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if spec.LogDir == "" {
		spec.LogDir = t.TempDir()
	}
	c, err := local.Start(ctx, spec, nw)
	if err != nil {
		t.Fatalf("starting %s/%s: %v", spec.System, spec.Topology, err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("closing the cluster: %v", err)
		}
	})
	for w := range workers {
		for _, n := range c.Nodes() {
			if n.Role == "sentinel" {
				continue
			}
			if _, err := nw.Link(linknet.Name(workerName(w), n.Name), n.Addr); err != nil {
				t.Fatal(err)
			}
		}
	}
	rec := history.NewRecorder()
	env := &Env{Cluster: c, Network: nw, Workers: &quietWorkers{n: workers}, Recorder: rec, Rand: rand.New(rand.NewPCG(1, 2))}
	tr := &testRun{c: c, net: nw, env: env, rec: rec, runner: NewRunner(env)}
	t.Cleanup(func() {
		if err := tr.runner.HealAll(context.Background()); err != nil {
			t.Errorf("final HealAll: %v", err)
		}
	})
	return tr
}

// run executes the steps (all at once, from now) and fails on an error.
func (tr *testRun) run(t *testing.T, steps ...Step) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tr.runner.Run(ctx, time.Now(), steps); err != nil {
		t.Fatalf("nemesis: %v", err)
	}
}

func (tr *testRun) healAll(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tr.runner.HealAll(ctx); err != nil {
		t.Fatalf("HealAll: %v", err)
	}
	if f := tr.net.Faulty(); len(f) > 0 {
		t.Fatalf("links %v still carry faults after HealAll", f)
	}
}

// client returns a go-redis client on addr that does not retry, with short
// timeouts, closed in t.Cleanup.
func client(t *testing.T, addr string, timeout time.Duration) *redis.Client {
	c := redis.NewClient(&redis.Options{
		Addr: addr, DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout,
		MaxRetries: -1, DisableIdentity: true, PoolSize: 2,
	})
	t.Cleanup(func() { c.Close() })
	return c
}

// worker returns worker w's client to node through its proxy.
func (tr *testRun) worker(t *testing.T, w int, node string) *redis.Client {
	addr := tr.net.Addr(linknet.Name(workerName(w), node))
	if addr == "" {
		t.Fatalf("no link %s->%s", workerName(w), node)
	}
	return client(t, addr, 300*time.Millisecond)
}

// direct returns a client to node's own address, bypassing the proxies.
func (tr *testRun) direct(t *testing.T, node string) *redis.Client {
	for _, n := range tr.c.Nodes() {
		if n.Name == node {
			return client(t, n.Addr, 2*time.Second)
		}
	}
	t.Fatalf("no node %s", node)
	return nil
}

// outcome classifies a SET NX the way the history does: ok (acquired),
// fail (held by someone else), info (unknown: timeout, lost connection).
func outcome(ok bool, err error) history.Type {
	switch {
	case err == nil && ok:
		return history.OK
	case err == nil || errors.Is(err, redis.Nil):
		return history.Fail
	default:
		return history.Info
	}
}

func acquire(c *redis.Client, key, owner string, ttl time.Duration) (history.Type, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	ok, err := c.SetNX(ctx, key, owner, ttl).Result()
	return outcome(ok, err), err
}

// nemesisOps returns the nemesis ops recorded with f, their values decoded.
func (tr *testRun) nemesisOps(t *testing.T, f string) []map[string]any {
	var out []map[string]any
	for _, op := range tr.rec.History() {
		if op.Process != history.NemesisProcess || op.F != f {
			continue
		}
		var v map[string]any
		if err := json.Unmarshal(op.Value, &v); err != nil {
			t.Fatalf("nemesis op %s value %s: %v", f, op.Value, err)
		}
		if op.Error != "" {
			v["error"] = op.Error
		}
		out = append(out, v)
	}
	return out
}

func TestPartitionedWorkerEndsInfoAndRecovers(t *testing.T) {
	tr := startRun(t, cluster.Spec{System: cluster.Redis, Nodes: 1}, 2)
	w0, w1 := tr.worker(t, 0, "n1"), tr.worker(t, 1, "n1")
	if got, err := acquire(w0, "before", "w0", time.Minute); got != history.OK {
		t.Fatalf("w0 acquire before the partition: %v %v", got, err)
	}

	tr.run(t, Step{Fault: "partition", Targets: []string{"w0"}})
	if got, err := acquire(w0, "k", "w0", time.Minute); got != history.Info {
		t.Fatalf("partitioned w0's acquire ended %v (%v), want info", got, err)
	}
	if got, err := acquire(w1, "k", "w1", time.Minute); got != history.OK {
		t.Fatalf("unpartitioned w1's acquire ended %v (%v), want ok", got, err)
	}

	tr.healAll(t)
	if got, err := acquire(w0, "k", "w0", time.Minute); got != history.Fail {
		t.Fatalf("w0's acquire after heal ended %v (%v), want fail: w1 holds k", got, err)
	}
	if got, err := acquire(w0, "k2", "w0", time.Minute); got != history.OK {
		t.Fatalf("w0's acquire of a free key after heal ended %v (%v), want ok", got, err)
	}
	parts := tr.nemesisOps(t, "partition")
	if len(parts) != 1 || fmt.Sprint(parts[0]["workers"]) != "[0]" || fmt.Sprint(parts[0]["nodes"]) != "[n1]" {
		t.Fatalf("recorded partition %v, want workers [0] cut from nodes [n1]", parts)
	}
	if heals := tr.nemesisOps(t, "heal"); len(heals) != 1 {
		t.Fatalf("recorded heals %v, want one", heals)
	}
}

func TestClockBumpExpiresKeysOnOneNode(t *testing.T) {
	tr := startRun(t, cluster.Spec{System: cluster.Redis, Nodes: 3}, 1)
	if err := (Failover{}).Available(tr.env); !errors.Is(err, cluster.ErrUnavailable) {
		t.Fatalf("failover on independent masters: Available = %v, want cluster.ErrUnavailable", err)
	}
	ctx := context.Background()
	for _, n := range []string{"n1", "n2", "n3"} {
		if err := tr.direct(t, n).Set(ctx, "lock", "w0", 10*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
	}
	tr.run(t, Step{Fault: "clock-bump", Targets: []string{"n2"}, Offset: 20 * time.Second})
	for _, n := range []string{"n1", "n2", "n3"} {
		v, err := tr.direct(t, n).Get(ctx, "lock").Result()
		expired := errors.Is(err, redis.Nil)
		if err != nil && !expired {
			t.Fatal(err)
		}
		if want := n == "n2"; expired != want {
			t.Errorf("%s: key expired %v (value %q), want %v", n, expired, v, want)
		}
	}
	bumps := tr.nemesisOps(t, "clock-bump")
	if len(bumps) != 1 || bumps[0]["offset"] != "+20s" || fmt.Sprint(bumps[0]["nodes"]) != "[n2]" {
		t.Fatalf("recorded %v, want nodes [n2] offset +20s", bumps)
	}

	tr.healAll(t)
	if err := tr.direct(t, "n2").Set(ctx, "after", "x", 10*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if ttl, err := tr.direct(t, "n2").PTTL(ctx, "after").Result(); err != nil || ttl < 9*time.Second {
		t.Fatalf("after clock-reset a 10s key on n2 has ttl %v (%v): the clock was not reset", ttl, err)
	}
	if resets := tr.nemesisOps(t, "clock-reset"); len(resets) != 1 {
		t.Fatalf("recorded clock resets %v, want one", resets)
	}
}

func TestPausedNodeAnswersAfterResume(t *testing.T) {
	tr := startRun(t, cluster.Spec{System: cluster.Redis, Nodes: 1}, 1)
	tr.run(t, Step{Fault: "pause", Targets: []string{"n1"}})
	c := client(t, tr.net.Addr("w0->n1"), 10*time.Second)
	answered := make(chan error, 1)
	go func() {
		answered <- c.Set(context.Background(), "k", "v", 0).Err()
	}()
	select {
	case err := <-answered:
		t.Fatalf("a paused node answered (%v)", err)
	case <-time.After(500 * time.Millisecond):
	}
	tr.healAll(t)
	select {
	case err := <-answered:
		if err != nil {
			t.Fatalf("the command sent during the pause failed after resume: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the node did not answer after resume")
	}
	if r := tr.nemesisOps(t, "resume"); len(r) != 1 || fmt.Sprint(r[0]["nodes"]) != "[n1]" {
		t.Fatalf("recorded resumes %v, want one of [n1]", r)
	}
}

func TestKillKeepsTheKeyOnlyWithPersistence(t *testing.T) {
	for _, persistent := range []bool{false, true} {
		t.Run(fmt.Sprintf("persistence=%v", persistent), func(t *testing.T) {
			tr := startRun(t, cluster.Spec{System: cluster.Redis, Nodes: 1, Persistence: persistent}, 1)
			w0 := tr.worker(t, 0, "n1")
			if got, err := acquire(w0, "lock", "w0", time.Minute); got != history.OK {
				t.Fatalf("acquire: %v %v", got, err)
			}
			killed := time.Now()
			tr.run(t, Step{Fault: "kill", Targets: []string{"one"}, Options: map[string]string{"restart-after": "400ms"}})
			if got, _ := acquire(w0, "other", "w0", time.Minute); got == history.OK {
				t.Fatal("a killed node granted a lock")
			}
			tr.healAll(t)
			if d := time.Since(killed); d < 400*time.Millisecond {
				t.Fatalf("the node was back after %v, before restart-after 400ms", d)
			}
			v, err := tr.worker(t, 0, "n1").Get(context.Background(), "lock").Result()
			if err != nil && !errors.Is(err, redis.Nil) {
				t.Fatalf("GET after restart: %v", err)
			}
			if kept := v == "w0"; kept != persistent {
				t.Fatalf("after kill and start the lock key is %q; with persistence %v it should be kept: %v", v, persistent, persistent)
			}
			if s := tr.nemesisOps(t, "start"); len(s) != 1 || fmt.Sprint(s[0]["nodes"]) != "[n1]" {
				t.Fatalf("recorded starts %v, want one of [n1]", s)
			}
		})
	}
}

func TestFailoverLosesTheUnreplicatedLock(t *testing.T) {
	tr := startRun(t, cluster.Spec{System: cluster.Redis, Topology: cluster.TopologyPrimaryReplica, Nodes: 2}, 2)
	ctx := context.Background()
	// Replication works before the fault.
	if err := tr.worker(t, 1, "n1").Set(ctx, "warm", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the replica to copy a write", func() bool {
		v, _ := tr.direct(t, "n2").Get(ctx, "warm").Result()
		return v == "1"
	})
	// Replication stops (a partition of the node-to-node links); then w0
	// takes the lock on the primary; then the replica is promoted.
	tr.run(t, Step{Fault: "partition", Targets: []string{"primaries"}, Options: map[string]string{"links": "nodes"}})
	if got, err := acquire(tr.worker(t, 0, "n1"), "lock", "w0", time.Minute); got != history.OK {
		t.Fatalf("w0 acquire on the primary: %v %v", got, err)
	}
	tr.run(t, Step{Fault: "failover", Options: map[string]string{"lag": "100ms"}})

	if got, err := acquire(tr.worker(t, 1, "n1"), "lock", "w1", time.Minute); got != history.OK {
		t.Fatalf("w1 acquire after failover: %v %v, want ok on the promoted replica", got, err)
	}
	if v, _ := tr.direct(t, "n2").Get(ctx, "lock").Result(); v != "w1" {
		t.Fatalf("the promoted n2 holds lock=%q, want w1's", v)
	}
	if v, _ := tr.direct(t, "n1").Get(ctx, "lock").Result(); v != "w0" {
		t.Fatalf("the old primary n1 holds lock=%q, want w0's never-replicated value", v)
	}
	fo := tr.nemesisOps(t, "failover")
	if len(fo) != 1 || fo[0]["old"] != "n1" || fo[0]["new"] != "n2" || fo[0]["switched"] != float64(2) {
		t.Fatalf("recorded failover %v, want n1 -> n2 with 2 worker links switched", fo)
	}

	// The heal makes the old primary a replica of the new one.
	tr.healAll(t)
	waitFor(t, "the old primary to follow the new one", func() bool {
		v, _ := tr.direct(t, "n1").Get(ctx, "lock").Result()
		return v == "w1"
	})
	if got, _ := acquire(tr.worker(t, 0, "n1"), "lock", "w0", time.Minute); got != history.Fail {
		t.Fatalf("w0 acquire after the heal ended %v, want fail (w1 holds the lock on the new primary)", got)
	}

	// A second failover promotes the rejoined n1 again; the workers' links
	// to n2 as a node stay where they were.
	tr.run(t, Step{Fault: "failover"})
	fo = tr.nemesisOps(t, "failover")
	if len(fo) != 2 || fo[1]["old"] != "n2" || fo[1]["new"] != "n1" {
		t.Fatalf("recorded failovers %v, want a second one n2 -> n1", fo)
	}
	addr := map[string]string{}
	for _, n := range tr.c.Nodes() {
		addr[n.Name] = n.Addr
	}
	for _, l := range []string{"w0->n1", "w1->n1", "w0->n2"} {
		_, to, _ := linknet.SplitName(l)
		if got := tr.net.Upstream(l); got != addr[to] {
			t.Errorf("after failing back, link %s leads to %s, want %s's %s", l, got, to, addr[to])
		}
	}
	if got, err := acquire(tr.worker(t, 0, "n1"), "fresh", "w0", time.Minute); got != history.OK {
		t.Fatalf("acquire after failing back: %v %v", got, err)
	}
}

func TestSentinelFailoverSwitchesToTheElectedPrimary(t *testing.T) {
	if _, err := exec.LookPath("redis-sentinel"); err != nil {
		t.Skip("redis-sentinel is not installed")
	}
	tr := startRun(t, cluster.Spec{System: cluster.Redis, Topology: cluster.TopologySentinel, Nodes: 2}, 1)
	if err := (SentinelFailover{}).Available(tr.env); err != nil {
		t.Fatal(err)
	}
	tr.run(t, Step{Fault: "sentinel-failover", Options: map[string]string{"timeout": "20s"}})
	fo := tr.nemesisOps(t, "sentinel-failover")
	if len(fo) != 1 || fo[0]["old"] != "n1" || fo[0]["new"] != "n2" {
		t.Fatalf("recorded %v, want n1 -> n2", fo)
	}
	if got, err := acquire(tr.worker(t, 0, "n1"), "lock", "w0", time.Minute); got != history.OK {
		t.Fatalf("acquire through the switched link: %v %v", got, err)
	}
	if v, _ := tr.direct(t, "n2").Get(context.Background(), "lock").Result(); v != "w0" {
		t.Fatalf("the elected n2 holds lock=%q, want w0's", v)
	}
	tr.healAll(t)
	if err := tr.direct(t, "n1").Ping(context.Background()).Err(); err != nil {
		t.Fatalf("the old primary does not answer after the heal: %v", err)
	}
}

func TestHealAllAfterAnInterruptedRun(t *testing.T) {
	tr := startRun(t, cluster.Spec{System: cluster.Redis, Nodes: 3}, 1)
	ctx, cancel := context.WithCancel(context.Background())
	steps := Schedule{
		{At: 0, Fault: "partition", Targets: []string{"n1"}},
		{At: 0, Fault: "clock-strobe", Targets: []string{"n1"}, Offset: time.Hour, Options: map[string]string{"period": "50ms"}},
		{At: 0, Fault: "pause", Targets: []string{"n2"}},
		{At: 0, Fault: "kill", Targets: []string{"n3"}},
		{At: time.Minute, Fault: "latency", Targets: []string{"all"}}, // never reached
	}
	done := make(chan error, 1)
	go func() { done <- tr.runner.Run(ctx, time.Now(), steps) }()
	waitFor(t, "four active faults", func() bool { return len(tr.runner.Active()) == 4 })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	tr.healAll(t)
	if a := tr.runner.Active(); len(a) != 0 {
		t.Fatalf("faults still active after HealAll: %v", a)
	}
	for _, n := range []string{"n1", "n2", "n3"} {
		c := tr.worker(t, 0, n)
		if err := c.Set(context.Background(), "k", "v", 10*time.Second).Err(); err != nil {
			t.Fatalf("%s does not answer through its proxy after HealAll: %v", n, err)
		}
		if ttl, err := c.PTTL(context.Background(), "k").Result(); err != nil || ttl < 9*time.Second {
			t.Fatalf("%s: a 10s key has ttl %v (%v): the clock is still skewed", n, ttl, err)
		}
	}
	var healed []string
	for _, op := range tr.rec.History() {
		healed = append(healed, op.F)
	}
	for _, f := range []string{"heal", "clock-reset", "resume", "start"} {
		if !slices.Contains(healed, f) {
			t.Errorf("no %s recorded in %s", f, strings.Join(healed, " "))
		}
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestClockStrobeFlipsTheNodeClock(t *testing.T) {
	tr := startRun(t, cluster.Spec{System: cluster.Redis, Nodes: 1}, 1)
	c := tr.direct(t, "n1")
	skew := func() time.Duration {
		now, err := c.Time(context.Background()).Result()
		if err != nil {
			t.Fatal(err)
		}
		return time.Until(now).Round(time.Minute)
	}
	tr.run(t, Step{Fault: "clock-strobe", Targets: []string{"n1"}, Offset: time.Hour, Options: map[string]string{"period": "100ms"}})
	seen := map[time.Duration]int{}
	for range 25 {
		seen[skew()]++
		time.Sleep(30 * time.Millisecond)
	}
	if len(seen) != 2 || seen[0] == 0 || seen[time.Hour] == 0 {
		t.Fatalf("during the strobe n1's clock was off by %v, want both 0 and 1h", seen)
	}
	tr.healAll(t)
	time.Sleep(250 * time.Millisecond) // a strobe still running would flip by now
	if s := skew(); s != 0 {
		t.Fatalf("after the heal n1's clock is off by %v", s)
	}
}

func TestLatencySlowsOnlyTheTargetNode(t *testing.T) {
	tr := startRun(t, cluster.Spec{System: cluster.Redis, Nodes: 2}, 1, linknet.WithProxies())
	rtt := func(node string) time.Duration {
		c := tr.worker(t, 0, node)
		began := time.Now()
		if err := c.Ping(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
		return time.Since(began)
	}
	tr.run(t, Step{Fault: "latency", Targets: []string{"n2"}, Options: map[string]string{"delay": "150ms"}})
	if d := rtt("n2"); d < 150*time.Millisecond {
		t.Fatalf("a round trip to n2 under 150ms latency took %v", d)
	}
	if d := rtt("n1"); d >= 150*time.Millisecond {
		t.Fatalf("a round trip to the unaffected n1 took %v", d)
	}
	tr.healAll(t)
	if d := rtt("n2"); d >= 150*time.Millisecond {
		t.Fatalf("after the heal a round trip to n2 took %v", d)
	}
	if l := tr.nemesisOps(t, "latency"); len(l) != 1 || l[0]["delay"] != "150ms" || fmt.Sprint(l[0]["nodes"]) != "[n2]" {
		t.Fatalf("recorded %v, want a 150ms latency on [n2]", l)
	}
}
