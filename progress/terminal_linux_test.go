package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openTerminal returns the two ends of a new pseudo-terminal: the one a
// program draws on, and the one the terminal reads from.
func openTerminal(t *testing.T) (tty, reader *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, m
}

// TestTerminalDetection makes lines on a pseudo-terminal: one draws,
// unless it is quiet or TERM is "dumb".
func TestTerminalDetection(t *testing.T) {
	tests := []struct {
		name     string
		term     string
		opts     []Option
		wantLive bool
	}{
		{"a terminal", "xterm", nil, true},
		{"a terminal, quiet", "xterm", []Option{Quiet(true)}, false},
		{"a dumb terminal", "dumb", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("TERM", tc.term)
			tty, _ := openTerminal(t)
			l := New(tty, tc.opts...)
			defer l.Done()
			if l.Live() != tc.wantLive {
				t.Fatalf("live %v, want %v", l.Live(), tc.wantLive)
			}
		})
	}
}

// TestLineOnATerminal draws a line on a pseudo-terminal through its own
// ticker: what the terminal reads is the status line, drawn in place, then
// erased by Done.
func TestLineOnATerminal(t *testing.T) {
	t.Setenv("TERM", "xterm")
	tty, reader := openTerminal(t)
	l := New(tty)
	l.Update(Status{Phase: "reading", Count: 42, CountUnit: "ops"})
	got := readUntil(t, reader, "\x1b[K")
	if !strings.HasPrefix(got, "\r   reading  42 ops") {
		t.Fatalf("the terminal read %q", got)
	}
	l.Done()
	if got := readUntil(t, reader, "\x1b[K"); !strings.HasSuffix(got, "\r\x1b[K") {
		t.Fatalf("Done wrote %q, want the line erased", got)
	}
}

// readUntil reads from r until what it read ends with end, and returns
// it; a terminal that gives nothing for a minute fails the test.
func readUntil(t *testing.T, r *os.File, end string) string {
	t.Helper()
	if err := r.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	var got []byte
	buf := make([]byte, 256)
	for !strings.HasSuffix(string(got), end) {
		n, err := r.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil && err != io.EOF {
			t.Fatalf("read %q, then: %v", got, err)
		}
	}
	return string(got)
}
