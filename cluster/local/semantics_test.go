package local

import (
	"bufio"
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jepsen-lite/jepsen-lite/cluster"
)

// The tests of this file check the network's semantics against real
// servers: a cut holds connections and delivers what waited at its heal, a
// connection ends during a cut only as the OS ends it, a reset closes, and
// faults hit exactly the links they name. Waits are on conditions, with
// generous bounds; the only fixed waits are the cuts' own durations.

// generous bounds every wait of these tests.
const generous = 30 * time.Second

// respConn is a raw RESP connection through a link.
type respConn struct {
	net.Conn
	r *bufio.Reader
}

func dialResp(t *testing.T, addr string) *respConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return &respConn{c, bufio.NewReader(c)}
}

// send writes one inline command.
func (c *respConn) send(t *testing.T, cmd string) {
	t.Helper()
	if _, err := c.Write([]byte(cmd + "\r\n")); err != nil {
		t.Fatalf("send %q: %v", cmd, err)
	}
}

// reply reads one reply line within d.
func (c *respConn) reply(d time.Duration) (string, error) {
	_ = c.SetReadDeadline(time.Now().Add(d))
	line, err := c.r.ReadString('\n')
	return strings.TrimSpace(line), err
}

func TestCutDeliversRedisCommandAfterHeal(t *testing.T) {
	requireBinaries(t, "redis-server")
	c, nw := startCluster(t, cluster.Spec{System: cluster.Redis, Nodes: 1})
	direct := c.Nodes()[0].Addr
	via, err := nw.Link("w0->n1", direct)
	if err != nil {
		t.Fatal(err)
	}
	conn := dialResp(t, via)
	conn.send(t, "CLIENT ID")
	id, err := conn.reply(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := nw.Cut("w0->n1"); err != nil {
		t.Fatal(err)
	}
	conn.send(t, "INCR sent-during-cut")
	// A command on a new direct connection is answered while the cut
	// one has not arrived.
	time.Sleep(time.Second)
	if got := mustDo(t, direct, "GET", "sent-during-cut"); got != nil {
		t.Fatalf("the command crossed the cut: key is %v", got)
	}
	if err := nw.Heal("w0->n1"); err != nil {
		t.Fatal(err)
	}
	if r, err := conn.reply(generous); err != nil || r != ":1" {
		t.Fatalf("reply after the heal: %q, %v; want :1 on the same connection", r, err)
	}
	conn.send(t, "CLIENT ID")
	if again, err := conn.reply(5 * time.Second); err != nil || again != id {
		t.Fatalf("client id after the heal %q (%v), before %q: the connection was replaced", again, err, id)
	}
}

// startLinkedPostgres starts one PostgreSQL node and returns the network,
// the address of its link w0->n1, a context bounding the test, and two
// connections to the node: holder through the link and other direct. It
// skips the test where PostgreSQL is not installed.
func startLinkedPostgres(t *testing.T) (nw *cluster.Network, via string, ctx context.Context, holder, other *pgx.Conn) {
	t.Helper()
	bin, err := postgresBinDir()
	if err != nil {
		t.Skipf("PostgreSQL not installed: %v", err)
	}
	requireBinaries(t, filepath.Join(bin, "postgres"))
	c, nw := startCluster(t, cluster.Spec{System: cluster.Postgres, Nodes: 1})
	direct := c.Nodes()[0].Addr
	via, err = nw.Link("w0->n1", direct)
	if err != nil {
		t.Fatal(err)
	}
	ctx = ctxT(t, 2*generous)
	holder, err = pgx.Connect(ctx, cluster.PostgresDSN(via))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Close(context.Background()) })
	other, err = pgx.Connect(ctx, cluster.PostgresDSN(direct))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close(context.Background()) })
	return nw, via, ctx, holder, other
}

func TestCutKeepsIdlePostgresAdvisoryLock(t *testing.T) {
	nw, _, ctx, holder, other := startLinkedPostgres(t)
	tryLock := func() bool {
		var ok bool
		if err := other.QueryRow(ctx, "select pg_try_advisory_lock(42)").Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if _, err := holder.Exec(ctx, "select pg_advisory_lock(42)"); err != nil {
		t.Fatal(err)
	}
	if err := nw.Cut("w0->n1"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // the partition
	if tryLock() {
		t.Fatal("the lock was free during the partition: the holder's session ended")
	}
	if err := nw.Heal("w0->n1"); err != nil {
		t.Fatal(err)
	}
	if tryLock() {
		t.Fatal("the lock was free after the heal: the holder's session ended")
	}
	var released bool
	if err := holder.QueryRow(ctx, "select pg_advisory_unlock(42)").Scan(&released); err != nil || !released {
		t.Fatalf("the holder's release after the heal: %v, %v", released, err)
	}
	if !tryLock() {
		t.Fatal("the lock is not free after the holder released it")
	}
}

// tcpUserTimeout is the TCP_USER_TIMEOUT socket option of linux/tcp.h.
const tcpUserTimeout = 18

// setUserTimeout sets TCP_USER_TIMEOUT on a connection.
func setUserTimeout(t *testing.T, c net.Conn, d time.Duration) {
	t.Helper()
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, tcpUserTimeout, int(d.Milliseconds()))
	}); err != nil || serr != nil {
		t.Fatalf("TCP_USER_TIMEOUT: %v %v", err, serr)
	}
}

func TestCutLongerThanTimeoutsEndsConnection(t *testing.T) {
	requireBinaries(t, "redis-server")
	c, nw := startCluster(t, cluster.Spec{System: cluster.Redis, Nodes: 1})
	via, err := nw.Link("w0->n1", c.Nodes()[0].Addr)
	if err != nil {
		t.Fatal(err)
	}
	busy := dialResp(t, via) // unacknowledged data: TCP_USER_TIMEOUT ends it
	setUserTimeout(t, busy.Conn, 500*time.Millisecond)
	var d net.Dialer
	d.KeepAliveConfig = net.KeepAliveConfig{Enable: true, Idle: time.Second, Interval: time.Second, Count: 2}
	ic, err := d.Dial("tcp", via) // idle: keepalive ends it
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ic.Close() })
	idle := &respConn{ic, bufio.NewReader(ic)}
	for _, c := range []*respConn{busy, idle} {
		c.send(t, "PING")
		if r, err := c.reply(5 * time.Second); err != nil || r != "+PONG" {
			t.Fatalf("PING: %q %v", r, err)
		}
	}
	if err := nw.Cut("w0->n1"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nw.Heal("w0->n1") })
	busy.send(t, "PING")
	for name, c := range map[string]*respConn{"with unacknowledged data (TCP_USER_TIMEOUT)": busy, "idle (keepalive)": idle} {
		if _, err := c.reply(generous); !errors.Is(err, syscall.ETIMEDOUT) {
			t.Errorf("connection %s through a long cut: got %v, want ETIMEDOUT from the OS", name, err)
		}
	}
}

func TestResetClosesConnections(t *testing.T) {
	nw, via, ctx, holder, other := startLinkedPostgres(t)
	if _, err := holder.Exec(ctx, "select pg_advisory_lock(7)"); err != nil {
		t.Fatal(err)
	}
	if err := nw.Reset("w0->n1"); err != nil {
		t.Fatal(err)
	}
	// The next data on the connection resets the client's end.
	if _, err := holder.Exec(ctx, "select 1"); err == nil {
		t.Fatal("the holder's connection still works after a reset")
	}
	// The server's end is reset too: the session ended and freed the lock.
	waitFor(t, generous, "the reset session frees its advisory lock", func() bool {
		var ok bool
		if err := other.QueryRow(ctx, "select pg_try_advisory_lock(7)").Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	})
	// New connections are refused until the heal, then accepted.
	if _, err := net.DialTimeout("tcp", via, generous); err == nil {
		t.Fatal("a new connection was accepted on a reset link")
	}
	if err := nw.Heal("w0->n1"); err != nil {
		t.Fatal(err)
	}
	again, err := pgx.Connect(ctx, cluster.PostgresDSN(via))
	if err != nil {
		t.Fatalf("connect after the heal: %v", err)
	}
	again.Close(ctx)
}

func TestNodeCutKeepsReplicationConnection(t *testing.T) {
	requireBinaries(t, "redis-server")
	c, nw := startCluster(t, cluster.Spec{System: cluster.Redis, Topology: cluster.TopologyPrimaryReplica, Nodes: 2})
	n1, n2 := c.Nodes()[0].Addr, c.Nodes()[1].Addr
	mustDo(t, n1, "SET", "a", "1")
	waitFor(t, generous, "replica receives a", func() bool { return mustDo(t, n2, "GET", "a") == "1" })
	replicaID := func() string {
		r, ok := mustDo(t, n1, "CLIENT", "LIST", "TYPE", "replica").(string)
		if !ok {
			t.Fatalf("CLIENT LIST: %v", r)
		}
		id, _, _ := strings.Cut(r, " ")
		return id
	}
	before := replicaID()
	if err := nw.Cut("n2->n1"); err != nil {
		t.Fatal(err)
	}
	mustDo(t, n1, "SET", "b", "1")
	time.Sleep(time.Second) // the partition
	if got := mustDo(t, n2, "GET", "b"); got != nil {
		t.Fatalf("a write crossed the cut replication link: %v", got)
	}
	if err := nw.Heal("n2->n1"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, generous, "the replica receives what waited", func() bool { return mustDo(t, n2, "GET", "b") == "1" })
	if after := replicaID(); after != before {
		t.Errorf("the replica's connection was replaced: %s before the cut, %s after the heal", before, after)
	}
}

func TestCutsHitExactlyTheLinksTheyName(t *testing.T) {
	requireBinaries(t, "redis-server")
	c, nw := startCluster(t, cluster.Spec{System: cluster.Redis, Nodes: 3})
	nodes := c.Nodes()
	conns := map[string]*respConn{}
	for _, w := range []string{"w1", "w2"} {
		for _, n := range nodes {
			name := cluster.LinkName(w, n.Name)
			via, err := nw.Link(name, n.Addr)
			if err != nil {
				t.Fatal(err)
			}
			conns[name] = dialResp(t, via)
		}
	}
	direct := map[string]string{}
	for _, n := range nodes {
		direct[n.Name] = n.Addr
	}
	// Kleppmann's shape (w1 reaches n1 and n2, w2 reaches n2 and n3),
	// with one-way cuts for w2: its requests reach n1 but the replies do
	// not come back; its requests to n2 are dropped.
	steps := []struct {
		link string
		f    cluster.Fault
	}{
		{"w1->n3", cluster.Fault{Kind: cluster.FaultCut}},
		{"w2->n1", cluster.Fault{Kind: cluster.FaultCut, Direction: cluster.DirectionBack}},
		{"w2->n2", cluster.Fault{Kind: cluster.FaultCut, Direction: cluster.DirectionForward}},
	}
	for _, s := range steps {
		if err := nw.Apply(s.f, s.link); err != nil {
			t.Fatal(err)
		}
	}
	for name, conn := range conns {
		conn.send(t, "SET "+strings.ReplaceAll(name, "->", "-")+" 1")
	}
	type want struct{ arrives, answered bool }
	wants := map[string]want{
		"w1->n1": {true, true}, "w1->n2": {true, true}, "w1->n3": {false, false},
		"w2->n1": {true, false}, "w2->n2": {false, false}, "w2->n3": {true, true},
	}
	for name, w := range wants {
		_, node, _ := cluster.SplitLinkName(name)
		key := strings.ReplaceAll(name, "->", "-")
		if w.arrives {
			waitFor(t, generous, name+"'s command reaches "+node, func() bool { return mustDo(t, direct[node], "GET", key) == "1" })
		}
		if w.answered {
			if r, err := conns[name].reply(generous); err != nil || r != "+OK" {
				t.Errorf("%s: reply %q, %v", name, r, err)
			}
		}
	}
	// Every command through an open direction has arrived and been
	// answered; those through a cut one have not arrived, or not come back.
	for name, w := range wants {
		_, node, _ := cluster.SplitLinkName(name)
		key := strings.ReplaceAll(name, "->", "-")
		if !w.arrives {
			if got := mustDo(t, direct[node], "GET", key); got != nil {
				t.Errorf("%s: the command crossed a cut (key is %v)", name, got)
			}
		}
		if !w.answered {
			if r, err := conns[name].reply(100 * time.Millisecond); err == nil {
				t.Errorf("%s: a reply %q crossed a cut", name, r)
			}
		}
	}
	if err := nw.HealAll(); err != nil {
		t.Fatal(err)
	}
	for name, w := range wants {
		if w.answered {
			continue
		}
		if r, err := conns[name].reply(generous); err != nil || r != "+OK" {
			t.Errorf("%s: reply after the heal %q, %v; want +OK on the same connection", name, r, err)
		}
	}
}
