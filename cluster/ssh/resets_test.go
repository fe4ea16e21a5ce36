//go:build sshhosts

package ssh

// resets_test.go checks the resets of the links on hosts, each direction
// of a link between nodes (peerLink, sharedLink) and of a worker's link,
// in the sockets of both ends: ss on the hosts and on the harness.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
)

// resetBound bounds the wait for a reset's two ends to be gone, and for
// the watchers to end: a bound of failure, far above the tens of
// milliseconds they take.
const resetBound = 10 * time.Second

// resetDirections are the directions a test resets, each in turn.
var resetDirections = []linknet.Direction{linknet.DirectionForward, linknet.DirectionBack, linknet.DirectionBoth}

// dirName names a direction in a subtest's name.
func dirName(d linknet.Direction) string {
	if d == linknet.DirectionBoth {
		return "both"
	}
	return string(d)
}

// TestPeerLinkResets resets the link "n2->n1" of a Redis primary and
// replica in each direction, and checks the resets of peerLink.
func TestPeerLinkResets(t *testing.T) {
	inv, nss := newTestHostsIn(t, 2)
	spec := cluster.Spec{System: cluster.Redis, Topology: cluster.TopologyPrimaryReplica, Nodes: 2}
	checkPeerResets(t, inv, nss, spec, "n2", "n1")
}

// TestSharedLinkResets resets the sentinel topology's shared link
// "peers->n1" in each direction, and checks the resets of sharedLink on
// a sentinel's connection to n1.
func TestSharedLinkResets(t *testing.T) {
	inv, nss := newTestHostsIn(t, 5)
	spec := cluster.Spec{System: cluster.Redis, Topology: cluster.TopologySentinel, Nodes: 2}
	checkPeerResets(t, inv, nss, spec, "s1", "n1")
}

// checkPeerResets starts the spec's cluster and resets the link from the
// node from to the node to in each direction: a connection from from's
// host to to's server, reset while data flows on it, loses both ends on
// both hosts; a new connection is refused while the forward direction is
// reset; after the heal a connection works. After Close nothing is left
// on the hosts, and no watcher runs.
func checkPeerResets(t *testing.T, inv Inventory, nss []string, spec cluster.Spec, fromName, toName string) {
	nw, err := cluster.NewNetwork(linknet.WithLinkAddress(inv.Harness))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nw.Close() })
	c, err := Start(ctxFor(t, 2*time.Minute), inv, spec, nw)
	if err != nil {
		t.Fatal(err)
	}
	left := c.Remains()
	t.Cleanup(func() { _ = c.Close() })
	from, to := nodeNamed(t, c, fromName), nodeNamed(t, c, toName)
	ns := nss[hostIndex(t, inv, from.conn.host.Name)]
	link := cluster.ReplicationLink(spec, "n2", "n1")
	for i, dir := range resetDirections {
		t.Run(dirName(dir), func(t *testing.T) {
			src := net.JoinHostPort(from.conn.host.Address, strconv.Itoa(41000+i))
			hc := dialFrom(t, ns, src, to.addr)
			hc.subscribe(t)
			fromEnd, toEnd := onHost(from.conn, src, to.addr), onHost(to.conn, to.addr, src)
			for _, e := range []sockets{fromEnd, toEnd} {
				if !e.exist(t) {
					t.Fatalf("%s before the reset: no socket", e)
				}
			}
			if err := nw.Apply(linknet.Fault{Kind: linknet.FaultReset, Direction: dir}, link); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = nw.Heal(link) })
			flow(t, hc, dir, to.addr)
			waitGone(t, fromEnd, toEnd)
			if dir != linknet.DirectionBack {
				if out, err := dialOnce(ns, to.addr); !strings.Contains(out, "Connection refused") {
					t.Errorf("a new connection from %s to %s during the reset: %v %s, want it refused", from.name, to.name, err, out)
				}
			}
			if err := nw.Heal(link); err != nil {
				t.Fatal(err)
			}
			dialFrom(t, ns, net.JoinHostPort(from.conn.host.Address, strconv.Itoa(42000+i)), to.addr).ping(t)
		})
	}
	checkClosed(t, c, nw, left)
}

// TestWorkerLinkResets resets a worker's link to a node on a host (the
// harness's own link, whose target is on the host) in each direction: a
// connection from the harness, reset while data flows on it, loses its
// end on the harness and the node's end on its host; a new connection is
// refused while the forward direction is reset; after the heal a
// connection works. After Close nothing is left, and no watcher runs.
func TestWorkerLinkResets(t *testing.T) {
	inv := newTestHosts(t, 1)
	nw, err := cluster.NewNetwork(linknet.WithLinkAddress(inv.Harness))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nw.Close() })
	c, err := Start(ctxFor(t, 2*time.Minute), inv, cluster.Spec{System: cluster.Redis, Nodes: 1}, nw)
	if err != nil {
		t.Fatal(err)
	}
	left := c.Remains()
	t.Cleanup(func() { _ = c.Close() })
	n1 := c.nodes[0]
	via, err := nw.Link("w1->n1", n1.addr)
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range resetDirections {
		t.Run(dirName(dir), func(t *testing.T) {
			rc := dialResp(t, via)
			rc.subscribe(t)
			local := rc.conn.LocalAddr().String()
			worker, node := onHarness(local, via), onHost(n1.conn, n1.addr, local)
			for _, e := range []sockets{worker, node} {
				if !e.exist(t) {
					t.Fatalf("%s before the reset: no socket", e)
				}
			}
			if err := nw.Apply(linknet.Fault{Kind: linknet.FaultReset, Direction: dir}, "w1->n1"); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = nw.Heal("w1->n1") })
			flow(t, rc, dir, n1.addr)
			waitGone(t, worker, node)
			if dir != linknet.DirectionBack {
				if c, err := net.DialTimeout("tcp", via, resetBound); err == nil || !strings.Contains(err.Error(), "connection refused") {
					if c != nil {
						c.Close()
					}
					t.Errorf("a new connection to %s during the reset: %v, want it refused", via, err)
				}
			}
			if err := nw.Heal("w1->n1"); err != nil {
				t.Fatal(err)
			}
			dialResp(t, via).ping(t)
		})
	}
	checkClosed(t, c, nw, left)
}

// flow makes data flow on the subscribed connection in the reset's
// direction: a PING from the dialling end, answered where it arrives when
// the forward direction is reset; for the back direction only, a message
// published to its channel (through a connection of the harness's own,
// on no reset link), which the server sends while the connection has
// nothing unacknowledged: only the reset's watcher then closes the
// dialling end, which has nothing to send.
func flow(t *testing.T, r *respConn, dir linknet.Direction, server string) {
	t.Helper()
	if dir != linknet.DirectionBack {
		r.send(t, "PING")
		return
	}
	if _, err := cluster.RedisDo(ctxFor(t, resetBound), server, "PUBLISH", "ch", "x"); err != nil {
		t.Fatal(err)
	}
}

// checkClosed closes the cluster and the network and checks that nothing
// of the cluster is left on its hosts (the run's table is in left's
// check) and that no reset watcher runs.
func checkClosed(t *testing.T, c *Cluster, nw *linknet.Network, left func() []string) {
	t.Helper()
	if err := c.Close(); err != nil {
		t.Error(err)
	}
	checkNothingLeft(t, left())
	if err := nw.Close(); err != nil {
		t.Error(err)
	}
	for _, f := range []string{"ssh.(*Cluster).watchResets", "linknet.(*Network).resetWatch"} {
		for deadline := time.Now().Add(resetBound); running(f); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Errorf("%s runs after Close", f)
				break
			}
		}
	}
}

// running reports whether a goroutine runs the function f.
func running(f string) bool {
	buf := make([]byte, 1<<20)
	return strings.Contains(string(buf[:runtime.Stack(buf, true)]), f+"(")
}

// sockets are the TCP sockets, on a host or on the harness, with an
// address and a peer: one end of a connection.
type sockets struct {
	host       *conn // nil: the harness
	addr, peer string
}

// onHost returns the sockets on the connection's host.
func onHost(c *conn, addr, peer string) sockets { return sockets{host: c, addr: addr, peer: peer} }

// onHarness returns the sockets on the harness.
func onHarness(addr, peer string) sockets { return sockets{addr: addr, peer: peer} }

// String names the end.
func (s sockets) String() string {
	where := "the harness"
	if s.host != nil {
		where = s.host.host.Name
	}
	return fmt.Sprintf("%s->%s on %s", s.addr, s.peer, where)
}

// exist reports whether ss lists such a socket in a connected state.
func (s sockets) exist(t *testing.T) bool {
	t.Helper()
	args := []string{"-t", "-n", "-H", "state", "connected", "src", s.addr, "dst", s.peer}
	var out string
	var err error
	if s.host == nil {
		var b []byte
		b, err = exec.Command("ss", args...).Output()
		out = string(b)
	} else {
		out, err = s.host.run(ctxFor(t, resetBound), "ss "+strings.Join(args, " "), nil)
	}
	if err != nil {
		t.Fatalf("ss for %s: %v", s, err)
	}
	return strings.TrimSpace(out) != ""
}

// waitGone waits, within resetBound, until none of the ends exists, and
// fails the test for those left.
func waitGone(t *testing.T, ends ...sockets) {
	t.Helper()
	for deadline := time.Now().Add(resetBound); ; time.Sleep(20 * time.Millisecond) {
		var left []string
		for _, e := range ends {
			if e.exist(t) {
				left = append(left, e.String())
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("left after the reset, within %v: %v", resetBound, left)
		}
	}
}

// respConn is a connection to a Redis server: a Go one from the harness,
// or socat's in a host's namespace (its input and output).
type respConn struct {
	conn net.Conn // the harness's, nil for socat's
	in   io.Writer
	out  *bufio.Reader
}

// dialResp connects from the harness to addr.
func dialResp(t *testing.T, addr string) *respConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, resetBound)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &respConn{conn: c, in: c, out: bufio.NewReader(c)}
}

// dialFrom connects, from src (address and port) in the network namespace
// ns, to addr: socat, whose input and output the test holds, killed at the
// test's cleanup.
func dialFrom(t *testing.T, ns, src, addr string) *respConn {
	t.Helper()
	cmd := exec.Command("ip", "netns", "exec", ns, "socat", "-", "TCP:"+addr+",bind="+src+",reuseaddr")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return &respConn{in: in, out: bufio.NewReader(out)}
}

// send writes an inline command.
func (r *respConn) send(t *testing.T, cmd string) {
	t.Helper()
	if _, err := io.WriteString(r.in, cmd+"\r\n"); err != nil {
		t.Fatalf("send %s: %v", cmd, err)
	}
}

// ping sends PING and fails the test unless the reply is +PONG.
func (r *respConn) ping(t *testing.T) {
	t.Helper()
	r.send(t, "PING")
	if r.conn != nil {
		_ = r.conn.SetReadDeadline(time.Now().Add(resetBound))
	}
	line, err := r.out.ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "+PONG" {
		t.Fatalf("PING: %q %v", line, err)
	}
}

// subscribe subscribes the connection to the channel "ch" and reads the
// reply.
func (r *respConn) subscribe(t *testing.T) {
	t.Helper()
	r.send(t, "SUBSCRIBE ch")
	if r.conn != nil {
		_ = r.conn.SetReadDeadline(time.Now().Add(resetBound))
	}
	var reply []string
	for range 6 { // *3, $9, subscribe, $2, ch, :1
		line, err := r.out.ReadString('\n')
		if err != nil {
			t.Fatalf("SUBSCRIBE: %q %v", reply, err)
		}
		reply = append(reply, strings.TrimSpace(line))
	}
	if reply[2] != "subscribe" || reply[5] != ":1" {
		t.Fatalf("SUBSCRIBE: %q", reply)
	}
	if r.conn != nil {
		_ = r.conn.SetReadDeadline(time.Time{})
	}
}

// dialOnce connects from the namespace ns to addr and closes, and returns
// what socat wrote.
func dialOnce(ns, addr string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), resetBound)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ip", "netns", "exec", ns, "socat", "-u", "/dev/null", "TCP:"+addr+",connect-timeout=5").CombinedOutput()
	return string(out), err
}

// nodeNamed returns the cluster's named node.
func nodeNamed(t *testing.T, c *Cluster, name string) *node {
	t.Helper()
	n, err := c.node(name)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// hostIndex returns the inventory's index of the named host.
func hostIndex(t *testing.T, inv Inventory, name string) int {
	t.Helper()
	for i, h := range inv.Hosts {
		if h.Name == name {
			return i
		}
	}
	t.Fatalf("no host %s", name)
	return -1
}
