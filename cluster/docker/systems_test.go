package docker

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
)

// startSpec starts a cluster of spec on a fresh network and registers the
// cleanup of both.
func startSpec(t *testing.T, spec cluster.Spec) (*Cluster, *linknet.Network) {
	t.Helper()
	nw, err := cluster.NewNetwork()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nw.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	spec.LogDir = t.TempDir()
	c, err := Start(ctx, spec, nw)
	if err != nil {
		t.Fatalf("Start %+v: %v", spec, err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if left := leftovers(t, c.RunID()); left != "" {
			t.Errorf("left behind after Close: %s", left)
		}
	})
	return c, nw
}

// eventually polls cond every 100 ms until it holds or d passes.
func eventually(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// TestSystemsStartWithTheirLinks starts every system but Redis (tested on
// its own) and checks the nodes, their roles and the node-to-node links,
// which must be the local backend's.
func TestSystemsStartWithTheirLinks(t *testing.T) {
	requireEngineAndImage(t)
	tests := []struct {
		name  string
		spec  cluster.Spec
		links string
	}{
		{"postgres", cluster.Spec{System: cluster.Postgres, Nodes: 1}, ""},
		{"zookeeper standalone", cluster.Spec{System: cluster.ZooKeeper, Nodes: 1}, ""},
		{"zookeeper ensemble", cluster.Spec{System: cluster.ZooKeeper, Nodes: 3},
			"n1->n2 n1->n2/election n1->n3 n1->n3/election n2->n1 n2->n1/election n2->n3 n2->n3/election n3->n1 n3->n1/election n3->n2 n3->n2/election"},
		{"etcd single", cluster.Spec{System: cluster.Etcd, Nodes: 1}, ""},
		{"etcd cluster", cluster.Spec{System: cluster.Etcd, Nodes: 3}, "n1->n2 n1->n3 n2->n1 n2->n3 n3->n1 n3->n2"},
		{"mariadb", cluster.Spec{System: cluster.MariaDB, Nodes: 1}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requireTested(t, tt.spec.System)
			c, nw := startSpec(t, tt.spec)
			want, err := cluster.Layout(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			got := c.Nodes()
			if len(got) != len(want) {
				t.Fatalf("nodes %v, want the layout %v", got, want)
			}
			info, err := cluster.LookupSystem(tt.spec.System)
			if err != nil {
				t.Fatal(err)
			}
			ready := info.Ready
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			for i, n := range got {
				if n.Name != want[i].Name || n.Role != want[i].Role {
					t.Errorf("node %d is %s/%q, want %s/%q", i, n.Name, n.Role, want[i].Name, want[i].Role)
				}
				if err := ready(ctx, n.Addr); err != nil {
					t.Errorf("node %s at %s: %v", n.Name, n.Addr, err)
				}
			}
			if links := strings.Join(nw.Links(), " "); links != tt.links {
				t.Errorf("links %q, want %q", links, tt.links)
			}
		})
	}
}

// TestPostgresKeepsDataWithPersistence writes a row, kills and starts the
// node, and reads it back.
func TestPostgresKeepsDataWithPersistence(t *testing.T) {
	requireEngineAndImage(t)
	requireTested(t, cluster.Postgres)
	c, _ := startSpec(t, cluster.Spec{System: cluster.Postgres, Nodes: 1, Persistence: true})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	addr := c.Nodes()[0].Addr
	exec := func(sql string) error {
		conn, err := pgx.Connect(ctx, cluster.PostgresDSN(addr))
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	if err := exec("CREATE TABLE kept (v int); INSERT INTO kept VALUES (7)"); err != nil {
		t.Fatal(err)
	}
	if err := c.Kill(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, cluster.PostgresDSN(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var v int
	if err := conn.QueryRow(ctx, "SELECT v FROM kept").Scan(&v); err != nil || v != 7 {
		t.Fatalf("SELECT after kill and start = %d, %v; want 7", v, err)
	}
}

// TestZooKeeperIsolatedLeaderLosesQuorum cuts every link into and out of
// the leader and checks that the others elect a new leader while the old
// one stops serving, and that the heal brings it back as a follower.
func TestZooKeeperIsolatedLeaderLosesQuorum(t *testing.T) {
	requireEngineAndImage(t)
	requireTested(t, cluster.ZooKeeper)
	c, nw := startSpec(t, cluster.Spec{System: cluster.ZooKeeper, Nodes: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	modes := func() map[string]string {
		out := map[string]string{}
		for _, n := range c.Nodes() {
			attempt, cancel := context.WithTimeout(ctx, time.Second)
			m, err := cluster.ZooKeeperMode(attempt, n.Addr)
			cancel()
			if err != nil {
				m = "down"
			}
			out[n.Name] = m
		}
		return out
	}
	var leader string
	if !eventually(30*time.Second, func() bool {
		for n, m := range modes() {
			if m == "leader" {
				leader = n
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no leader: %v", modes())
	}
	var cut []string
	for _, l := range nw.Links() {
		if from, to, _ := linknet.SplitName(l); from == leader || to == leader {
			cut = append(cut, l)
		}
	}
	if err := nw.Cut(cut...); err != nil {
		t.Fatal(err)
	}
	if !eventually(30*time.Second, func() bool {
		m := modes()
		leaders := 0
		for n, mode := range m {
			if n != leader && mode == "leader" {
				leaders++
			}
		}
		return leaders == 1 && m[leader] != "leader" && m[leader] != "follower"
	}) {
		t.Fatalf("isolating leader %s: modes %v, want a new leader and %s not serving", leader, modes(), leader)
	}
	if err := nw.Heal(cut...); err != nil {
		t.Fatal(err)
	}
	if !eventually(60*time.Second, func() bool { return modes()[leader] == "follower" }) {
		t.Fatalf("after the heal: modes %v, want %s a follower", modes(), leader)
	}
}

// TestEtcdIsolatedMemberLosesQuorum cuts every peer link of one member,
// both the connections it dials and those dialled to it, and checks that
// the member turns unhealthy (no leader it can reach) while the other two
// keep a healthy cluster, that it is healthy again after the heal, and
// that its clock cannot be skewed (etcd is a Go program).
func TestEtcdIsolatedMemberLosesQuorum(t *testing.T) {
	requireEngineAndImage(t)
	requireTested(t, cluster.Etcd)
	c, nw := startSpec(t, cluster.Spec{System: cluster.Etcd, Nodes: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nodes := c.Nodes()
	healthy := func(addr string) bool {
		attempt, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		return cluster.EtcdReady(attempt, addr) == nil
	}
	var peerLinks []string
	for _, l := range nw.Links() {
		if from, to, _ := linknet.SplitName(l); (from == "n3" || to == "n3") && !strings.HasPrefix(from, "w") {
			peerLinks = append(peerLinks, l)
		}
	}
	if want := "n1->n3 n2->n3 n3->n1 n3->n2"; strings.Join(peerLinks, " ") != want {
		t.Fatalf("n3's peer links %v, want %s", peerLinks, want)
	}
	if err := nw.Cut(peerLinks...); err != nil {
		t.Fatal(err)
	}
	if !eventually(30*time.Second, func() bool { return !healthy(nodes[2].Addr) }) {
		t.Fatal("n3 stayed healthy with every peer link cut")
	}
	if !eventually(30*time.Second, func() bool { return healthy(nodes[0].Addr) && healthy(nodes[1].Addr) }) {
		t.Fatal("n1 and n2 lost their health when n3 was cut off")
	}
	if err := nw.Heal(peerLinks...); err != nil {
		t.Fatal(err)
	}
	if !eventually(30*time.Second, func() bool { return healthy(nodes[2].Addr) }) {
		t.Fatal("n3 did not recover after the heal")
	}
	if err := c.SetClockOffset("n1", time.Minute); !errors.Is(err, cluster.ErrUnavailable) {
		t.Fatalf("SetClockOffset on etcd = %v, want ErrUnavailable", err)
	}
}

// requireTested skips a test of a system that this run does not sample
// (testedSystems), saying so.
func requireTested(t *testing.T, system string) {
	t.Helper()
	if only := testedSystems(); only != nil && !slices.Contains(only, system) {
		t.Skipf("SKIPPED: JEPSEN_LITE_DOCKER_SYSTEMS=%s does not name %s", strings.Join(only, ","), system)
	}
}

// TestNeedsLinks requires a network for the node-to-node links exactly of
// the clusters whose declared topology has peer links and which have more
// than one node, whatever the system: a declared system's partitions then
// cut its peers here too.
func TestNeedsLinks(t *testing.T) {
	tests := []struct {
		name string
		spec cluster.Spec
		want bool
	}{
		{"redis masters", cluster.Spec{System: cluster.Redis, Nodes: 3}, false},
		{"redis primary-replica", cluster.Spec{System: cluster.Redis, Topology: cluster.TopologyPrimaryReplica, Nodes: 2}, true},
		{"redis sentinel", cluster.Spec{System: cluster.Redis, Topology: cluster.TopologySentinel, Nodes: 2}, true},
		{"postgres", cluster.Spec{System: cluster.Postgres, Nodes: 1}, false},
		{"zookeeper alone", cluster.Spec{System: cluster.ZooKeeper, Nodes: 1}, false},
		{"zookeeper ensemble", cluster.Spec{System: cluster.ZooKeeper, Nodes: 3}, true},
		{"etcd alone", cluster.Spec{System: cluster.Etcd, Nodes: 1}, false},
		{"etcd cluster", cluster.Spec{System: cluster.Etcd, Nodes: 3}, true},
		{"mariadb", cluster.Spec{System: cluster.MariaDB, Nodes: 1}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			layout, err := cluster.Layout(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			if got := needsLinks(tt.spec, layout); got != tt.want {
				t.Errorf("needsLinks(%+v) = %v, want %v", tt.spec, got, tt.want)
			}
		})
	}
}
