package docker

import (
	"bufio"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
)

// TestRelay runs a relay in the test's own network namespace (no container
// needed) in front of a link to an echo server, and checks that data flows
// through it, stops while the link is cut, and that close ends everything.
func TestRelay(t *testing.T) {
	echo := startEcho(t)
	network, err := cluster.NewNetwork()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = network.Close() })
	link := linknet.Name("n2", "n1")
	if _, err := network.Link(link, echo); err != nil {
		t.Fatal(err)
	}

	r, err := startRelay(os.Getpid(), "127.0.0.1:0", link, network)
	if os.Geteuid() != 0 {
		if !errors.Is(err, cluster.ErrUnavailable) {
			t.Fatalf("startRelay without privileges: got %v, want ErrUnavailable", err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = r.close()
		}
	})

	dial := func() (net.Conn, *bufio.Reader) { return dialRelay(t, r) }

	conn, rd := dial()
	if got, err := roundTrip(conn, rd, "hello", 5*time.Second); err != nil || got != "hello\n" {
		t.Fatalf("through the relay: got %q, %v; want hello", got, err)
	}
	if err := network.Cut(link); err != nil {
		t.Fatal(err)
	}
	if got, err := roundTrip(conn, rd, "lost", 300*time.Millisecond); err == nil {
		t.Fatalf("a reply %q came through a cut link", got)
	}
	if err := network.Heal(link); err != nil {
		t.Fatal(err)
	}

	conn, rd = dial()
	if got, err := roundTrip(conn, rd, "again", 5*time.Second); err != nil || got != "again\n" {
		t.Fatalf("through the relay after the heal: got %q, %v; want again", got, err)
	}
	if err := r.close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	closed = true
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := rd.ReadString('\n'); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the relayed connection survived close (read: %v)", err)
	}
	if c, err := net.DialTimeout("tcp", r.ln.Addr().String(), time.Second); err == nil {
		_ = c.Close()
		t.Fatal("the relay still listens after close")
	}
}

// startEcho starts a TCP server on 127.0.0.1 that sends each line back,
// and returns its address.
func startEcho(t *testing.T) string {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = echo.Close() })
	go func() {
		for {
			conn, err := echo.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				sc := bufio.NewScanner(conn)
				for sc.Scan() {
					if _, err := conn.Write(append(sc.Bytes(), '\n')); err != nil {
						return
					}
				}
			}()
		}
	}()
	return echo.Addr().String()
}

// dialRelay opens a connection to the relay and returns it with its reader.
func dialRelay(t *testing.T, r *relay) (net.Conn, *bufio.Reader) {
	conn, err := net.Dial("tcp", r.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn, bufio.NewReader(conn)
}

// roundTrip sends msg on a line and returns the line it gets back within
// timeout.
func roundTrip(conn net.Conn, rd *bufio.Reader, msg string, timeout time.Duration) (string, error) {
	_ = conn.SetDeadline(time.Now().Add(timeout))
	if _, err := conn.Write([]byte(msg + "\n")); err != nil {
		return "", err
	}
	return rd.ReadString('\n')
}
