//go:build sshhosts

package ssh

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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

// TestRedisClusterFaults runs, on a Redis Cluster on six hosts, the two
// faults the nemesis makes of a master beside the conformance suite's:
// the failover with the replication links into the master cut and the
// bus up (a write the master took meanwhile never reaches the promoted
// replica, which its old master then follows), and a master cut off from
// the other masters only (they fail it and promote its replica; after
// the heal it follows its replica). The roles Nodes reports follow both.
func TestRedisClusterFaults(t *testing.T) {
	inv := newTestHosts(t, conformanceHosts)
	nw, err := cluster.NewNetwork(linknet.WithLinkAddress(inv.Harness))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nw.Close() })
	c, err := Start(ctxFor(t, 2*time.Minute), inv, cluster.Spec{System: cluster.Redis, Topology: cluster.TopologyCluster}, nw)
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
	t.Run("failover with the replication links into the master cut", func(t *testing.T) {
		var cut []string
		for _, from := range []string{"n2", "n3", "n4", "n5", "n6"} {
			cut = append(cut, linknet.Name(from, "n1"))
		}
		if err := nw.Cut(cut...); err != nil {
			t.Fatal(err)
		}
		key := ownedKey(t, c, "n1", "during-cut")
		if err := c.Promote(ctxFor(t, time.Minute), "n4"); err != nil {
			t.Fatal(err)
		}
		rolesAre(t, c, map[string]string{"n4": cluster.RolePrimary, "n1": cluster.RoleReplica})
		if v, err := cluster.RedisDo(ctxFor(t, 5*time.Second), addrOf(c, "n4"), "GET", key); err != nil || v != nil {
			t.Errorf("the promoted n4 has %s = %v (%v), want none: the cut held n1's write back", key, v, err)
		}
		if err := nw.Heal(cut...); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("master cut off from the other masters", func(t *testing.T) {
		var cut []string
		for _, other := range []string{"n3", "n4"} {
			for _, l := range []string{linknet.Name("n2", other), linknet.Name(other, "n2")} {
				cut = append(cut, l, l+linknet.PurposeSeparator+cluster.ClusterBus)
			}
		}
		if err := nw.Cut(cut...); err != nil {
			t.Fatal(err)
		}
		rolesAre(t, c, map[string]string{"n5": cluster.RolePrimary})
		if err := nw.Heal(cut...); err != nil {
			t.Fatal(err)
		}
		rolesAre(t, c, map[string]string{"n5": cluster.RolePrimary, "n2": cluster.RoleReplica})
	})
}

// rolesAre waits until every named node's server and Nodes report its
// role.
func rolesAre(t *testing.T, c *Cluster, want map[string]string) {
	t.Helper()
	server := map[string]string{"master": cluster.RolePrimary, "slave": cluster.RoleReplica}
	var last []string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		last = last[:0]
		for _, n := range c.Nodes() {
			role, ok := want[n.Name]
			if !ok {
				continue
			}
			r, err := cluster.RedisInfoField(ctxFor(t, 2*time.Second), n.Addr, "replication", "role")
			if n.Role != role || server[r] != role {
				last = append(last, fmt.Sprintf("%s: Nodes %s, server %q (%v), want %s", n.Name, n.Role, r, err, role))
			}
		}
		if len(last) == 0 {
			return
		}
	}
	t.Fatalf("roles not within a minute: %v", last)
}

// ownedKey writes prefix-i through the named master for the first i of
// its slots and returns that key.
func ownedKey(t *testing.T, c *Cluster, name, prefix string) string {
	t.Helper()
	for i := range 1000 {
		key := prefix + "-" + strconv.Itoa(i)
		_, err := cluster.RedisDo(ctxFor(t, 5*time.Second), addrOf(c, name), "SET", key, "1")
		if err == nil {
			return key
		}
		if !strings.Contains(err.Error(), "MOVED") {
			t.Fatalf("SET %s on %s: %v", key, name, err)
		}
	}
	t.Fatalf("%s owns none of 1000 keys", name)
	return ""
}

// addrOf returns the named node's address.
func addrOf(c *Cluster, name string) string {
	for _, n := range c.Nodes() {
		if n.Name == name {
			return n.Addr
		}
	}
	return ""
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
