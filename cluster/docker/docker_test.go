package docker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/jepsen-lite/jepsen-lite/cluster"
)

// requireEngineAndImage skips the test when the Docker engine or the node
// image is absent: the only external things these tests need.
func requireEngineAndImage(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cli, err := Engine(ctx)
	if err != nil {
		t.Skipf("skipping: no working Docker engine (%v)", err)
	}
	defer cli.Close()
	if err := CheckImage(ctx, cli, ImageName()); err != nil {
		t.Skipf("skipping: the node image %s is not in the local engine; run `make images` (%v)", ImageName(), err)
	}
}

// startCluster starts a Redis masters cluster and registers its Close.
func startCluster(t *testing.T, nodes int, net *cluster.Network) *Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Start(ctx, cluster.Spec{System: cluster.Redis, Topology: "masters", Nodes: nodes, LogDir: t.TempDir()}, net)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return c
}

// leftovers returns the ids of the containers and networks labelled with
// the run id, as the docker CLI sees them.
func leftovers(t *testing.T, runID string) string {
	t.Helper()
	var out []string
	for _, args := range [][]string{
		{"ps", "-a", "-q", "--filter", "label=" + RunLabel + "=" + runID},
		{"network", "ls", "-q", "--filter", "label=" + RunLabel + "=" + runID},
	} {
		b, err := exec.Command("docker", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("docker %s: %v: %s", strings.Join(args, " "), err, b)
		}
		out = append(out, strings.Fields(string(b))...)
	}
	return strings.Join(out, " ")
}

// TestCheckSpec checks which specs Start refuses before it touches the
// engine.
func TestCheckSpec(t *testing.T) {
	tests := []struct {
		name        string
		spec        cluster.Spec
		unavailable bool
	}{
		{name: "redis unknown topology", spec: cluster.Spec{System: cluster.Redis, Topology: "ring", Nodes: 3}, unavailable: true},
		{name: "unknown system", spec: cluster.Spec{System: "mysql", Nodes: 1}},
		{name: "postgres with two nodes", spec: cluster.Spec{System: cluster.Postgres, Nodes: 2}, unavailable: true},
		{name: "no nodes", spec: cluster.Spec{System: cluster.Redis, Nodes: 0}},
		{name: "ensemble without a network", spec: cluster.Spec{System: cluster.ZooKeeper, Nodes: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Start(context.Background(), tt.spec, nil, WithImage("jepsen-lite/absent:never"))
			if err == nil || errors.Is(err, ErrNoImage) || errors.Is(err, ErrNoEngine) {
				t.Fatalf("Start got past the spec: %v", err)
			}
			if got := errors.Is(err, cluster.ErrUnavailable); got != tt.unavailable {
				t.Fatalf("errors.Is(%v, ErrUnavailable) = %v, want %v", err, got, tt.unavailable)
			}
		})
	}
}

func TestStartMissingImage(t *testing.T) {
	requireEngineAndImage(t)
	_, err := Start(context.Background(), cluster.Spec{System: cluster.Redis, Nodes: 1}, nil,
		WithImage("jepsen-lite/absent:never"))
	if !errors.Is(err, ErrNoImage) {
		t.Fatalf("Start with an absent image: got %v, want ErrNoImage", err)
	}
}

// TestStartFailureCleansUp makes every node exit at start (redis-server
// refuses an unknown option) and checks that Start leaves nothing behind.
func TestStartFailureCleansUp(t *testing.T) {
	requireEngineAndImage(t)
	const runID = "test-failed-start"
	c, err := Start(context.Background(), cluster.Spec{System: cluster.Redis, Nodes: 2, LogDir: t.TempDir()}, nil,
		WithRunID(runID), WithRedisArgs("--no-such-option"), WithStartTimeout(20*time.Second))
	if err == nil {
		_ = c.Close()
		t.Fatal("Start succeeded with a broken command line")
	}
	t.Logf("Start failed as it should: %v", err)
	if left := leftovers(t, runID); left != "" {
		t.Fatalf("left behind after a failed start: %s", left)
	}
}

func TestMasters(t *testing.T) {
	requireEngineAndImage(t)
	net, err := cluster.NewNetwork()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = net.Close() })
	c := startCluster(t, 3, net)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	nodes := c.Nodes()
	if len(nodes) != 3 {
		t.Fatalf("Nodes: got %d, want 3", len(nodes))
	}
	clients := map[string]*redis.Client{}
	for _, n := range nodes {
		if n.Role != cluster.RolePrimary {
			t.Errorf("node %s: role %q, want %q", n.Name, n.Role, cluster.RolePrimary)
		}
		if !strings.HasPrefix(n.Addr, "127.0.0.1:") {
			t.Fatalf("node %s: Addr %s is not on 127.0.0.1", n.Name, n.Addr)
		}
		addr, err := net.Link(cluster.LinkName("w1", n.Name), n.Addr)
		if err != nil {
			t.Fatal(err)
		}
		rc := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second})
		t.Cleanup(func() { _ = rc.Close() })
		clients[n.Name] = rc
		if err := rc.Ping(ctx).Err(); err != nil {
			t.Fatalf("PING %s through proxy %s: %v", n.Name, addr, err)
		}
	}

	t.Run("ports published on loopback only", func(t *testing.T) {
		for _, n := range nodes {
			id, err := c.ContainerID(n.Name)
			if err != nil {
				t.Fatal(err)
			}
			b, err := exec.Command("docker", "port", id).CombinedOutput()
			if err != nil {
				t.Fatalf("docker port: %v: %s", err, b)
			}
			for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				if !strings.Contains(line, "-> 127.0.0.1:") {
					t.Errorf("node %s publishes %q, not on 127.0.0.1 only", n.Name, line)
				}
			}
		}
	})

	t.Run("pause and resume", func(t *testing.T) {
		rc := clients["n1"]
		if err := c.Pause(ctx, "n1"); err != nil {
			t.Fatal(err)
		}
		short, cancelShort := context.WithTimeout(ctx, 500*time.Millisecond)
		err := rc.Ping(short).Err()
		cancelShort()
		if err == nil {
			_ = c.Resume(ctx, "n1")
			t.Fatal("a paused node answered PING")
		}
		if err := clients["n2"].Ping(ctx).Err(); err != nil {
			t.Fatalf("n2 while n1 paused: %v", err)
		}
		if err := c.Resume(ctx, "n1"); err != nil {
			t.Fatal(err)
		}
		if err := pingEventually(ctx, rc); err != nil {
			t.Fatalf("n1 after resume: %v", err)
		}
	})

	t.Run("kill and start", func(t *testing.T) {
		rc := clients["n2"]
		if err := rc.Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.Kill(ctx, "n2"); err != nil {
			t.Fatal(err)
		}
		short, cancelShort := context.WithTimeout(ctx, 500*time.Millisecond)
		err := rc.Ping(short).Err()
		cancelShort()
		if err == nil {
			t.Fatal("a killed node answered PING")
		}
		if err := c.Start(ctx, "n2"); err != nil {
			t.Fatal(err)
		}
		if err := pingEventually(ctx, rc); err != nil {
			t.Fatalf("n2 after start: %v", err)
		}
		// Without persistence the restarted node has lost its data.
		if n, err := rc.Exists(ctx, "k").Result(); err != nil || n != 0 {
			t.Fatalf("EXISTS k after restart without persistence = %d, %v; want 0", n, err)
		}
	})

	t.Run("kill a paused node", func(t *testing.T) {
		if err := c.Pause(ctx, "n1"); err != nil {
			t.Fatal(err)
		}
		if err := c.Kill(ctx, "n1"); err != nil {
			t.Fatal(err)
		}
		if err := c.Start(ctx, "n1"); err != nil {
			t.Fatal(err)
		}
		if err := pingEventually(ctx, clients["n1"]); err != nil {
			t.Fatalf("n1 after pause, kill, start: %v", err)
		}
	})

	t.Run("clock skew expires keys on one node only", func(t *testing.T) {
		for _, name := range []string{"n1", "n3"} {
			if err := clients[name].Set(ctx, "lease", "x", 10*time.Second).Err(); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.SetClockOffset("n3", 20*time.Second); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := c.SetClockOffset("n3", 0); err != nil {
				t.Error(err)
			}
		}()
		if n, err := clients["n3"].Exists(ctx, "lease").Result(); err != nil || n != 0 {
			t.Fatalf("n3 (clock +20s): EXISTS lease = %d, %v; want 0", n, err)
		}
		if n, err := clients["n1"].Exists(ctx, "lease").Result(); err != nil || n != 1 {
			t.Fatalf("n1 (true clock): EXISTS lease = %d, %v; want 1", n, err)
		}
		if err := c.SetClockOffset("n9", time.Second); !errors.Is(err, ErrUnknownNode) {
			t.Fatalf("SetClockOffset of an unknown node: got %v, want ErrUnknownNode", err)
		}
	})

	t.Run("close removes everything", func(t *testing.T) {
		if left := leftovers(t, c.RunID()); left == "" {
			t.Fatal("no labelled containers or network while the cluster runs")
		}
		// A paused node is removed too.
		if err := c.Pause(ctx, "n2"); err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		if left := leftovers(t, c.RunID()); left != "" {
			t.Fatalf("left behind after Close: %s", left)
		}
		if err := c.Pause(ctx, "n1"); !errors.Is(err, ErrClosed) {
			t.Fatalf("Pause after Close: got %v, want ErrClosed", err)
		}
	})
}

// TestPortTakenMeanwhile gives a node a host port that another process
// holds, as happens when the port is taken between its choice and the
// container's start, and checks that Start moves the node to another port.
func TestPortTakenMeanwhile(t *testing.T) {
	requireEngineAndImage(t)
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	heldPort := held.Addr().(*net.TCPAddr).Port
	calls := 0
	pickPort = func() (int, error) {
		calls++
		if calls == 1 {
			return heldPort, nil
		}
		return cluster.FreePort()
	}
	defer func() { pickPort = cluster.FreePort }()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := Start(ctx, cluster.Spec{System: cluster.Redis, Nodes: 1}, nil)
	if err != nil {
		t.Fatalf("Start with its first port taken: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	addr := c.Nodes()[0].Addr
	if addr == held.Addr().String() {
		t.Fatalf("node kept the taken address %s", addr)
	}
	if calls < 2 {
		t.Fatalf("port picked %d times, want a second pick", calls)
	}
	if err := cluster.RedisReady(ctx, addr); err != nil {
		t.Fatalf("PING %s: %v", addr, err)
	}
}

// TestSweep leaves a cluster running and removes it by its run label, as a
// clean-up after a harness that died would.
func TestSweep(t *testing.T) {
	requireEngineAndImage(t)
	const runID = "test-sweep"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := Start(ctx, cluster.Spec{System: cluster.Redis, Nodes: 2}, nil, WithRunID(runID))
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if left := leftovers(t, runID); len(strings.Fields(left)) != 3 {
		t.Fatalf("labelled objects while running: %q, want 2 containers and 1 network", left)
	}
	if err := Sweep(ctx, runID); err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	if left := leftovers(t, runID); left != "" {
		t.Fatalf("left behind after Sweep: %s", left)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close after Sweep: %v", err)
	}
}

// TestPersistence checks that a node started with persistence keeps an
// acknowledged write across kill and start.
func TestPersistence(t *testing.T) {
	requireEngineAndImage(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := Start(ctx, cluster.Spec{System: cluster.Redis, Nodes: 1, Persistence: true}, nil)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	rc := redis.NewClient(&redis.Options{Addr: c.Nodes()[0].Addr, MaxRetries: -1})
	t.Cleanup(func() { _ = rc.Close() })
	if err := rc.Set(ctx, "k", "kept", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Kill(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if err := pingEventually(ctx, rc); err != nil {
		t.Fatal(err)
	}
	if v, err := rc.Get(ctx, "k").Result(); err != nil || v != "kept" {
		t.Fatalf("GET k after kill and start with persistence = %q, %v; want kept", v, err)
	}
}

// BenchmarkColdStart measures starting a cluster of every topology
// (containers created and started, relays open, every node answering,
// sentinels knowing each other) plus one link per (worker, node) for five
// workers, as a run needs them, as the local backend's benchmark does.
// Close is not timed.
//
//	go test -run '^$' -bench ColdStart -benchtime 3x ./cluster/docker/
func BenchmarkColdStart(b *testing.B) {
	ctx := context.Background()
	cli, err := Engine(ctx)
	if err != nil {
		b.Skipf("skipping: no working Docker engine (%v)", err)
	}
	defer cli.Close()
	if err := CheckImage(ctx, cli, ImageName()); err != nil {
		b.Skipf("skipping: the node image %s is not in the local engine; run `make images` (%v)", ImageName(), err)
	}
	for _, tc := range cluster.Topologies {
		b.Run(tc.Name, func(b *testing.B) {
			for b.Loop() {
				nw, err := cluster.NewNetwork()
				if err != nil {
					b.Fatal(err)
				}
				c, err := Start(ctx, tc.Spec, nw)
				if err != nil {
					_ = nw.Close()
					b.Fatal(err)
				}
				for w := range 5 {
					for _, n := range c.Nodes() {
						if _, err := nw.Link(cluster.LinkName(fmt.Sprintf("w%d", w), n.Name), n.Addr); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.StopTimer()
				if err := c.Close(); err != nil {
					b.Error(err)
				}
				_ = nw.Close()
				b.StartTimer()
			}
		})
	}
}

// pingEventually retries PING for a few seconds (a resumed or restarted
// node's old connections may be gone).
func pingEventually(ctx context.Context, rc *redis.Client) error {
	var err error
	for range 50 {
		if err = rc.Ping(ctx).Err(); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

func TestPrimaryReplica(t *testing.T) {
	requireEngineAndImage(t)
	net, err := cluster.NewNetwork()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = net.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Start(ctx, cluster.Spec{System: cluster.Redis, Topology: cluster.TopologyPrimaryReplica, Nodes: 3, LogDir: t.TempDir()}, net)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	wantRoles := map[string]string{"n1": "primary", "n2": "replica", "n3": "replica"}
	clients := map[string]*redis.Client{}
	for _, n := range c.Nodes() {
		if n.Role != wantRoles[n.Name] {
			t.Errorf("node %s: role %q, want %q", n.Name, n.Role, wantRoles[n.Name])
		}
		rc := redis.NewClient(&redis.Options{Addr: n.Addr, MaxRetries: -1})
		t.Cleanup(func() { _ = rc.Close() })
		clients[n.Name] = rc
	}
	if got := net.Links(); strings.Join(got, " ") != "n2->n1 n3->n1" {
		t.Fatalf("links: %v, want n2->n1 n3->n1", got)
	}
	if p, err := c.Primary(ctx); err != nil || p != "n1" {
		t.Fatalf("Primary = %q, %v; want n1", p, err)
	}

	// replicated reports whether key reaches the node within d.
	replicated := func(node, key string, d time.Duration) bool {
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			if n, err := clients[node].Exists(ctx, key).Result(); err == nil && n == 1 {
				return true
			}
		}
		return false
	}

	if err := clients["n1"].Set(ctx, "a", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"n2", "n3"} {
		if !replicated(r, "a", 20*time.Second) {
			t.Fatalf("key a never reached %s", r)
		}
	}

	t.Run("cutting a replication link stops that replica only", func(t *testing.T) {
		if err := net.Cut("n2->n1"); err != nil {
			t.Fatal(err)
		}
		if err := clients["n1"].Set(ctx, "b", "1", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if !replicated("n3", "b", 10*time.Second) {
			t.Fatal("key b never reached n3")
		}
		if replicated("n2", "b", time.Second) {
			t.Fatal("key b reached n2 through a cut link")
		}
		if err := net.Heal("n2->n1"); err != nil {
			t.Fatal(err)
		}
		if !replicated("n2", "b", 30*time.Second) {
			t.Fatal("key b never reached n2 after the heal")
		}
	})

	t.Run("a restarted replica replicates again", func(t *testing.T) {
		if err := c.Kill(ctx, "n3"); err != nil {
			t.Fatal(err)
		}
		if err := clients["n1"].Set(ctx, "c", "1", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.Start(ctx, "n3"); err != nil {
			t.Fatal(err)
		}
		if !replicated("n3", "c", 30*time.Second) {
			t.Fatal("key c never reached the restarted n3")
		}
	})

	t.Run("promote", func(t *testing.T) {
		if err := c.Promote(ctx, "n2"); err != nil {
			t.Fatal(err)
		}
		if p, err := c.Primary(ctx); err != nil || p != "n2" {
			t.Fatalf("Primary = %q, %v; want n2", p, err)
		}
		if err := clients["n2"].Set(ctx, "d", "1", 0).Err(); err != nil {
			t.Fatalf("write to the promoted n2: %v", err)
		}
		if !replicated("n3", "d", 30*time.Second) {
			t.Fatal("key d never reached n3 through n3->n2")
		}
		if net.Addr("n3->n2") == "" {
			t.Fatal("no link n3->n2 after the promotion")
		}
		if replicated("n1", "d", 500*time.Millisecond) {
			t.Fatal("the old primary n1 got a write of the new primary")
		}
		roles := map[string]string{}
		for _, n := range c.Nodes() {
			roles[n.Name] = n.Role
		}
		if roles["n2"] != cluster.RolePrimary || roles["n1"] != cluster.RolePrimary || roles["n3"] != cluster.RoleReplica {
			t.Fatalf("roles after promote %v, want n1 and n2 primaries (a split brain), n3 a replica", roles)
		}
	})

	t.Run("the old primary follows the new one", func(t *testing.T) {
		if err := c.Follow(ctx, "n1", "n2"); err != nil {
			t.Fatal(err)
		}
		if net.Addr("n1->n2") == "" {
			t.Fatal("no link n1->n2 after Follow")
		}
		if !replicated("n1", "d", 30*time.Second) {
			t.Fatal("key d never reached n1 through n1->n2")
		}
		if got := c.Nodes()[0].Role; got != cluster.RoleReplica {
			t.Fatalf("n1's role after Follow = %q, want replica", got)
		}
	})

	t.Run("close removes links and containers", func(t *testing.T) {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if got := net.Links(); len(got) != 0 {
			t.Fatalf("links left after Close: %v", got)
		}
		if left := leftovers(t, c.RunID()); left != "" {
			t.Fatalf("left behind after Close: %s", left)
		}
	})
}

func TestSentinel(t *testing.T) {
	requireEngineAndImage(t)
	net, err := cluster.NewNetwork()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = net.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := Start(ctx, cluster.Spec{System: cluster.Redis, Topology: cluster.TopologySentinel, Nodes: 2, LogDir: t.TempDir()}, net)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	var got []string
	clients := map[string]*redis.Client{}
	for _, n := range c.Nodes() {
		got = append(got, n.Name+"="+n.Role)
		rc := redis.NewClient(&redis.Options{Addr: n.Addr, MaxRetries: -1})
		t.Cleanup(func() { _ = rc.Close() })
		clients[n.Name] = rc
	}
	if want := "n1=primary n2=replica s1=sentinel s2=sentinel s3=sentinel"; strings.Join(got, " ") != want {
		t.Fatalf("nodes: %s, want %s", strings.Join(got, " "), want)
	}
	if links := strings.Join(net.Links(), " "); links != "peers->n1 peers->n2" {
		t.Fatalf("links: %s, want peers->n1 peers->n2", links)
	}
	primaryIs := func(want string, d time.Duration) error {
		var p string
		var err error
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			if p, err = c.Primary(ctx); err == nil && p == want {
				return nil
			}
		}
		return fmt.Errorf("primary is %q (%v), want %s", p, err, want)
	}
	replicated := func(node, key string, d time.Duration) bool {
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			if n, err := clients[node].Exists(ctx, key).Result(); err == nil && n == 1 {
				return true
			}
		}
		return false
	}
	if err := primaryIs("n1", time.Second); err != nil {
		t.Fatal(err)
	}
	if err := clients["n1"].Set(ctx, "a", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if !replicated("n2", "a", 20*time.Second) {
		t.Fatal("key a never reached n2")
	}

	t.Run("promote through the sentinels", func(t *testing.T) {
		if err := c.Promote(ctx, "n2"); err != nil {
			t.Fatal(err)
		}
		if err := primaryIs("n2", time.Second); err != nil {
			t.Fatal(err)
		}
		if err := clients["n2"].Set(ctx, "b", "1", 0).Err(); err != nil {
			t.Fatalf("write to the new primary: %v", err)
		}
		// The sentinels turn the old primary into a replica of the new one.
		if !replicated("n1", "b", 30*time.Second) {
			t.Fatal("key b never reached the old primary n1")
		}
	})

	t.Run("the sentinels fail over when the primary dies", func(t *testing.T) {
		if err := c.Kill(ctx, "n2"); err != nil {
			t.Fatal(err)
		}
		if err := primaryIs("n1", 60*time.Second); err != nil {
			t.Fatal(err)
		}
		if err := c.Start(ctx, "n2"); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("close removes links and containers", func(t *testing.T) {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if got := net.Links(); len(got) != 0 {
			t.Fatalf("links left after Close: %v", got)
		}
		if left := leftovers(t, c.RunID()); left != "" {
			t.Fatalf("left behind after Close: %s", left)
		}
	})
}
