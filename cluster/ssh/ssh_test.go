//go:build sshhosts

package ssh

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/conformance"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
)

// conformanceHosts is how many test hosts TestConformance makes: a host
// per node of the largest topology the suite starts, a Redis Cluster's
// three masters and three replicas (and sentinel-3's three data nodes and
// three sentinels).
const conformanceHosts = 6

// TestConformance runs the suite on the ssh backend, on conformanceHosts
// test hosts: every system and topology it declares, and the refusal of
// the others.
func TestConformance(t *testing.T) {
	inv := newTestHosts(t, conformanceHosts)
	var addrs []string
	for _, h := range inv.Hosts {
		addrs = append(addrs, h.Address)
	}
	b := NewBackend(inv, WithClockSkewLibrary(clockSkewLibrary(t)))
	conformance.Run(t, conformance.Backend{
		Name:       b.Name,
		Start:      b.Start,
		Systems:    b.Systems,
		Topologies: b.Topologies,
		NodeHosts:  addrs,
		Network:    func() (*linknet.Network, error) { return cluster.NewNetwork(linknet.WithLinkAddress(inv.Harness)) },
		Leftovers:  func(c cluster.Cluster) func() []string { return c.(*Cluster).Remains() },
	})
}

// TestSharedLinkCut cuts the sentinel topology's shared link "peers->n1"
// and checks, from the other nodes' hosts, that it stops every peer's
// connections to n1 and no other: a sentinel's host and a replica's no
// longer reach n1's port, n1's host still reaches a sentinel's, and the
// harness (a worker's end) still reaches n1; after the heal the peers
// reach n1 again.
func TestSharedLinkCut(t *testing.T) {
	inv := newTestHosts(t, 5)
	nw, err := cluster.NewNetwork(linknet.WithLinkAddress(inv.Harness))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nw.Close() })
	spec := cluster.Spec{System: cluster.Redis, Topology: cluster.TopologySentinel, Nodes: 2}
	c, err := Start(ctxFor(t, 2*time.Minute), inv, spec, nw)
	if err != nil {
		t.Fatal(err)
	}
	left := c.Remains()
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
		checkNothingLeft(t, left())
	})
	n1, n2, s1 := c.nodes[0], c.nodes[1], c.nodes[2]
	if err := nw.Cut(cluster.ReplicationLink(spec, n2.name, n1.name)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		from    *node
		to      *node
		reaches bool
	}{
		{"replica to n1", n2, n1, false},
		{"sentinel to n1", s1, n1, false},
		{"n1 to a sentinel", n1, s1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := pings(t, tt.from, tt.to); got != tt.reaches {
				t.Errorf("%s's host reaches %s: %v, want %v", tt.from.name, tt.to.name, got, tt.reaches)
			}
		})
	}
	if err := cluster.RedisReady(ctxFor(t, 5*time.Second), n1.addr); err != nil {
		t.Errorf("the harness does not reach n1 during the cut: %v", err)
	}
	if err := nw.Heal(cluster.ReplicationLink(spec, n2.name, n1.name)); err != nil {
		t.Fatal(err)
	}
	for _, from := range []*node{n2, s1} {
		if !pings(t, from, n1) {
			t.Errorf("%s's host does not reach n1 after the heal", from.name)
		}
	}
}

// pings reports whether redis-cli on from's host gets an answer from
// to's server within two seconds.
func pings(t *testing.T, from, to *node) bool {
	t.Helper()
	host, port, _ := strings.Cut(to.addr, ":")
	out, err := from.conn.run(ctxFor(t, 10*time.Second), "timeout 2 redis-cli -h "+host+" -p "+port+" ping", nil)
	return err == nil && strings.TrimSpace(out) == "PONG"
}

// TestDeadHarnessLeftoversRemoved leaves on a host what a harness killed
// with SIGKILL leaves (its run dir and nftables table, named with its pid,
// and a server that runs from the dir) and checks that the next harness's
// DeleteLeftovers removes them, and leaves a live harness's alone.
func TestDeadHarnessLeftoversRemoved(t *testing.T) {
	inv := newTestHosts(t, 1)
	ctx := ctxFor(t, time.Minute)
	conn, err := dial(ctx, inv.Hosts[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.close)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	deadRun := runDirName(harnessName(), dead.Process.Pid, 1)
	liveRun := runDirName(harnessName(), 1, 1) // pid 1 lives
	t.Cleanup(func() {
		script := killRunScript(inv.Hosts[0].dir()+"/"+liveRun) + "nft delete table ip " + tableName(liveRun)
		_, _ = conn.run(context.Background(), script, nil)
	})
	for _, run := range []string{deadRun, liveRun} {
		dir := inv.Hosts[0].dir() + "/" + run + "/n1"
		script := "mkdir -p " + quote(dir) + " && cd " + quote(dir) + " && (setsid sleep 600 > /dev/null 2>&1 < /dev/null & echo $! > pid)" +
			" && nft add table ip " + tableName(run)
		if _, err := conn.run(ctx, script, nil); err != nil {
			t.Fatal(err)
		}
	}
	left := (&Cluster{inv: inv, run: deadRun}).Remains()
	if got := left(); len(got) != 3 {
		t.Fatalf("before: %v, want the dead harness's run dir, its process and its table", got)
	}
	if err := DeleteLeftovers(ctx, inv); err != nil {
		t.Fatal(err)
	}
	if got := left(); len(got) != 0 {
		t.Errorf("left after DeleteLeftovers: %v", got)
	}
	if got := (&Cluster{inv: inv, run: liveRun}).Remains()(); len(got) != 3 {
		t.Errorf("a live harness's run: %v, want its run dir, process and table kept", got)
	}
}

// TestInterruptedStartLeavesNothing cancels Starts at several moments, as
// Ctrl-C does, and checks that each leaves nothing on the hosts: a Start
// that returns the cancel has torn down what it started, and one that
// finished first is closed.
func TestInterruptedStartLeavesNothing(t *testing.T) {
	inv := newTestHosts(t, 3)
	nw, err := cluster.NewNetwork(linknet.WithLinkAddress(inv.Harness))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nw.Close() })
	spec := cluster.Spec{System: cluster.Redis, Topology: cluster.TopologyMasters, Nodes: 3}
	for _, after := range []time.Duration{0, 20 * time.Millisecond, 80 * time.Millisecond, 200 * time.Millisecond} {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(after, cancel)
		seq := runSeq.Load() + 1
		c, err := Start(ctx, inv, spec, nw)
		cancel()
		if err == nil {
			left := c.Remains()
			if err := c.Close(); err != nil {
				t.Error(err)
			}
			checkNothingLeft(t, left())
			continue
		}
		if !errors.Is(err, context.Canceled) && !strings.Contains(err.Error(), "canceled") {
			t.Errorf("Start interrupted after %v: %v, want the cancel", after, err)
		}
		run := runDirName(harnessName(), os.Getpid(), seq)
		checkNothingLeft(t, (&Cluster{inv: inv, run: run}).Remains()())
	}
}

// clockSkewLibrary returns the path of build/libclockskew.so (make build),
// failing the test when it is missing.
func clockSkewLibrary(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("../../build/libclockskew.so")
	if err == nil {
		_, err = os.Stat(p)
	}
	if err != nil {
		t.Fatalf("the clock-skew library (make build): %v", err)
	}
	return p
}

// checkNothingLeft fails the test for each thing left.
func checkNothingLeft(t *testing.T, left []string) {
	t.Helper()
	for _, l := range left {
		t.Errorf("left behind: %s", l)
	}
}

// ctxFor returns a context that ends after d or at the test's end.
func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
