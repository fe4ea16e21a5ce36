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
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
)

// The tests of this file check the network's semantics against real
// servers beyond what the backends' conformance suite (cluster/conformance)
// checks of cuts of each shape: a cut keeps an idle PostgreSQL session and
// its advisory lock, a connection ends during a cut only as the OS ends it,
// and a reset closes. Waits are on conditions, with generous bounds; the
// only fixed waits are the cuts' own durations.

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

// startLinkedPostgres starts one PostgreSQL node and returns the network,
// the address of its link w0->n1, a context bounding the test, and two
// connections to the node: holder through the link and other direct. It
// skips the test where PostgreSQL is not installed.
func startLinkedPostgres(t *testing.T) (nw *linknet.Network, via string, ctx context.Context, holder, other *pgx.Conn) {
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
