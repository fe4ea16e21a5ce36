package nemesis

import (
	"bufio"
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster"
)

// TestBehaviourReset resets the links to n1 and checks what the network
// really did: a connection established through w0->n1 before the fault is
// reset (its client sees ECONNRESET) and the node drops its end too, a new
// connection through the link is refused until the heal, the connection
// through the unaffected w0->n2 keeps working, and after the heal a new
// connection through w0->n1 works.
func TestBehaviourReset(t *testing.T) {
	tr := startRun(t, cluster.Spec{System: cluster.Redis, Nodes: 2}, 1)
	old, other := dialRESP(t, tr.net.Addr("w0->n1")), dialRESP(t, tr.net.Addr("w0->n2"))
	for _, c := range []*respConn{old, other} {
		if err := c.ping(); err != nil {
			t.Fatalf("PING before the reset: %v", err)
		}
	}
	n1 := tr.direct(t, "n1")
	clients := func() int { return strings.Count(n1.ClientList(t.Context()).Val(), "cmd=") }
	before := clients()

	tr.run(t, Step{Fault: "reset", Targets: []string{"n1"}})
	if err := old.ping(); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("PING on the connection established before the reset: %v, want ECONNRESET", err)
	}
	waitFor(t, "n1 to drop its end of the reset connection", func() bool { return clients() < before })
	if c, err := net.DialTimeout("tcp", tr.net.Addr("w0->n1"), time.Second); err == nil {
		c.Close()
		t.Fatal("a new connection through the reset link w0->n1 was accepted")
	}
	if err := other.ping(); err != nil {
		t.Fatalf("PING through the unaffected w0->n2 during the reset: %v", err)
	}

	tr.healAll(t)
	if err := dialRESP(t, tr.net.Addr("w0->n1")).ping(); err != nil {
		t.Fatalf("PING on a new connection through w0->n1 after the heal: %v", err)
	}
	if r := tr.nemesisOps(t, "reset"); len(r) != 1 {
		t.Fatalf("recorded resets %v, want one", r)
	}
}

// respConn is a raw connection to a Redis server, so that the test sees
// the socket's own errors, with no client library to retry or reconnect.
type respConn struct {
	c net.Conn
	r *bufio.Reader
}

// dialRESP connects to addr, closed in t.Cleanup.
func dialRESP(t *testing.T, addr string) *respConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return &respConn{c: c, r: bufio.NewReader(c)}
}

// ping sends a PING and reads its reply, with the socket's error.
func (c *respConn) ping() error {
	if err := c.c.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return err
	}
	if _, err := c.c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := c.r.ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return errors.New("reply " + strings.TrimSpace(line) + ", want +PONG")
	}
	return nil
}
