package cluster

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startRedis runs a throwaway redis-server on a free 127.0.0.1 port and
// returns its address.
func startRedis(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not on PATH")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir := t.TempDir()
	cmd := exec.Command(bin, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := ping(addr, 200*time.Millisecond); err == nil {
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on %s did not become ready", addr)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// command sends one inline Redis command on a new connection and returns the
// first reply line.
func command(addr, cmd string, timeout time.Duration) (string, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte(cmd + "\r\n")); err != nil {
		return "", err
	}
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	if strings.HasPrefix(line, "$") {
		line, err = r.ReadString('\n')
	}
	return strings.TrimSpace(line), err
}

func ping(addr string, timeout time.Duration) (string, error) {
	return command(addr, "PING", timeout)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestLinkNames(t *testing.T) {
	n, err := NewNetwork()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	for _, name := range []string{"w1->n1", "w1->n2", "w2->n1", "n2->n1", "n2->n1/election", "peers->n3"} {
		if _, err := n.Link(name, "127.0.0.1:1"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := n.Link("w1->n1", "127.0.0.1:1"); err == nil {
		t.Error("duplicate link name accepted")
	}
	tests := []struct {
		name string
		got  []string
		want []string
	}{
		{"all", n.Links(), []string{"n2->n1", "n2->n1/election", "peers->n3", "w1->n1", "w1->n2", "w2->n1"}},
		{"from n2", n.LinksFrom("n2"), []string{"n2->n1", "n2->n1/election"}},
		{"from w1", n.LinksFrom("w1"), []string{"w1->n1", "w1->n2"}},
		{"to n1", n.LinksTo("n1"), []string{"n2->n1", "n2->n1/election", "w1->n1", "w2->n1"}},
		{"to nobody", n.LinksTo("n9"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !slices.Equal(tt.got, tt.want) {
				t.Errorf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
	if err := n.Cut("w9->n1"); !errors.Is(err, ErrNoLink) {
		t.Errorf("cut of unknown link: got %v, want ErrNoLink", err)
	}
	if err := n.Apply(Fault{Kind: "melt"}, "w1->n1"); err == nil {
		t.Error("unknown fault kind accepted")
	}
}

func TestNetworkFaultsAgainstRedis(t *testing.T) {
	redis1, redis2 := startRedis(t), startRedis(t)
	n, err := NewNetwork()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	a1, err := n.Link("w1->n1", redis1)
	if err != nil {
		t.Fatal(err)
	}
	a2, err := n.Link("w2->n1", redis1)
	if err != nil {
		t.Fatal(err)
	}
	if got := n.Upstream("w1->n1"); got != redis1 {
		t.Fatalf("Upstream = %q, want %q", got, redis1)
	}
	if got := n.Addr("w1->n1"); got != a1 {
		t.Fatalf("Addr = %q, want %q", got, a1)
	}
	for _, a := range []string{a1, a2} {
		if r, err := ping(a, time.Second); err != nil || r != "+PONG" {
			t.Fatalf("ping through %s: %q, %v", a, r, err)
		}
	}

	// A connection opened before the cut hangs once the cut is in place.
	held, err := net.Dial("tcp", a1)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()

	t.Run("cut drops data, keeps connections open", func(t *testing.T) {
		if err := n.Cut("w1->n1"); err != nil {
			t.Fatal(err)
		}
		if got := n.Faulty(); !slices.Equal(got, []string{"w1->n1"}) {
			t.Errorf("Faulty = %v", got)
		}
		_, err := ping(a1, 300*time.Millisecond)
		if !isTimeout(err) {
			t.Fatalf("ping through cut link: got %v, want a timeout", err)
		}
		_ = held.SetDeadline(time.Now().Add(300 * time.Millisecond))
		if _, err := held.Write([]byte("PING\r\n")); err != nil {
			t.Fatalf("write on held connection: %v", err)
		}
		if _, err := held.Read(make([]byte, 16)); !isTimeout(err) {
			t.Fatalf("read on held connection through cut: got %v, want a timeout", err)
		}
		if r, err := ping(a2, time.Second); err != nil || r != "+PONG" {
			t.Fatalf("other link affected by the cut: %q, %v", r, err)
		}
		if err := n.Cut("w1->n1"); err != nil {
			t.Fatalf("cutting twice: %v", err)
		}
	})

	t.Run("heal restores", func(t *testing.T) {
		if err := n.Heal("w1->n1"); err != nil {
			t.Fatal(err)
		}
		if r, err := ping(a1, time.Second); err != nil || r != "+PONG" {
			t.Fatalf("ping after heal: %q, %v", r, err)
		}
		if got := n.Faulty(); len(got) != 0 {
			t.Errorf("Faulty after heal = %v", got)
		}
	})

	t.Run("reset refuses data", func(t *testing.T) {
		if err := n.Reset("w2->n1"); err != nil {
			t.Fatal(err)
		}
		_, err := ping(a2, time.Second)
		if err == nil || isTimeout(err) {
			t.Fatalf("ping through reset link: got %v, want a reset", err)
		}
		if err := n.HealAll(); err != nil {
			t.Fatal(err)
		}
		if r, err := ping(a2, time.Second); err != nil || r != "+PONG" {
			t.Fatalf("ping after HealAll: %q, %v", r, err)
		}
	})

	t.Run("latency needs proxies", func(t *testing.T) {
		if err := n.Latency([]string{"w1->n1"}, 150*time.Millisecond, 0); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("latency on a direct network: got %v, want ErrUnavailable", err)
		}
		p, err := NewNetwork(WithProxies())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		a, err := p.Link("w1->n1", redis1)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Latency([]string{"w1->n1"}, 150*time.Millisecond, 0); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if r, err := ping(a, 2*time.Second); err != nil || r != "+PONG" {
			t.Fatalf("ping with latency: %q, %v", r, err)
		}
		if el := time.Since(start); el < 150*time.Millisecond {
			t.Errorf("ping with 150ms latency took %v", el)
		}
		if err := p.Heal("w1->n1"); err != nil {
			t.Fatal(err)
		}
		if got := p.Faulty(); len(got) != 0 {
			t.Errorf("Faulty after heal = %v", got)
		}
	})

	t.Run("set upstream moves new connections", func(t *testing.T) {
		if err := n.SetUpstream("w1->n1", redis2); err != nil {
			t.Fatal(err)
		}
		if got := n.Addr("w1->n1"); got != a1 {
			t.Fatalf("listening address moved from %s to %s", a1, got)
		}
		_, port2, _ := net.SplitHostPort(redis2)
		c, err := net.Dial("tcp", a1)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(time.Second))
		fmt.Fprint(c, "CONFIG GET port\r\n")
		var got []byte
		buf := make([]byte, 128)
		for !strings.Contains(string(got), port2+"\r\n") {
			k, err := c.Read(buf)
			if err != nil {
				t.Fatalf("new connection reached %q (%v), want the server on port %s", got, err, port2)
			}
			got = append(got, buf[:k]...)
		}
	})

	t.Run("close releases every port", func(t *testing.T) {
		if err := n.Close(); err != nil {
			t.Fatal(err)
		}
		if err := n.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		for _, a := range []string{a1, a2} {
			c, err := net.DialTimeout("tcp", a, time.Second)
			if err == nil {
				c.Close()
				t.Errorf("%s still accepts connections after Close", a)
			}
		}
		if _, err := n.Link("w3->n1", redis1); !errors.Is(err, ErrNetworkClosed) {
			t.Errorf("Link after Close: %v", err)
		}
	})
}

// BenchmarkCutHeal measures how long a partition takes to be put in place
// and lifted on one link (two nft transactions): the delay between a fault's
// scheduled time and its effect.
func BenchmarkCutHeal(b *testing.B) {
	n, err := NewNetwork()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { n.Close() })
	if _, err := n.Link("w0->n1", "127.0.0.1:1"); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := n.Cut("w0->n1"); err != nil {
			b.Fatal(err)
		}
		if err := n.Heal("w0->n1"); err != nil {
			b.Fatal(err)
		}
	}
}

// dialHelperEnv names the address TestDialHelper dials when the test binary
// runs as the helper of a process with another group id.
const dialHelperEnv = "JEPSEN_LITE_TEST_DIAL"

// TestDialHelper is not a test: run with dialHelperEnv set (by
// startSourceConn, with a group id of its own), it dials that address and
// then, for each Redis command on a line of its stdin, writes the command
// and prints the first line of the reply, or "error: " and what failed
// (within a second). Its first line is its connection's local address, or
// the dial's error.
func TestDialHelper(t *testing.T) {
	addr := os.Getenv(dialHelperEnv)
	if addr == "" {
		t.Skip("the helper of the per-source link tests")
	}
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	defer c.Close()
	fmt.Println(c.LocalAddr())
	r := bufio.NewReader(c)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		_ = c.SetDeadline(time.Now().Add(time.Second))
		if _, err := c.Write([]byte(in.Text() + "\r\n")); err != nil {
			fmt.Println("error:", err)
			continue
		}
		line, err := r.ReadString('\n')
		if err != nil {
			fmt.Println("error:", err)
			continue
		}
		fmt.Println(strings.TrimSpace(line))
	}
}

// sourceConn is a connection held by a helper process running with a
// group id of its own.
type sourceConn struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Scanner
	local string // the connection's local address, or the dial's error
}

// startSourceConn starts TestDialHelper as root with primary group id gid,
// dialling addr.
func startSourceConn(t *testing.T, gid int, addr string) *sourceConn {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestDialHelper$")
	cmd.Env = append(os.Environ(), dialHelperEnv+"="+addr)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 0, Gid: uint32(gid), NoSetGroups: true}, Pdeathsig: syscall.SIGKILL}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &sourceConn{cmd: cmd, in: in, out: bufio.NewScanner(stdout)}
	t.Cleanup(c.close)
	if !c.out.Scan() {
		t.Fatalf("the helper of group %d printed nothing", gid)
	}
	c.local = c.out.Text()
	return c
}

// do sends a Redis command and returns the reply's first line or "error: ...".
func (c *sourceConn) do(t *testing.T, cmd string) string {
	t.Helper()
	if _, err := io.WriteString(c.in, cmd+"\n"); err != nil {
		t.Fatal(err)
	}
	if !c.out.Scan() {
		t.Fatalf("the helper ended: %v", c.out.Err())
	}
	return c.out.Text()
}

func (c *sourceConn) close() {
	c.in.Close()
	_ = c.cmd.Wait()
}

// The group ids of the per-source link tests.
const (
	testGidA = 0x4a4c0 + 901
	testGidB = 0x4a4c0 + 902
	testGidC = 0x4a4c0 + 903
)

// TestLinkFromTellsSourcesApart runs two processes with their own group
// ids that dial the one address of a Redis server's per-source links, and
// checks that the kernel gives each its own link: a cut of one source's
// link (both ways, and each direction alone) and a reset leave the other
// source's connection alone, a connection from any other group reaches no
// server, the heal restores, and removing the links and closing the
// network leaves nothing.
func TestLinkFromTellsSourcesApart(t *testing.T) {
	redis := startRedis(t)
	n, err := NewNetwork()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	addr, err := n.LinkFrom("a->r", testGidA, redis)
	if err != nil {
		t.Fatal(err)
	}
	addrB, err := n.LinkFrom("b->r", testGidB, redis)
	if err != nil {
		t.Fatal(err)
	}
	if addrB != addr || n.Addr("a->r") != addr || n.Addr("b->r") != addr {
		t.Fatalf("per-source links to one upstream on %s and %s, want one shared address", addr, addrB)
	}
	if got := n.Upstream("b->r"); got != redis {
		t.Fatalf("Upstream = %q, want %q", got, redis)
	}
	if got := n.Links(); !slices.Equal(got, []string{"a->r", "b->r"}) {
		t.Fatalf("Links = %v", got)
	}
	a, b := startSourceConn(t, testGidA, addr), startSourceConn(t, testGidB, addr)
	for name, c := range map[string]*sourceConn{"a": a, "b": b} {
		if r := c.do(t, "PING"); r != "+PONG" {
			t.Fatalf("source %s through its link (local %s): %q", name, c.local, r)
		}
	}
	t.Run("other groups reach nothing", func(t *testing.T) {
		if _, err := ping(addr, 300*time.Millisecond); !isTimeout(err) {
			t.Errorf("root's ping of the shared address: got %v, want a timeout", err)
		}
		c := startSourceConn(t, testGidC, addr)
		if r := c.do(t, "PING"); !strings.Contains(r, "timeout") {
			t.Errorf("a third group's ping of the shared address: got %q, want a timeout", r)
		}
	})
	t.Run("cut per source", func(t *testing.T) {
		if err := n.Cut("a->r"); err != nil {
			t.Fatal(err)
		}
		if r := a.do(t, "PING"); !strings.Contains(r, "timeout") {
			t.Errorf("source a through its cut link: got %q, want a timeout", r)
		}
		if r := b.do(t, "PING"); r != "+PONG" {
			t.Errorf("source b while a's link is cut: got %q", r)
		}
		if c := startSourceConn(t, testGidA, addr); !strings.HasPrefix(c.local, "error:") || !strings.Contains(c.local, "timeout") {
			t.Errorf("a new connection of source a through its cut link: %q, want a timeout", c.local)
		}
		if err := n.Heal("a->r"); err != nil {
			t.Fatal(err)
		}
		fresh := startSourceConn(t, testGidA, addr)
		if r := fresh.do(t, "PING"); r != "+PONG" {
			t.Errorf("source a after the heal: got %q", r)
		}
	})
	t.Run("one direction per source", func(t *testing.T) {
		for _, tt := range []struct {
			dir       Direction
			delivered bool // whether the INCR reaches the server
		}{{DirectionForward, false}, {DirectionBack, true}} {
			before := b.do(t, "INCRBY k 0")
			c := startSourceConn(t, testGidA, addr)
			if err := n.Apply(Fault{Kind: FaultCut, Direction: tt.dir}, "a->r"); err != nil {
				t.Fatal(err)
			}
			if r := c.do(t, "INCR k"); !strings.Contains(r, "timeout") {
				t.Errorf("%s cut: source a's INCR got %q, want a timeout", tt.dir, r)
			}
			after := b.do(t, "INCRBY k 0")
			if delivered := after != before; delivered != tt.delivered {
				t.Errorf("%s cut of a's link: k went from %s to %s as seen by b; the INCR delivered: %v, want %v", tt.dir, before, after, delivered, tt.delivered)
			}
			if err := n.Heal("a->r"); err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Run("reset per source", func(t *testing.T) {
		held := startSourceConn(t, testGidA, addr)
		if r := held.do(t, "PING"); r != "+PONG" {
			t.Fatalf("source a before the reset: %q", r)
		}
		if err := n.Reset("a->r"); err != nil {
			t.Fatal(err)
		}
		if r := held.do(t, "PING"); !strings.Contains(r, "reset") {
			t.Errorf("source a's held connection through its reset link: got %q, want a reset", r)
		}
		if r := b.do(t, "PING"); r != "+PONG" {
			t.Errorf("source b while a's link is reset: got %q", r)
		}
		// The server's end of a's connection is destroyed too; b's stays.
		direct, err := net.Dial("tcp", redis)
		if err != nil {
			t.Fatal(err)
		}
		defer direct.Close()
		gone := false
		for deadline := time.Now().Add(5 * time.Second); !gone && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			list := clientList(t, direct)
			if !strings.Contains(list, "addr="+b.local+" ") {
				t.Fatalf("source b's connection %s is not among the server's clients:\n%s", b.local, list)
			}
			gone = !strings.Contains(list, "addr="+held.local+" ")
		}
		if !gone {
			t.Errorf("the server's end of source a's reset connection %s stayed", held.local)
		}
		if err := n.Heal("a->r"); err != nil {
			t.Fatal(err)
		}
		if r := startSourceConn(t, testGidA, addr).do(t, "PING"); r != "+PONG" {
			t.Errorf("source a after the reset's heal: got %q", r)
		}
		if r := b.do(t, "PING"); r != "+PONG" {
			t.Errorf("source b after a's reset: got %q", r)
		}
	})
	t.Run("refusals", func(t *testing.T) {
		if _, err := n.LinkFrom("a2->r", testGidA, redis); err == nil {
			t.Error("a second link of one group to one upstream accepted")
		}
		if _, err := n.LinkFrom("root->r", 0, redis); err == nil {
			t.Error("a per-source link of group 0 accepted")
		}
		if err := n.SetUpstream("a->r", "127.0.0.1:1"); err == nil {
			t.Error("SetUpstream of a per-source link accepted")
		}
	})
	t.Run("remove closes one source's connections", func(t *testing.T) {
		if r := a.do(t, "PING"); r != "+PONG" {
			t.Fatalf("source a before Remove: %q", r)
		}
		if err := n.Remove("a->r"); err != nil {
			t.Fatal(err)
		}
		if r := a.do(t, "PING"); !strings.HasPrefix(r, "error:") {
			t.Errorf("source a's connection after its link's Remove: got %q, want an error", r)
		}
		if r := b.do(t, "PING"); r != "+PONG" {
			t.Errorf("source b after a's link was removed: got %q", r)
		}
		if err := n.Remove("b->r"); err != nil {
			t.Fatal(err)
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			t.Errorf("the shared address %s still accepts connections after its last link's Remove", addr)
		}
	})
	t.Run("close leaves no table", func(t *testing.T) {
		if _, err := n.LinkFrom("a->r", testGidA, redis); err != nil {
			t.Fatal(err)
		}
		if err := n.Close(); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("nft", "list", "tables").CombinedOutput()
		if err != nil {
			t.Fatalf("nft list tables: %v: %s", err, out)
		}
		if strings.Contains(string(out), n.Table()) {
			t.Errorf("table %s left after Close:\n%s", n.Table(), out)
		}
	})
}

// TestLinkFromThroughProxies checks that with WithProxies each per-source
// link has a proxy of its own: latency on one source's link delays that
// source's replies, and the heal removes it.
func TestLinkFromThroughProxies(t *testing.T) {
	redis := startRedis(t)
	n, err := NewNetwork(WithProxies())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	addr, err := n.LinkFrom("a->r", testGidA, redis)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.LinkFrom("b->r", testGidB, redis); err != nil {
		t.Fatal(err)
	}
	a, b := startSourceConn(t, testGidA, addr), startSourceConn(t, testGidB, addr)
	if err := n.Latency([]string{"a->r"}, 300*time.Millisecond, 0); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if r := a.do(t, "PING"); r != "+PONG" {
		t.Fatalf("source a with latency: %q", r)
	}
	if el := time.Since(start); el < 300*time.Millisecond {
		t.Errorf("source a's PING with 300ms latency on its link took %v", el)
	}
	if r := b.do(t, "PING"); r != "+PONG" {
		t.Fatalf("source b: %q", r)
	}
	if got := n.Faulty(); !slices.Equal(got, []string{"a->r"}) {
		t.Errorf("Faulty = %v, want a->r", got)
	}
	if err := n.Heal("a->r"); err != nil {
		t.Fatal(err)
	}
	if got := n.Faulty(); len(got) != 0 {
		t.Errorf("Faulty after the heal = %v", got)
	}
}

// clientList returns the server's CLIENT LIST, asked on c.
func clientList(t *testing.T, c net.Conn) string {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("CLIENT LIST\r\n")); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	head, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(head, "$") {
		t.Fatalf("CLIENT LIST: %q, %v", head, err)
	}
	size, err := strconv.Atoi(strings.TrimSpace(head[1:]))
	if err != nil {
		t.Fatal(err)
	}
	body := make([]byte, size+2)
	if _, err := io.ReadFull(r, body); err != nil {
		t.Fatal(err)
	}
	return string(body)
}
