package cluster

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"slices"
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
