package local

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/conformance"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
)

// requireBinaries skips the test when a server binary is not installed.
func requireBinaries(t *testing.T, bins ...string) {
	t.Helper()
	for _, b := range bins {
		if _, err := exec.LookPath(b); err != nil {
			if _, serr := os.Stat(b); serr != nil {
				t.Skipf("%s is not installed", b)
			}
		}
	}
}

// startCluster starts a cluster and its network, both closed at cleanup, and
// checks at cleanup that nothing is left behind.
func startCluster(t *testing.T, spec cluster.Spec, opts ...Option) (*Cluster, *linknet.Network) {
	t.Helper()
	nw, err := cluster.NewNetwork()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nw.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := Start(ctx, spec, nw, opts...)
	if err != nil {
		t.Fatalf("Start %s/%s: %v", spec.System, spec.Topology, err)
	}
	t.Cleanup(func() { closeAndCheck(t, c) })
	return c, nw
}

// closeAndCheck closes the cluster and checks that no process, temp dir or
// listening port of it remains.
func closeAndCheck(t *testing.T, c *Cluster) {
	t.Helper()
	remains := leftovers(c)
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	for _, l := range remains() {
		t.Errorf("left behind after Close: %s", l)
	}
}

// leftovers returns a check, to call after Close, that lists what of the
// running cluster remains: process groups, its temp dir, listening ports.
func leftovers(c *Cluster) func() []string {
	pids := c.Pids()
	root := c.root
	var addrs []string
	for _, n := range c.nodes {
		addrs = append(addrs, n.addr())
	}
	return func() []string {
		var out []string
		for name, pid := range pids {
			if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
				out = append(out, fmt.Sprintf("process group of %s (pid %d) (kill 0: %v)", name, pid, err))
			}
			if found, err := exec.Command("pgrep", "-g", itoa(pid)).Output(); err == nil {
				out = append(out, fmt.Sprintf("processes %s of %s's group (pgrep -g %d)", strings.Fields(string(found)), name, pid))
			}
		}
		if _, err := os.Stat(root); !os.IsNotExist(err) {
			out = append(out, fmt.Sprintf("temp dir %s (%v)", root, err))
		}
		for _, a := range addrs {
			if conn, err := net.DialTimeout("tcp", a, 200*time.Millisecond); err == nil {
				conn.Close()
				out = append(out, a+" still listens")
			}
		}
		return out
	}
}

func itoa(i int) string { return string(appendInt(nil, i)) }

func appendInt(b []byte, i int) []byte {
	if i >= 10 {
		b = appendInt(b, i/10)
	}
	return append(b, byte('0'+i%10))
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func mustDo(t *testing.T, addr string, args ...string) any {
	t.Helper()
	r, err := cluster.RedisDo(ctxT(t, 5*time.Second), addr, args...)
	if err != nil {
		t.Fatalf("%v on %s: %v", args, addr, err)
	}
	return r
}

// TestConformance runs the backends' one suite (cluster/conformance)
// against local clusters.
func TestConformance(t *testing.T) {
	cannot := map[conformance.Ability]string{}
	if _, err := FindClockSkewLibrary(t.TempDir()); err != nil {
		cannot[conformance.ClockSkew] = err.Error()
	}
	conformance.Run(t, conformance.Backend{
		Name: "local",
		Start: func(ctx context.Context, spec cluster.Spec, net *linknet.Network) (cluster.Cluster, error) {
			c, err := Start(ctx, spec, net)
			if err != nil {
				return nil, err
			}
			return c, nil
		},
		Systems:    Backend.Systems,
		Cannot:     cannot,
		Leftovers:  func(c cluster.Cluster) func() []string { return leftovers(c.(*Cluster)) },
		Sampled:    os.Getenv("JEPSEN_LITE_CONFORMANCE_SAMPLE") == "day",
		SampledWhy: "JEPSEN_LITE_CONFORMANCE_SAMPLE=day (make test); go test ./cluster/local tests every topology",
	})
}

func TestClockSkewUnavailableWithout(t *testing.T) {
	requireBinaries(t, "redis-server")
	c, _ := startCluster(t, cluster.Spec{System: cluster.Redis, Nodes: 1}, WithoutClockSkew())
	if err := c.SetClockOffset("n1", time.Second); !errors.Is(err, cluster.ErrUnavailable) {
		t.Errorf("SetClockOffset without the library = %v, want ErrUnavailable", err)
	}
}

func TestStartFailsCleanly(t *testing.T) {
	nw, err := cluster.NewNetwork()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nw.Close() })
	tests := []struct {
		name string
		spec cluster.Spec
	}{
		{"unknown system", cluster.Spec{System: "mongodb", Nodes: 1}},
		{"unknown topology", cluster.Spec{System: cluster.Redis, Topology: "ring", Nodes: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, _ := filepath.Glob(filepath.Join(os.TempDir(), "jepsen-lite-*"))
			if _, err := Start(ctxT(t, 5*time.Second), tt.spec, nw); err == nil {
				t.Fatal("Start succeeded")
			}
			after, _ := filepath.Glob(filepath.Join(os.TempDir(), "jepsen-lite-*"))
			for _, d := range after {
				if !slices.Contains(before, d) {
					t.Errorf("temp dir %s left behind by a failed Start", d)
				}
			}
		})
	}
}

func TestZooKeeperStandalone(t *testing.T) {
	requireBinaries(t, "java", cluster.ZooKeeperJar)
	began := time.Now()
	c, _ := startCluster(t, cluster.Spec{System: cluster.ZooKeeper, Nodes: 1})
	t.Logf("zookeeper ready in %v", time.Since(began))
	addr := c.Nodes()[0].Addr
	if m, err := cluster.ZooKeeperMode(ctxT(t, 2*time.Second), addr); err != nil || m != "standalone" {
		t.Fatalf("mode %q, %v", m, err)
	}
	if c.skewLib != "" {
		if err := c.SetClockOffset("n1", time.Minute); err != nil {
			t.Errorf("SetClockOffset on zookeeper: %v", err)
		}
		if _, err := cluster.ZooKeeperMode(ctxT(t, 2*time.Second), addr); err != nil {
			t.Errorf("zookeeper after a clock jump: %v", err)
		}
	}
	if err := c.Kill(ctxT(t, 5*time.Second), "n1"); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctxT(t, 30*time.Second), "n1"); err != nil {
		t.Fatal(err)
	}
	if m, err := cluster.ZooKeeperMode(ctxT(t, 2*time.Second), addr); err != nil || m != "standalone" {
		t.Fatalf("mode after restart %q, %v", m, err)
	}
}

// waitFor polls cond until it holds or the timeout ends the test.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting: %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestEtcdSingle(t *testing.T) {
	requireBinaries(t, "etcd")
	began := time.Now()
	c, _ := startCluster(t, cluster.Spec{System: cluster.Etcd, Nodes: 1})
	t.Logf("etcd ready in %v", time.Since(began))
	url := c.Nodes()[0].Addr
	if err := cluster.EtcdReady(ctxT(t, 2*time.Second), url); err != nil {
		t.Fatal(err)
	}
	if err := c.SetClockOffset("n1", time.Second); !errors.Is(err, cluster.ErrUnavailable) {
		t.Errorf("SetClockOffset on etcd = %v, want ErrUnavailable", err)
	}
	if err := c.Kill(ctxT(t, 5*time.Second), "n1"); err != nil {
		t.Fatal(err)
	}
	if err := cluster.EtcdReady(ctxT(t, time.Second), url); err == nil {
		t.Fatal("killed etcd is healthy")
	}
	if err := c.Start(ctxT(t, 30*time.Second), "n1"); err != nil {
		t.Fatal(err)
	}
}

// TestEtcdIsolatedMemberLosesQuorum starts a three-member etcd cluster,
// checks its links (one per pair, as on the docker backend) and the group
// id each member runs with, then cuts every peer link of n3, the
// connections it dials as well as those dialled to it, and checks that n3
// turns unhealthy (it reaches no leader) while n1 and n2 stay healthy, and
// that n3 is healthy again after the heal; then the same with a reset of
// those links.
func TestEtcdIsolatedMemberLosesQuorum(t *testing.T) {
	requireBinaries(t, "etcd")
	c, nw := startCluster(t, cluster.Spec{System: cluster.Etcd, Nodes: 3})
	if got, want := strings.Join(nw.Links(), " "), "n1->n2 n1->n3 n2->n1 n2->n3 n3->n1 n3->n2"; got != want {
		t.Fatalf("links %s, want %s", got, want)
	}
	for i, n := range c.Nodes() {
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.Pids()[n.Name]))
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("Gid:\t%[1]d\t%[1]d\t%[1]d\t%[1]d", etcdGidBase+i+1)
		if !strings.Contains(string(status), want+"\n") {
			t.Fatalf("%s runs without the group id %d:\n%s", n.Name, etcdGidBase+i+1, status)
		}
	}
	nodes := c.Nodes()
	healthy := func(addr string) bool { return cluster.EtcdReady(ctxT(t, time.Second), addr) == nil }
	var peerLinks []string
	for _, l := range nw.Links() {
		if from, to, _ := linknet.SplitName(l); from == "n3" || to == "n3" {
			peerLinks = append(peerLinks, l)
		}
	}
	if err := nw.Cut(peerLinks...); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "n3 turns unhealthy with every peer link cut", func() bool { return !healthy(nodes[2].Addr) })
	waitFor(t, 30*time.Second, "n1 and n2 healthy while n3 is cut off", func() bool { return healthy(nodes[0].Addr) && healthy(nodes[1].Addr) })
	if err := nw.Heal(peerLinks...); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "n3 healthy after the heal", func() bool { return healthy(nodes[2].Addr) })
	// A reset of the same links refuses every peer connection of n3 and
	// resets those that carry data, in both directions.
	if err := nw.Reset(peerLinks...); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "n3 turns unhealthy with every peer link reset", func() bool { return !healthy(nodes[2].Addr) })
	waitFor(t, 30*time.Second, "n1 and n2 healthy while n3's links are reset", func() bool { return healthy(nodes[0].Addr) && healthy(nodes[1].Addr) })
	if err := nw.Heal(peerLinks...); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "n3 healthy after the reset's heal", func() bool { return healthy(nodes[2].Addr) })
}
