package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/spawn"
)

// node is one server process of a local cluster.
type node struct {
	name, role string
	port       int    // the port clients reach it on
	dir        string // its temp dir (data, config, clock file)
	logPath    string

	argv []string            // the command that runs it
	env  []string            // extra environment
	cred *syscall.Credential // when it must not run as root
	// ready reports whether the node answers; it is polled after a launch.
	ready func(ctx context.Context) error

	clockPath string // the clock-skew file, "" when skew is unavailable
	skewLib   string // the library preloaded into the node, "" for none

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{} // closed when the process has been reaped
	paused bool
	closed bool // set by Cluster.Close: the node is never launched again
}

// info returns the node as the cluster package describes it.
func (n *node) info() cluster.Node {
	n.mu.Lock()
	defer n.mu.Unlock()
	return cluster.Node{Name: n.name, Role: n.role, Addr: n.addr()}
}

// addr returns the node's client address.
func (n *node) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(n.port)) }

// launch starts the node's process in its own process group, with SIGKILL
// delivered if the harness dies, and its output appended to its log file.
func (n *node) launch() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return ErrClosed
	}
	if n.cmd != nil {
		select {
		case <-n.done:
		default:
			return fmt.Errorf("local: %s is already running", n.name)
		}
	}
	logf, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("local: log of %s: %w", n.name, err)
	}
	defer logf.Close()
	fmt.Fprintf(logf, "--- jepsen-lite: starting %s at %s: %v\n", n.name, time.Now().UTC().Format(time.RFC3339Nano), n.argv)
	cmd := exec.Command(n.argv[0], n.argv[1:]...)
	cmd.Dir = n.dir
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.Env = append(os.Environ(), n.env...)
	if n.skewLib != "" {
		cmd.Env = append(cmd.Env, "LD_PRELOAD="+n.skewLib, cluster.ClockFileEnv+"="+n.clockPath)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: n.cred}
	if err := spawn.Start(cmd); err != nil {
		return fmt.Errorf("local: start %s: %w", n.name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	n.cmd, n.done, n.paused = cmd, done, false
	return nil
}

// running reports whether the node's process is alive.
func (n *node) running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return false
	}
	select {
	case <-n.done:
		return false
	default:
		return true
	}
}

// pid returns the node's process id, 0 when it is not running.
func (n *node) pid() int {
	if !n.running() {
		return 0
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd.Process.Pid
}

// signal sends sig to the node's process group.
func (n *node) signal(sig syscall.Signal) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return fmt.Errorf("local: %s is not running", n.name)
	}
	select {
	case <-n.done:
		return fmt.Errorf("local: %s is not running", n.name)
	default:
	}
	if err := syscall.Kill(-n.cmd.Process.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("local: signal %v to %s: %w", sig, n.name, err)
	}
	// Children that left the group (postgres backends call setsid) get
	// the signal too: a paused node stops answering on every connection.
	for _, pid := range cluster.Descendants(n.cmd.Process.Pid) {
		_ = syscall.Kill(pid, sig)
	}
	return nil
}

// kill sends SIGKILL (and SIGCONT, for a paused node) to the node's process
// group and waits until the process is reaped. Killing a dead node does nothing.
func (n *node) kill(ctx context.Context) error {
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.mu.Unlock()
	if cmd == nil {
		return nil
	}
	pgid := cmd.Process.Pid
	// The group is killed even when its leader is gone, and so is every
	// descendant that left the group (postgres backends call setsid): a
	// backend that outlives its postmaster holds the shared memory that a
	// restart needs.
	kids := cluster.Descendants(pgid)
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	_ = syscall.Kill(-pgid, syscall.SIGCONT)
	for _, pid := range kids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("local: kill %s: %w", n.name, ctx.Err())
	}
	// Wait a little for the rest of the group (already sent SIGKILL) to be
	// reaped by init; an init that does not reap would leave zombies, which
	// hold no port and no file, so the wait is bounded.
	for _, pid := range kids {
		for end := time.Now().Add(2 * time.Second); cluster.Alive(pid) && time.Now().Before(end); {
			select {
			case <-ctx.Done():
				return fmt.Errorf("local: kill %s's children: %w", n.name, ctx.Err())
			case <-time.After(2 * time.Millisecond):
			}
		}
	}
	for end := time.Now().Add(2 * time.Second); syscall.Kill(-pgid, 0) == nil && time.Now().Before(end); {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		select {
		case <-ctx.Done():
			return fmt.Errorf("local: kill %s's process group: %w", n.name, ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
	}
	n.mu.Lock()
	n.paused = false
	n.mu.Unlock()
	return nil
}

func (n *node) pause() error {
	if err := n.signal(syscall.SIGSTOP); err != nil {
		return err
	}
	n.mu.Lock()
	n.paused = true
	n.mu.Unlock()
	return nil
}

func (n *node) resume() error {
	if err := n.signal(syscall.SIGCONT); err != nil {
		return err
	}
	n.mu.Lock()
	n.paused = false
	n.mu.Unlock()
	return nil
}

// waitReady polls the node's readiness check until it succeeds, the process
// exits, or the timeout or ctx ends.
func (n *node) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	n.mu.Lock()
	done := n.done
	n.mu.Unlock()
	var last error
	delay := 2 * time.Millisecond
	for {
		attempt, cancelAttempt := context.WithTimeout(ctx, time.Second)
		last = n.ready(attempt)
		cancelAttempt()
		if last == nil {
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("local: %s exited during start (log %s): %s", n.name, n.logPath, n.logTail())
		case <-ctx.Done():
			return fmt.Errorf("local: %s not ready (log %s): %w (last: %v)", n.name, n.logPath, ctx.Err(), last)
		case <-time.After(delay):
		}
		delay = min(delay*2, 50*time.Millisecond)
	}
}

// logTail returns the end of the node's log, for error messages.
func (n *node) logTail() string {
	b, err := os.ReadFile(n.logPath)
	if err != nil {
		return err.Error()
	}
	if len(b) > 800 {
		b = b[len(b)-800:]
	}
	return string(bytes.TrimSpace(b))
}

// initialise runs cmd, the node's one-off initialisation before its
// server first starts (initdb, mariadb-install-db), in the node's
// directory with LC_ALL=C, to its end; the error names it and quotes
// what it printed.
func (n *node) initialise(name string, cmd *exec.Cmd) error {
	cmd.Dir = n.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	err := spawn.Start(cmd)
	if err == nil {
		err = cmd.Wait()
	}
	if err != nil {
		return fmt.Errorf("local: %s: %w: %s", name, err, strings.TrimSpace(out.String()))
	}
	return nil
}
