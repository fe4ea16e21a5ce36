package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"
)

// openTerminal returns the two ends of a new pseudo-terminal: the one a
// program writes to, and the one the terminal reads from.
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
	return s, m
}

// TestQuietOnATerminal checks a big history with --quiet and stderr on a
// terminal: nothing reaches the terminal.
func TestQuietOnATerminal(t *testing.T) {
	file := bigHistory(t, 300_000)
	tty, reader := openTerminal(t)
	cmd := exec.Command(binary, "check", "--quiet", file)
	cmd.Stdout, cmd.Stderr = io.Discard, tty
	cmd.Env = append(os.Environ(), "TERM=xterm")
	err := cmd.Start()
	tty.Close() // the terminal's reader ends when the command does
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("check: %v", err)
	}
	got, _ := io.ReadAll(reader) // EIO once the buffer is drained
	if len(got) > 0 {
		t.Fatalf("the terminal got %q with --quiet", got)
	}
}
