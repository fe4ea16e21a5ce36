package local

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jepsen-lite/jepsen-lite/cluster"
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
func startCluster(t *testing.T, spec cluster.Spec, opts ...Option) (*Cluster, *cluster.Network) {
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
	pids := c.Pids()
	root := c.root
	var addrs []string
	for _, n := range c.nodes {
		addrs = append(addrs, n.addr())
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	for name, pid := range pids {
		if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process group of %s (pid %d) still exists after Close (kill 0: %v)", name, pid, err)
		}
		if out, err := exec.Command("pgrep", "-g", itoa(pid)).Output(); err == nil {
			t.Errorf("pgrep -g %d finds %s after Close", pid, out)
		}
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Errorf("temp dir %s remains after Close (%v)", root, err)
	}
	for _, a := range addrs {
		if conn, err := net.DialTimeout("tcp", a, 200*time.Millisecond); err == nil {
			conn.Close()
			t.Errorf("%s still listens after Close", a)
		}
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

func TestRedisMasters(t *testing.T) {
	requireBinaries(t, "redis-server")
	logDir := t.TempDir()
	began := time.Now()
	c, _ := startCluster(t, cluster.Spec{System: cluster.Redis, Nodes: 5, LogDir: logDir})
	t.Logf("5 masters ready in %v", time.Since(began))

	var names []string
	for _, n := range c.Nodes() {
		names = append(names, n.Name)
		if n.Role != cluster.RolePrimary {
			t.Errorf("%s has role %q, want %q", n.Name, n.Role, cluster.RolePrimary)
		}
		if got := mustDo(t, n.Addr, "SET", "k", n.Name); got != "OK" {
			t.Fatalf("SET on %s: %v", n.Name, got)
		}
		if _, err := os.Stat(filepath.Join(logDir, n.Name+".log")); err != nil {
			t.Errorf("log of %s: %v", n.Name, err)
		}
	}
	if want := []string{"n1", "n2", "n3", "n4", "n5"}; !slices.Equal(names, want) {
		t.Fatalf("nodes %v, want %v", names, want)
	}
	if c.System() != cluster.Redis {
		t.Errorf("System() = %q", c.System())
	}
	n1 := c.Nodes()[0].Addr
	n2 := c.Nodes()[1].Addr

	t.Run("kill and restart without persistence loses keys", func(t *testing.T) {
		if err := c.Kill(ctxT(t, 5*time.Second), "n1"); err != nil {
			t.Fatal(err)
		}
		if _, err := cluster.RedisDo(ctxT(t, time.Second), n1, "PING"); err == nil {
			t.Fatal("killed node still answers")
		}
		if err := c.Start(ctxT(t, 10*time.Second), "n1"); err != nil {
			t.Fatal(err)
		}
		if got := mustDo(t, n1, "GET", "k"); got != nil {
			t.Errorf("GET k after restart = %v, want nil (no persistence)", got)
		}
		if got := mustDo(t, n2, "GET", "k"); got != "n2" {
			t.Errorf("other node lost its key: %v", got)
		}
	})

	t.Run("pause and resume", func(t *testing.T) {
		if err := c.Pause(ctxT(t, time.Second), "n2"); err != nil {
			t.Fatal(err)
		}
		_, err := cluster.RedisDo(ctxT(t, 300*time.Millisecond), n2, "PING")
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("PING to a paused node: got %v, want a timeout", err)
		}
		if err := c.Resume(ctxT(t, time.Second), "n2"); err != nil {
			t.Fatal(err)
		}
		if got := mustDo(t, n2, "GET", "k"); got != "n2" {
			t.Errorf("GET k after resume = %v", got)
		}
	})

	t.Run("paused node can be killed and closed", func(t *testing.T) {
		if err := c.Pause(ctxT(t, time.Second), "n3"); err != nil {
			t.Fatal(err)
		}
		if err := c.Kill(ctxT(t, 5*time.Second), "n3"); err != nil {
			t.Fatal(err)
		}
		if err := c.Start(ctxT(t, 10*time.Second), "n3"); err != nil {
			t.Fatal(err)
		}
		if err := c.Pause(ctxT(t, time.Second), "n4"); err != nil {
			t.Fatal(err)
		}
		// n4 stays paused: Close must still kill it (checked at cleanup).
	})

	t.Run("unknown node", func(t *testing.T) {
		if err := c.Kill(ctxT(t, time.Second), "n9"); !errors.Is(err, ErrUnknownNode) {
			t.Errorf("Kill(n9) = %v, want ErrUnknownNode", err)
		}
	})

	t.Run("no failover without replicas", func(t *testing.T) {
		if _, err := c.Primary(ctxT(t, time.Second)); !errors.Is(err, cluster.ErrUnavailable) {
			t.Errorf("Primary on masters = %v, want ErrUnavailable", err)
		}
	})
}

func TestRedisPersistenceSurvivesRestart(t *testing.T) {
	requireBinaries(t, "redis-server")
	c, _ := startCluster(t, cluster.Spec{System: cluster.Redis, Nodes: 1, Persistence: true})
	addr := c.Nodes()[0].Addr
	mustDo(t, addr, "SET", "k", "v")
	if err := c.Kill(ctxT(t, 5*time.Second), "n1"); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctxT(t, 10*time.Second), "n1"); err != nil {
		t.Fatal(err)
	}
	if got := mustDo(t, addr, "GET", "k"); got != "v" {
		t.Errorf("GET k after restart with appendonly = %v, want v", got)
	}
}

func TestRedisClockSkewExpiresKeys(t *testing.T) {
	requireBinaries(t, "redis-server")
	c, _ := startCluster(t, cluster.Spec{System: cluster.Redis, Nodes: 2})
	if c.skewLib == "" {
		t.Skipf("clock-skew library unavailable: %v", c.skewErr)
	}
	n1, n2 := c.Nodes()[0].Addr, c.Nodes()[1].Addr
	for _, a := range []string{n1, n2} {
		mustDo(t, a, "SET", "k", "v", "PX", "10000")
	}
	if err := c.SetClockOffset("n1", 20*time.Second); err != nil {
		t.Fatal(err)
	}
	if got := mustDo(t, n1, "GET", "k"); got != nil {
		t.Errorf("GET k on n1 after +20s = %v, want nil (expired)", got)
	}
	if got := mustDo(t, n2, "GET", "k"); got != "v" {
		t.Errorf("GET k on n2 = %v, want v (its clock is untouched)", got)
	}
	// TIME follows the skewed clock.
	r := mustDo(t, n1, "TIME").([]any)
	var sec int64
	for _, ch := range r[0].(string) {
		sec = sec*10 + int64(ch-'0')
	}
	if d := sec - time.Now().Unix(); d < 18 || d > 22 {
		t.Errorf("n1's TIME is %ds off the true time, want about +20s", d)
	}
	if err := c.SetClockOffset("n1", 0); err != nil {
		t.Fatal(err)
	}
	mustDo(t, n1, "SET", "k2", "v", "PX", "10000")
	if got := mustDo(t, n1, "GET", "k2"); got != "v" {
		t.Errorf("GET k2 after resetting the offset = %v", got)
	}
	if err := c.SetClockOffset("n7", time.Second); !errors.Is(err, ErrUnknownNode) {
		t.Errorf("SetClockOffset(n7) = %v", err)
	}
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

func TestPostgres(t *testing.T) {
	bin, err := postgresBinDir()
	if err != nil {
		t.Skipf("PostgreSQL not installed: %v", err)
	}
	requireBinaries(t, filepath.Join(bin, "postgres"))
	began := time.Now()
	c, _ := startCluster(t, cluster.Spec{System: cluster.Postgres, Nodes: 1})
	t.Logf("postgres ready in %v", time.Since(began))
	nodes := c.Nodes()
	if len(nodes) != 1 || nodes[0].Name != "n1" {
		t.Fatalf("nodes %v", nodes)
	}
	dsn := cluster.PostgresDSN(nodes[0].Addr)
	exec := func(sql string) error {
		ctx := ctxT(t, 5*time.Second)
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return err
		}
		defer conn.Close(context.Background())
		_, err = conn.Exec(ctx, sql)
		return err
	}
	if err := exec("create table t (k text primary key)"); err != nil {
		t.Fatal(err)
	}
	if err := exec("insert into t values ('a')"); err != nil {
		t.Fatal(err)
	}

	t.Run("kill and restart keeps committed rows", func(t *testing.T) {
		if err := c.Kill(ctxT(t, 5*time.Second), "n1"); err != nil {
			t.Fatal(err)
		}
		if err := exec("select 1"); err == nil {
			t.Fatal("killed postgres still answers")
		}
		if err := c.Start(ctxT(t, 30*time.Second), "n1"); err != nil {
			t.Fatal(err)
		}
		if err := exec("insert into t values ('a')"); err == nil {
			t.Error("row inserted before the crash is missing after restart")
		}
	})

	t.Run("pause holds queries", func(t *testing.T) {
		if err := c.Pause(ctxT(t, time.Second), "n1"); err != nil {
			t.Fatal(err)
		}
		ctx := ctxT(t, 300*time.Millisecond)
		if _, err := pgx.Connect(ctx, dsn); err == nil {
			t.Error("connected to a paused postgres")
		}
		if err := c.Resume(ctxT(t, time.Second), "n1"); err != nil {
			t.Fatal(err)
		}
		if err := exec("select 1"); err != nil {
			t.Errorf("after resume: %v", err)
		}
	})

	t.Run("clock skew", func(t *testing.T) {
		if c.skewLib == "" {
			t.Skipf("clock-skew library unavailable: %v", c.skewErr)
		}
		if err := c.SetClockOffset("n1", time.Hour); err != nil {
			t.Fatal(err)
		}
		ctx := ctxT(t, 5*time.Second)
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		var skew float64
		if err := conn.QueryRow(ctx, "select extract(epoch from clock_timestamp()) - $1::float8", float64(time.Now().UnixNano())/1e9).Scan(&skew); err != nil {
			t.Fatal(err)
		}
		if skew < 3590 || skew > 3610 {
			t.Errorf("postgres clock is %.1fs off, want about +3600s", skew)
		}
	})
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

func TestZooKeeperEnsemble(t *testing.T) {
	requireBinaries(t, "java", cluster.ZooKeeperJar)
	began := time.Now()
	c, nw := startCluster(t, cluster.Spec{System: cluster.ZooKeeper, Nodes: 3})
	t.Logf("3-node ensemble ready in %v", time.Since(began))
	modes := map[string]string{}
	leader := ""
	for _, n := range c.Nodes() {
		m, err := cluster.ZooKeeperMode(ctxT(t, 2*time.Second), n.Addr)
		if err != nil {
			t.Fatalf("%s: %v", n.Name, err)
		}
		modes[n.Name] = m
		if m == "leader" {
			leader = n.Name
		}
	}
	if leader == "" {
		t.Fatalf("no leader: %v", modes)
	}
	if got := nw.LinksTo("n1"); len(got) != 4 {
		t.Errorf("links to n1: %v, want quorum and election links from n2 and n3", got)
	}
	// Isolate a node: it stops serving, the other two keep (or elect) a
	// leader; after the heal it serves again. With the library preloaded the
	// leader is isolated (every election connection crosses a link);
	// without it a follower, whose isolation holds even so.
	target := leader
	if c.skewLib == "" {
		for _, n := range c.Nodes() {
			if modes[n.Name] == "follower" {
				target = n.Name
				break
			}
		}
	}
	var cut []string
	for _, l := range nw.Links() {
		from, to, _ := cluster.SplitLinkName(l)
		if from == target || to == target {
			cut = append(cut, l)
		}
	}
	if err := nw.Cut(cut...); err != nil {
		t.Fatal(err)
	}
	cutAt := time.Now()
	f, _ := c.node(target)
	waitFor(t, 20*time.Second, "isolated node stops serving", func() bool {
		_, err := cluster.ZooKeeperMode(ctxT(t, time.Second), f.addr())
		return err != nil
	})
	var others []string
	for _, n := range c.Nodes() {
		if n.Name != target {
			others = append(others, n.Addr)
		}
	}
	waitFor(t, 20*time.Second, "the other two serve with a leader among them", func() bool {
		leaders := 0
		for _, a := range others {
			m, err := cluster.ZooKeeperMode(ctxT(t, time.Second), a)
			if err != nil {
				return false
			}
			if m == "leader" {
				leaders++
			}
		}
		return leaders == 1
	})
	t.Logf("isolated %s (%s); the others serve %v after the cut", target, modes[target], time.Since(cutAt))
	if err := nw.Heal(cut...); err != nil {
		t.Fatal(err)
	}
	healAt := time.Now()
	waitFor(t, 20*time.Second, "isolated node serves again after the heal", func() bool {
		_, err := cluster.ZooKeeperMode(ctxT(t, time.Second), f.addr())
		return err == nil
	})
	t.Logf("%s serves again %v after the heal", target, time.Since(healAt))
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

func TestEtcdCluster(t *testing.T) {
	requireBinaries(t, "etcd")
	began := time.Now()
	c, nw := startCluster(t, cluster.Spec{System: cluster.Etcd, Nodes: 3})
	t.Logf("3-member etcd ready in %v", time.Since(began))
	if got := nw.LinksTo("n1"); !slices.Contains(got, cluster.LinkName(cluster.PeersLink, "n1")) {
		t.Fatalf("links to n1: %v", got)
	}
	// Silence n1: it loses its quorum and stops being healthy; the others
	// stay healthy. After the heal it is healthy again.
	if err := nw.Cut(cluster.LinkName(cluster.PeersLink, "n1")); err != nil {
		t.Fatal(err)
	}
	n1 := c.Nodes()[0].Addr
	waitFor(t, 20*time.Second, "silenced n1 unhealthy", func() bool {
		return cluster.EtcdReady(ctxT(t, time.Second), n1) != nil
	})
	for _, n := range c.Nodes()[1:] {
		waitFor(t, 10*time.Second, n.Name+" healthy while n1 is silenced", func() bool {
			return cluster.EtcdReady(ctxT(t, time.Second), n.Addr) == nil
		})
	}
	if err := nw.HealAll(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "n1 healthy after the heal", func() bool {
		return cluster.EtcdReady(ctxT(t, time.Second), n1) == nil
	})
	// A killed member rejoins with its data dir.
	if err := c.Kill(ctxT(t, 5*time.Second), "n2"); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctxT(t, 30*time.Second), "n2"); err != nil {
		t.Fatal(err)
	}
}

// redisRole returns the role INFO replication reports ("master", "slave").
func redisRole(t *testing.T, addr string) string {
	t.Helper()
	r, err := cluster.RedisInfoField(ctxT(t, 2*time.Second), addr, "replication", "role")
	if err != nil {
		t.Fatalf("INFO replication on %s: %v", addr, err)
	}
	return r
}

func TestRedisPrimaryReplica(t *testing.T) {
	requireBinaries(t, "redis-server")
	c, nw := startCluster(t, cluster.Spec{System: cluster.Redis, Topology: cluster.TopologyPrimaryReplica, Nodes: 2})
	nodes := c.Nodes()
	if len(nodes) != 2 || nodes[0].Role != cluster.RolePrimary || nodes[1].Role != cluster.RoleReplica {
		t.Fatalf("nodes %+v", nodes)
	}
	n1, n2 := nodes[0].Addr, nodes[1].Addr
	if got := nw.Upstream("n2->n1"); got != n1 {
		t.Fatalf("replication link n2->n1 goes to %q, want %s", got, n1)
	}
	if p, err := c.Primary(ctxT(t, time.Second)); err != nil || p != "n1" {
		t.Fatalf("Primary = %q, %v", p, err)
	}
	mustDo(t, n1, "SET", "a", "1")
	waitFor(t, 10*time.Second, "replica receives a", func() bool { return mustDo(t, n2, "GET", "a") == "1" })

	t.Run("cut replication link", func(t *testing.T) {
		if err := nw.Cut("n2->n1"); err != nil {
			t.Fatal(err)
		}
		mustDo(t, n1, "SET", "b", "1")
		time.Sleep(300 * time.Millisecond)
		if got := mustDo(t, n2, "GET", "b"); got != nil {
			t.Fatalf("write reached the replica through a cut link: %v", got)
		}
		if err := nw.Heal("n2->n1"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 15*time.Second, "replica catches up after the heal", func() bool { return mustDo(t, n2, "GET", "b") == "1" })
	})

	t.Run("promote the replica", func(t *testing.T) {
		if err := c.Promote(ctxT(t, 5*time.Second), "n2"); err != nil {
			t.Fatal(err)
		}
		if p, err := c.Primary(ctxT(t, time.Second)); err != nil || p != "n2" {
			t.Fatalf("Primary after promote = %q, %v", p, err)
		}
		if r := redisRole(t, n2); r != "master" {
			t.Errorf("n2 role %q after promote", r)
		}
		if got := mustDo(t, n2, "SET", "c", "1"); got != "OK" {
			t.Errorf("write on promoted n2: %v", got)
		}
		// The old primary is left running as a primary: a split brain.
		if r := redisRole(t, n1); r != "master" {
			t.Errorf("n1 role %q after promote, want master (left alone)", r)
		}
		if got := c.Nodes()[1].Role; got != cluster.RolePrimary {
			t.Errorf("n2's Node.Role after promote = %q, want primary", got)
		}
		if got := c.Nodes()[0].Role; got != cluster.RolePrimary {
			t.Errorf("n1's Node.Role after promote = %q, want primary (left alone)", got)
		}
	})

	t.Run("old primary follows the new one", func(t *testing.T) {
		if err := c.Follow(ctxT(t, 5*time.Second), "n1", "n2"); err != nil {
			t.Fatal(err)
		}
		if got := nw.Upstream("n1->n2"); got != n2 {
			t.Fatalf("link n1->n2 goes to %q, want %s", got, n2)
		}
		waitFor(t, 10*time.Second, "n1 receives c from n2", func() bool { return mustDo(t, n1, "GET", "c") == "1" })
		if r := redisRole(t, n1); r != "slave" {
			t.Errorf("n1 role %q after Follow", r)
		}
		if got := c.Nodes()[0].Role; got != cluster.RoleReplica {
			t.Errorf("n1's Node.Role after Follow = %q, want replica", got)
		}
	})
}

func TestRedisSentinel(t *testing.T) {
	requireBinaries(t, "redis-server", "redis-sentinel")
	began := time.Now()
	c, nw := startCluster(t, cluster.Spec{System: cluster.Redis, Topology: cluster.TopologySentinel, Nodes: 2})
	t.Logf("primary, replica and 3 sentinels ready in %v", time.Since(began))
	var names, roles []string
	for _, n := range c.Nodes() {
		names = append(names, n.Name)
		roles = append(roles, n.Role)
	}
	if want := []string{"n1", "n2", "s1", "s2", "s3"}; !slices.Equal(names, want) {
		t.Fatalf("nodes %v, want %v", names, want)
	}
	if want := []string{cluster.RolePrimary, cluster.RoleReplica, cluster.RoleSentinel, cluster.RoleSentinel, cluster.RoleSentinel}; !slices.Equal(roles, want) {
		t.Fatalf("roles %v, want %v", roles, want)
	}
	if got := nw.LinksTo("n1"); !slices.Equal(got, []string{"peers->n1"}) {
		t.Fatalf("links to n1: %v", got)
	}
	if p, err := c.Primary(ctxT(t, 2*time.Second)); err != nil || p != "n1" {
		t.Fatalf("Primary = %q, %v", p, err)
	}
	n1, n2 := c.Nodes()[0].Addr, c.Nodes()[1].Addr
	mustDo(t, n1, "SET", "a", "1")
	waitFor(t, 10*time.Second, "replica receives a", func() bool { return mustDo(t, n2, "GET", "a") == "1" })

	t.Run("promote asks the sentinels", func(t *testing.T) {
		began := time.Now()
		if err := c.Promote(ctxT(t, 10*time.Second), "n2"); err != nil {
			t.Fatal(err)
		}
		t.Logf("sentinel failover to n2 took %v", time.Since(began))
		if p, err := c.Primary(ctxT(t, time.Second)); err != nil || p != "n2" {
			t.Fatalf("Primary after promote = %q, %v", p, err)
		}
		if r := redisRole(t, n2); r != "master" {
			t.Errorf("n2 role %q after the failover", r)
		}
	})

	t.Run("sentinels fail over when the primary stops", func(t *testing.T) {
		if err := c.Pause(ctxT(t, time.Second), "n2"); err != nil {
			t.Fatal(err)
		}
		pausedAt := time.Now()
		waitFor(t, 30*time.Second, "sentinels promote n1", func() bool {
			p, err := c.Primary(ctxT(t, time.Second))
			return err == nil && p == "n1"
		})
		t.Logf("sentinels promoted n1 %v after n2 stopped", time.Since(pausedAt))
		if err := c.Resume(ctxT(t, time.Second), "n2"); err != nil {
			t.Fatal(err)
		}
	})
}
