package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster/docker"
)

// hangBound is how long a command interrupted may take to exit before the
// tests call it hung: far beyond the second it is meant to take, so that
// a loaded machine does not fail them (speed is measured by
// scripts/interrupt.sh, not asserted).
const hangBound = 60 * time.Second

// syncBuffer is a bytes.Buffer that a command writes to while the test
// reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// started is a command of the binary the test started.
type started struct {
	cmd            *exec.Cmd
	stdout, stderr *syncBuffer
	done           chan struct{} // closed when the command has exited
	code           int
}

// startCLI starts the binary with args; the test's cleanup kills it if it
// is still running.
func startCLI(t *testing.T, args ...string) *started {
	t.Helper()
	s := &started{cmd: exec.Command(binary, args...), stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan struct{})}
	s.cmd.Stdout, s.cmd.Stderr = s.stdout, s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := s.cmd.Wait()
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			s.code = ee.ExitCode()
		case err != nil:
			s.code = -1
		}
		close(s.done)
	}()
	t.Cleanup(func() {
		_ = s.cmd.Process.Kill()
		<-s.done
	})
	return s
}

// signal sends sig to the command.
func (s *started) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := s.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v: %v", sig, err)
	}
}

// wait waits for the command to exit, at most hangBound, and returns its
// exit code.
func (s *started) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-s.done:
		return s.code
	case <-time.After(hangBound):
		t.Fatalf("still running %v after the interrupt\nstderr:\n%s", hangBound, s.stderr)
		return 0
	}
}

// waitFor polls cond until it holds, failing the test after hangBound or
// when the command exits first.
func (s *started) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(hangBound)
	for !cond() {
		select {
		case <-s.done:
			t.Fatalf("exited (code %d) before %s\nstdout:\n%s\nstderr:\n%s", s.code, what, s.stdout, s.stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("not %s within %v\nstderr:\n%s", what, hangBound, s.stderr)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// readingStarted reports whether process pid has file open and has read
// some of it (its offset, in /proc/<pid>/fdinfo, is past 0).
func readingStarted(pid int, file string) bool {
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	for _, fd := range fds {
		target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err != nil || target != file {
			continue
		}
		info, err := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/%s", pid, fd.Name()))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(info), "\n") {
			if pos, ok := strings.CutPrefix(line, "pos:"); ok {
				if n, err := strconv.ParseInt(strings.TrimSpace(pos), 10, 64); err == nil && n > 0 {
					return true
				}
			}
		}
	}
	return false
}

// TestInterruptCheck interrupts the offline check of a big history once it
// has begun reading it, with SIGINT and with SIGTERM: the check says it was
// interrupted, not that it timed out, exits 2, and does so long before its
// budget.
func TestInterruptCheck(t *testing.T) {
	file, err := filepath.Abs(bigHistory(t, 1_000_000))
	if err != nil {
		t.Fatal(err)
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			c := startCLI(t, "check", file, "--check-timeout", "10m")
			c.waitFor(t, "reading the history", func() bool { return readingStarted(c.cmd.Process.Pid, file) })
			c.signal(t, sig)
			if code := c.wait(t); code != exitUnknown {
				t.Errorf("exit %d after %v, want %d\nstdout:\n%s\nstderr:\n%s", code, sig, exitUnknown, c.stdout, c.stderr)
			}
			if !strings.Contains(c.stderr.String(), "jepsen-lite check: interrupted") {
				t.Errorf("stderr does not say the check was interrupted:\n%s", c.stderr)
			}
			if strings.Contains(c.stderr.String()+c.stdout.String(), "timed out") {
				t.Errorf("an interruption reported as a timeout:\n%s%s", c.stdout, c.stderr)
			}
			if strings.Contains(c.stdout.String(), "verdict:") {
				t.Errorf("the check gave a verdict though it was interrupted:\n%s", c.stdout)
			}
		})
	}
}

// TestInterruptCheckBudget checks the other way a check ends early: past
// its budget it gives an unknown verdict that says it timed out after the
// budget, and never "interrupted".
func TestInterruptCheckBudget(t *testing.T) {
	file := bigHistory(t, 200_000)
	code, stdout, stderr := runCLI(t, "check", file, "--check-timeout", "1ns")
	if code != exitUnknown {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitUnknown, stdout, stderr)
	}
	if !strings.Contains(stdout, "timed out after 1ns") {
		t.Errorf("the results do not say the check timed out after its budget:\n%s", stdout)
	}
	if strings.Contains(stdout+stderr, "interrupted") {
		t.Errorf("a budget that ran out reported as an interruption:\n%s%s", stdout, stderr)
	}
}

// harnessLeftovers returns what the harness of process pid left on the
// machine besides kernel state: its temp dirs, the processes started from
// them (servers), and, with the container backend, its containers.
func harnessLeftovers(t *testing.T, pid int, containers bool) []string {
	t.Helper()
	prefix := fmt.Sprintf("jepsen-lite-%d-", pid)
	left, _ := filepath.Glob(filepath.Join(os.TempDir(), prefix+"*"))
	if out, err := exec.Command("pgrep", "-a", "-f", prefix).Output(); err == nil {
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if !strings.Contains(line, "pgrep") {
				left = append(left, "process "+line)
			}
		}
	}
	if containers {
		host, _ := os.Hostname()
		out, err := exec.Command("docker", "ps", "-a", "-q", "--filter", fmt.Sprintf("label=%s=%s/%d", docker.HarnessLabel, host, pid)).CombinedOutput()
		if err != nil {
			t.Fatalf("docker ps: %v: %s", err, out)
		}
		for _, id := range strings.Fields(string(out)) {
			left = append(left, "container "+id)
		}
	}
	return left
}

// longScenario is a one-node Redis run long enough to be interrupted while
// it drives, with a partition on from 200ms.
const longScenario = `name: interrupted
system: {name: redis, nodes: 1}
lock: {algorithm: redis-single, ttl: 1s}
workers: 2
duration: 60s
quiet: 200ms
nemesis:
  steps:
    - {at: 200ms, fault: partition, targets: [w1], duration: 60s}
expect: {verdict: valid}
`

// TestSecondInterruptQuits interrupts a run twice while it drives, on each
// backend: the second interrupt ends the process at once (exit 2, saying
// so), though the first is still being handled by the run's teardown;
// what the teardown could not finish (its servers or containers, its
// kernel rules, its temp dirs) the next run of the harness removes, so
// that the machine is as it was before.
func TestSecondInterruptQuits(t *testing.T) {
	dir := t.TempDir()
	scenario := filepath.Join(dir, "interrupted.yaml")
	if err := os.WriteFile(scenario, []byte(longScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short.yaml")
	if err := os.WriteFile(short, []byte(shortScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, backend := range []string{"local", "docker"} {
		t.Run(backend, func(t *testing.T) {
			if backend == "docker" {
				requireNodeImage(t)
			}
			before := kernelState(t)
			c := startCLI(t, "run", scenario, "--backend", backend, "--store", t.TempDir(), "-v")
			c.waitFor(t, "driving", func() bool { return strings.Contains(c.stderr.String(), "workers ready") })
			c.signal(t, syscall.SIGINT)
			// Signals sent back to back may merge into one: the second is
			// sent once the first has been seen.
			c.waitFor(t, "handling the first interrupt", func() bool { return strings.Contains(c.stderr.String(), "interrupted: stopping") })
			c.signal(t, syscall.SIGINT)
			if code := c.wait(t); code != exitUnknown {
				t.Errorf("exit %d after two interrupts, want %d\nstderr:\n%s", code, exitUnknown, c.stderr)
			}
			if !strings.Contains(c.stderr.String(), "interrupted again: quitting now") {
				t.Errorf("the second interrupt did not end the process at once:\n%s", c.stderr)
			}
			pid := c.cmd.Process.Pid
			// The teardown was cut short: what it left is for the next run.
			left := harnessLeftovers(t, pid, backend == "docker")
			if kernelState(t, pid) == before && len(left) == 0 {
				t.Error("the interrupted run left nothing for the next run to remove: the second interrupt came after its teardown")
			}
			t.Logf("left by the interrupted run: %d temp dirs, processes or containers; kernel state changed: %v", len(left), kernelState(t, pid) != before)
			code, stdout, stderr := runCLI(t, "run", short, "--backend", backend, "--store", t.TempDir())
			if code != exitHeld {
				t.Fatalf("the next run: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			if after := kernelState(t); after != before {
				t.Errorf("the kernel's network state after the next run differs from before:\n%s", lineDiff(before, after))
			}
			// The servers of the interrupted run get SIGKILL when it dies;
			// the kernel may take a moment to reap them.
			deadline := time.Now().Add(hangBound)
			for left := harnessLeftovers(t, pid, backend == "docker"); len(left) > 0; left = harnessLeftovers(t, pid, backend == "docker") {
				if time.Now().After(deadline) {
					t.Fatalf("left behind by the interrupted run after the next one:\n%s", strings.Join(left, "\n"))
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

// requireNodeImage skips the test when there is no Docker engine with the
// node image (make images builds it).
func requireNodeImage(t *testing.T) {
	t.Helper()
	image := os.Getenv(docker.ImageEnv)
	if image == "" {
		image = docker.DefaultImage
	}
	if out, err := exec.Command("docker", "image", "inspect", image).CombinedOutput(); err != nil {
		t.Skipf("the container backend is not tested: no Docker engine with the node image %s (make images): %v: %s", image, err, bytes.TrimSpace(out))
	}
}

// TestInterruptRun interrupts a run while it drives, on each backend: it
// exits 2, says it was interrupted and how to check what it recorded,
// keeps its history in the store, and its teardown leaves nothing behind:
// kernel rules, namespaces, processes, temp dirs, containers.
func TestInterruptRun(t *testing.T) {
	scenario := filepath.Join(t.TempDir(), "interrupted.yaml")
	if err := os.WriteFile(scenario, []byte(longScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, backend := range []string{"local", "docker"} {
		t.Run(backend, func(t *testing.T) {
			if backend == "docker" {
				requireNodeImage(t)
			}
			before := kernelState(t)
			store := t.TempDir()
			c := startCLI(t, "run", scenario, "--backend", backend, "--store", store, "-v")
			c.waitFor(t, "driving", func() bool { return strings.Contains(c.stderr.String(), "workers ready") })
			c.signal(t, syscall.SIGINT)
			if code := c.wait(t); code != exitUnknown {
				t.Errorf("exit %d after an interrupt, want %d\nstderr:\n%s", code, exitUnknown, c.stderr)
			}
			if !strings.Contains(c.stderr.String(), "jepsen-lite run: interrupted; what was recorded is in ") || !strings.Contains(c.stderr.String(), "check it with 'jepsen-lite check ") {
				t.Errorf("stderr does not say the run was interrupted and how to check it:\n%s", c.stderr)
			}
			histories, _ := filepath.Glob(filepath.Join(store, "interrupted", "*", "history.jsonl"))
			if len(histories) != 1 {
				t.Errorf("stored histories: %v, want the interrupted run's", histories)
			}
			if after := kernelState(t, c.cmd.Process.Pid); after != before {
				t.Errorf("the kernel's network state changed:\n%s", lineDiff(before, after))
			}
			if left := harnessLeftovers(t, c.cmd.Process.Pid, backend == "docker"); len(left) > 0 {
				t.Errorf("left behind by the interrupted run:\n%s", strings.Join(left, "\n"))
			}
		})
	}
}

// TestInterruptible sends this process SIGINT twice: the first cancels
// the command's context and says so, the second ends the process (here,
// the exit the test gives) with exit code 2.
func TestInterruptible(t *testing.T) {
	stderr := &syncBuffer{}
	exited := make(chan int, 1)
	ctx, stop := interruptible(stderr, func(code int) { exited <- code })
	defer stop()
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(hangBound):
		t.Fatal("the first SIGINT did not cancel the context")
	}
	deadline := time.Now().Add(hangBound)
	for !strings.Contains(stderr.String(), "interrupted: stopping") {
		if time.Now().After(deadline) {
			t.Fatalf("the first SIGINT was not said: %q", stderr)
		}
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case code := <-exited:
		t.Fatalf("exited %d at the first SIGINT", code)
	default:
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-exited:
		if code != exitUnknown {
			t.Errorf("the second SIGINT exited %d, want %d", code, exitUnknown)
		}
	case <-time.After(hangBound):
		t.Fatal("the second SIGINT did not end the process")
	}
	if !strings.Contains(stderr.String(), "interrupted again: quitting now") {
		t.Errorf("the second SIGINT was not said: %q", stderr)
	}
}
