package linknet

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
	n, err := New()
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

// faultFixture is a Network with two links to one Redis server, a second
// Redis server, and a connection held open on the first link.
type faultFixture struct {
	n              *Network
	redis1, redis2 string
	a1, a2         string // the addresses of the links w1->n1 and w2->n1
	held           net.Conn
}

// newFaultFixture starts the servers and the Network of a faultFixture.
func newFaultFixture(t *testing.T) *faultFixture {
	redis1, redis2 := startRedis(t), startRedis(t)
	n, err := New()
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
	t.Cleanup(func() { held.Close() })
	return &faultFixture{n: n, redis1: redis1, redis2: redis2, a1: a1, a2: a2, held: held}
}

// TestNetworkFaultsAgainstRedis applies each fault to links to a real
// server and checks what a client sees through them.
func TestNetworkFaultsAgainstRedis(t *testing.T) {
	f := newFaultFixture(t)
	t.Run("cut drops data, keeps connections open", f.cut)
	t.Run("heal restores", f.heal)
	t.Run("reset refuses data", f.reset)
	t.Run("latency needs proxies", f.latency)
	t.Run("set upstream moves new connections", f.setUpstream)
	t.Run("close releases every port", f.close)
}

// cut checks that a cut drops the data of the link's connections and keeps
// them open, on that link only.
func (f *faultFixture) cut(t *testing.T) {
	if err := f.n.Cut("w1->n1"); err != nil {
		t.Fatal(err)
	}
	if got := f.n.Faulty(); !slices.Equal(got, []string{"w1->n1"}) {
		t.Errorf("Faulty = %v", got)
	}
	_, err := ping(f.a1, 300*time.Millisecond)
	if !isTimeout(err) {
		t.Fatalf("ping through cut link: got %v, want a timeout", err)
	}
	_ = f.held.SetDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := f.held.Write([]byte("PING\r\n")); err != nil {
		t.Fatalf("write on held connection: %v", err)
	}
	if _, err := f.held.Read(make([]byte, 16)); !isTimeout(err) {
		t.Fatalf("read on held connection through cut: got %v, want a timeout", err)
	}
	if r, err := ping(f.a2, time.Second); err != nil || r != "+PONG" {
		t.Fatalf("other link affected by the cut: %q, %v", r, err)
	}
	if err := f.n.Cut("w1->n1"); err != nil {
		t.Fatalf("cutting twice: %v", err)
	}
}

// heal checks that a heal restores the cut link.
func (f *faultFixture) heal(t *testing.T) {
	if err := f.n.Heal("w1->n1"); err != nil {
		t.Fatal(err)
	}
	if r, err := ping(f.a1, time.Second); err != nil || r != "+PONG" {
		t.Fatalf("ping after heal: %q, %v", r, err)
	}
	if got := f.n.Faulty(); len(got) != 0 {
		t.Errorf("Faulty after heal = %v", got)
	}
}

// reset checks that a reset link refuses data until HealAll.
func (f *faultFixture) reset(t *testing.T) {
	if err := f.n.Reset("w2->n1"); err != nil {
		t.Fatal(err)
	}
	_, err := ping(f.a2, time.Second)
	if err == nil || isTimeout(err) {
		t.Fatalf("ping through reset link: got %v, want a reset", err)
	}
	if err := f.n.HealAll(); err != nil {
		t.Fatal(err)
	}
	if r, err := ping(f.a2, time.Second); err != nil || r != "+PONG" {
		t.Fatalf("ping after HealAll: %q, %v", r, err)
	}
}

// latency checks that latency needs a network WithProxies, and delays the
// replies on one.
func (f *faultFixture) latency(t *testing.T) {
	if err := f.n.Latency([]string{"w1->n1"}, 150*time.Millisecond, 0); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("latency on a direct network: got %v, want ErrUnavailable", err)
	}
	p, err := New(WithProxies())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	a, err := p.Link("w1->n1", f.redis1)
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
}

// setUpstream checks that SetUpstream keeps the link's address and sends
// new connections to the new upstream.
func (f *faultFixture) setUpstream(t *testing.T) {
	if err := f.n.SetUpstream("w1->n1", f.redis2); err != nil {
		t.Fatal(err)
	}
	if got := f.n.Addr("w1->n1"); got != f.a1 {
		t.Fatalf("listening address moved from %s to %s", f.a1, got)
	}
	_, port2, _ := net.SplitHostPort(f.redis2)
	c, err := net.Dial("tcp", f.a1)
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
}

// close checks that Close, twice, releases every link's port and refuses new links.
func (f *faultFixture) close(t *testing.T) {
	if err := f.n.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.n.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for _, a := range []string{f.a1, f.a2} {
		c, err := net.DialTimeout("tcp", a, time.Second)
		if err == nil {
			c.Close()
			t.Errorf("%s still accepts connections after Close", a)
		}
	}
	if _, err := f.n.Link("w3->n1", f.redis1); !errors.Is(err, ErrClosed) {
		t.Errorf("Link after Close: %v", err)
	}
}

// BenchmarkCutHeal measures how long a partition takes to be put in place
// and lifted on one link (two nft transactions): the delay between a fault's
// scheduled time and its effect.
func BenchmarkCutHeal(b *testing.B) {
	n, err := New()
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
// and prints the first line of the reply, or "error: " and what failed.
// A dial or command that should succeed gets helperPatience; one that
// should stall (a dial whose address is in dialStallEnv, a line that
// begins "stall ") gets helperStall, after which it reports a timeout.
// Its first line is its connection's local address, or the dial's error.
func TestDialHelper(t *testing.T) {
	addr := os.Getenv(dialHelperEnv)
	if addr == "" {
		t.Skip("the helper of the per-source link tests")
	}
	within := helperPatience
	if os.Getenv(dialStallEnv) != "" {
		within = helperStall
	}
	c, err := net.DialTimeout("tcp", addr, within)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	defer c.Close()
	fmt.Println(c.LocalAddr())
	r := bufio.NewReader(c)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		cmd, stall := strings.CutPrefix(in.Text(), "stall ")
		within := helperPatience
		if stall {
			within = helperStall
		}
		_ = c.SetDeadline(time.Now().Add(within))
		if _, err := c.Write([]byte(cmd + "\r\n")); err != nil {
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

// helperPatience bounds what TestDialHelper expects to succeed: long
// enough for a loaded machine, so that only a fault makes it time out.
const helperPatience = 15 * time.Second

// helperStall is how long TestDialHelper waits for what a cut stalls
// before it reports the timeout the test expects.
const helperStall = time.Second

// dialStallEnv, set, tells TestDialHelper that its dial should stall.
const dialStallEnv = "JEPSEN_LITE_TEST_DIAL_STALL"

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
	return startHelper(t, gid, addr, false)
}

// startStalledConn starts TestDialHelper as startSourceConn does, for a
// dial that should stall: it gives up after helperStall.
func startStalledConn(t *testing.T, gid int, addr string) *sourceConn {
	t.Helper()
	return startHelper(t, gid, addr, true)
}

// startHelper starts TestDialHelper as root with primary group id gid,
// dialling addr, told whether its dial should stall.
func startHelper(t *testing.T, gid int, addr string, stall bool) *sourceConn {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestDialHelper$")
	cmd.Env = append(os.Environ(), dialHelperEnv+"="+addr)
	if stall {
		cmd.Env = append(cmd.Env, dialStallEnv+"=1")
	}
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

// stall sends a Redis command that should stall and returns the reply's
// first line or "error: ..." (a timeout after helperStall).
func (c *sourceConn) stall(t *testing.T, cmd string) string {
	t.Helper()
	return c.do(t, "stall "+cmd)
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
// sourceFixture is a Network with the per-source links of two group ids to
// one Redis server, and a connection of each source through its link.
type sourceFixture struct {
	n     *Network
	redis string
	addr  string      // the address the two links share
	a, b  *sourceConn // the connections of the sources testGidA and testGidB
}

// newSourceFixture starts the server, the Network and the connections of
// a sourceFixture.
func newSourceFixture(t *testing.T) *sourceFixture {
	redis := startRedis(t)
	n, err := New()
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
	return &sourceFixture{n: n, redis: redis, addr: addr, a: a, b: b}
}

// TestLinkFromTellsSourcesApart checks that per-source links to one
// upstream share one address and that each carries, and faults, the
// connections of its own group id only.
func TestLinkFromTellsSourcesApart(t *testing.T) {
	f := newSourceFixture(t)
	t.Run("other groups reach nothing", f.others)
	t.Run("cut per source", f.cut)
	t.Run("one direction per source", f.oneDirection)
	t.Run("reset per source", f.reset)
	t.Run("refusals", f.refusals)
	t.Run("remove closes one source's connections", f.remove)
	t.Run("close leaves no table", f.close)
}

// others checks that a process of another group id, root or a third group,
// reaches no server through the shared address.
func (f *sourceFixture) others(t *testing.T) {
	if _, err := ping(f.addr, 300*time.Millisecond); !isTimeout(err) {
		t.Errorf("root's ping of the shared address: got %v, want a timeout", err)
	}
	c := startSourceConn(t, testGidC, f.addr)
	if r := c.stall(t, "PING"); !strings.Contains(r, "timeout") {
		t.Errorf("a third group's ping of the shared address: got %q, want a timeout", r)
	}
}

// cut checks that a cut of one source's link hangs its connections, old and
// new, and leaves the other source's alone.
func (f *sourceFixture) cut(t *testing.T) {
	if err := f.n.Cut("a->r"); err != nil {
		t.Fatal(err)
	}
	if r := f.a.stall(t, "PING"); !strings.Contains(r, "timeout") {
		t.Errorf("source a through its cut link: got %q, want a timeout", r)
	}
	if r := f.b.do(t, "PING"); r != "+PONG" {
		t.Errorf("source b while a's link is cut: got %q", r)
	}
	if c := startStalledConn(t, testGidA, f.addr); !strings.HasPrefix(c.local, "error:") || !strings.Contains(c.local, "timeout") {
		t.Errorf("a new connection of source a through its cut link: %q, want a timeout", c.local)
	}
	if err := f.n.Heal("a->r"); err != nil {
		t.Fatal(err)
	}
	fresh := startSourceConn(t, testGidA, f.addr)
	if r := fresh.do(t, "PING"); r != "+PONG" {
		t.Errorf("source a after the heal: got %q", r)
	}
}

// oneDirection checks that a cut in one direction of one source's link drops
// that direction's data only.
func (f *sourceFixture) oneDirection(t *testing.T) {
	for _, tt := range []struct {
		dir       Direction
		delivered bool // whether the INCR reaches the server
	}{{DirectionForward, false}, {DirectionBack, true}} {
		before := f.b.do(t, "INCRBY k 0")
		c := startSourceConn(t, testGidA, f.addr)
		if err := f.n.Apply(Fault{Kind: FaultCut, Direction: tt.dir}, "a->r"); err != nil {
			t.Fatal(err)
		}
		if r := c.stall(t, "INCR k"); !strings.Contains(r, "timeout") {
			t.Errorf("%s cut: source a's INCR got %q, want a timeout", tt.dir, r)
		}
		after := f.b.do(t, "INCRBY k 0")
		if delivered := after != before; delivered != tt.delivered {
			t.Errorf("%s cut of a's link: k went from %s to %s as seen by b; the INCR delivered: %v, want %v", tt.dir, before, after, delivered, tt.delivered)
		}
		if err := f.n.Heal("a->r"); err != nil {
			t.Fatal(err)
		}
	}
}

// reset checks that a reset of one source's link closes both ends of its
// connections and leaves the other source's alone.
func (f *sourceFixture) reset(t *testing.T) {
	held := startSourceConn(t, testGidA, f.addr)
	if r := held.do(t, "PING"); r != "+PONG" {
		t.Fatalf("source a before the reset: %q", r)
	}
	if err := f.n.Reset("a->r"); err != nil {
		t.Fatal(err)
	}
	if r := held.do(t, "PING"); !strings.Contains(r, "reset") {
		t.Errorf("source a's held connection through its reset link: got %q, want a reset", r)
	}
	if r := f.b.do(t, "PING"); r != "+PONG" {
		t.Errorf("source b while a's link is reset: got %q", r)
	}
	// The server's end of a's connection is destroyed too; b's stays.
	direct, err := net.Dial("tcp", f.redis)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	gone := false
	for deadline := time.Now().Add(helperPatience); !gone && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		list := clientList(t, direct)
		if !strings.Contains(list, "addr="+f.b.local+" ") {
			t.Fatalf("source b's connection %s is not among the server's clients:\n%s", f.b.local, list)
		}
		gone = !strings.Contains(list, "addr="+held.local+" ")
	}
	if !gone {
		t.Errorf("the server's end of source a's reset connection %s stayed", held.local)
	}
	if err := f.n.Heal("a->r"); err != nil {
		t.Fatal(err)
	}
	if r := startSourceConn(t, testGidA, f.addr).do(t, "PING"); r != "+PONG" {
		t.Errorf("source a after the reset's heal: got %q", r)
	}
	if r := f.b.do(t, "PING"); r != "+PONG" {
		t.Errorf("source b after a's reset: got %q", r)
	}
}

// refusals checks that LinkFrom and SetUpstream refuse what a per-source link
// cannot be.
func (f *sourceFixture) refusals(t *testing.T) {
	if _, err := f.n.LinkFrom("a2->r", testGidA, f.redis); err == nil {
		t.Error("a second link of one group to one upstream accepted")
	}
	if _, err := f.n.LinkFrom("root->r", 0, f.redis); err == nil {
		t.Error("a per-source link of group 0 accepted")
	}
	if err := f.n.SetUpstream("a->r", "127.0.0.1:1"); err == nil {
		t.Error("SetUpstream of a per-source link accepted")
	}
}

// remove checks that Remove closes one source's connections, and that the
// last Remove releases the shared address.
func (f *sourceFixture) remove(t *testing.T) {
	if r := f.a.do(t, "PING"); r != "+PONG" {
		t.Fatalf("source a before Remove: %q", r)
	}
	if err := f.n.Remove("a->r"); err != nil {
		t.Fatal(err)
	}
	if r := f.a.do(t, "PING"); !strings.HasPrefix(r, "error:") {
		t.Errorf("source a's connection after its link's Remove: got %q, want an error", r)
	}
	if r := f.b.do(t, "PING"); r != "+PONG" {
		t.Errorf("source b after a's link was removed: got %q", r)
	}
	if err := f.n.Remove("b->r"); err != nil {
		t.Fatal(err)
	}
	if c, err := net.DialTimeout("tcp", f.addr, time.Second); err == nil {
		c.Close()
		t.Errorf("the shared address %s still accepts connections after its last link's Remove", f.addr)
	}
}

// close checks that Close deletes the Network's nftables table.
func (f *sourceFixture) close(t *testing.T) {
	if _, err := f.n.LinkFrom("a->r", testGidA, f.redis); err != nil {
		t.Fatal(err)
	}
	if err := f.n.Close(); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("nft", "list", "tables").CombinedOutput()
	if err != nil {
		t.Fatalf("nft list tables: %v: %s", err, out)
	}
	if strings.Contains(string(out), f.n.Table()) {
		t.Errorf("table %s left after Close:\n%s", f.n.Table(), out)
	}
}

// TestLinkFromThroughProxies checks that with WithProxies each per-source
// link has a proxy of its own: latency on one source's link delays that
// source's replies, and the heal removes it.
func TestLinkFromThroughProxies(t *testing.T) {
	redis := startRedis(t)
	n, err := New(WithProxies())
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
