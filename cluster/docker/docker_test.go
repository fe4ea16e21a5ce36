package docker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/conformance"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
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
func startCluster(t *testing.T, nodes int, net *linknet.Network) *Cluster {
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
	ids, err := labelled(runID)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(ids, " ")
}

// labelled returns the ids of the containers and networks labelled with the
// run id, as the docker CLI sees them.
func labelled(runID string) ([]string, error) {
	var out []string
	for _, args := range [][]string{
		{"ps", "-a", "-q", "--filter", "label=" + RunLabel + "=" + runID},
		{"network", "ls", "-q", "--filter", "label=" + RunLabel + "=" + runID},
	} {
		b, err := exec.Command("docker", args...).CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("docker %s: %v: %s", strings.Join(args, " "), err, b)
		}
		out = append(out, strings.Fields(string(b))...)
	}
	return out, nil
}

// testedSystems is the docker backend's systems that its tests start:
// every one (nil) unless JEPSEN_LITE_DOCKER_SYSTEMS names some,
// comma-separated ("all" is every one too).
func testedSystems() []string {
	switch v := os.Getenv("JEPSEN_LITE_DOCKER_SYSTEMS"); v {
	case "", "all":
		return nil
	default:
		return strings.Split(v, ",")
	}
}

// TestConformance runs the backends' one suite (cluster/conformance)
// against Docker clusters, where an engine and the node image exist: every
// topology, or with JEPSEN_LITE_CONFORMANCE_SAMPLE=day (make test) one a
// day in turn.
func TestConformance(t *testing.T) {
	requireEngineAndImage(t)
	conformance.Run(t, conformance.Backend{
		Name:       "docker",
		Start:      Backend.Start,
		Systems:    Backend.Systems,
		Only:       testedSystems(),
		OnlyWhy:    "JEPSEN_LITE_DOCKER_SYSTEMS names the systems this run tests in containers",
		Sampled:    os.Getenv("JEPSEN_LITE_CONFORMANCE_SAMPLE") == "day",
		SampledWhy: "JEPSEN_LITE_CONFORMANCE_SAMPLE=day (make test); make test-docker tests every topology",
		Leftovers: func(cc cluster.Cluster) func() []string {
			c := cc.(*Cluster)
			return func() []string {
				ids, err := labelled(c.RunID())
				if err != nil {
					return []string{err.Error()}
				}
				var out []string
				for _, id := range ids {
					out = append(out, "container or network "+id+" labelled "+RunLabel+"="+c.RunID())
				}
				if _, err := os.Stat(c.dir); !os.IsNotExist(err) {
					out = append(out, fmt.Sprintf("temp dir %s (%v)", c.dir, err))
				}
				return out
			}
		},
	})
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
		{name: "mariadb with two nodes", spec: cluster.Spec{System: cluster.MariaDB, Nodes: 2}, unavailable: true},
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

// TestPortsOnLoopback checks that every node publishes its port on
// 127.0.0.1 only, so that the harness's links stay the only way in.
func TestPortsOnLoopback(t *testing.T) {
	requireEngineAndImage(t)
	c := startCluster(t, 2, nil)
	for _, n := range c.Nodes() {
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

// BenchmarkColdStart measures starting (containers created, started,
// answering; sentinels knowing each other) and closing a cluster per
// topology.
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
						if _, err := nw.Link(linknet.Name(fmt.Sprintf("w%d", w), n.Name), n.Addr); err != nil {
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
