package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// binary is the jepsen-lite binary built once for the tests that need a
// real process (signals, exit codes).
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "jepsen-lite-cmd-test-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "jepsen-lite")
	out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
	if err != nil {
		os.RemoveAll(dir)
		panic("building jepsen-lite: " + err.Error() + "\n" + string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// runCLI runs the binary with args and returns its exit code and output.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running %v: %v", args, err)
	}
	return code, stdout.String(), stderr.String()
}

func TestBadInput(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  []string // substrings of stderr
	}{
		{"malformed history line", []string{"check", "testdata/malformed.jsonl"}, 254, []string{"malformed.jsonl:3"}},
		{"unknown scenario", []string{"run", "no-such-scenario"}, 254, []string{"no-such-scenario", "redis-single-gc-pause", "redis-single-baseline"}},
		{"unknown scenario field", []string{"run", "testdata/unknown-field.yaml"}, 254, []string{"unknown-field.yaml", "line 3", "colour"}},
		{"unknown algorithm", []string{"run", "testdata/unknown-algorithm.yaml"}, 254, []string{"unknown-algorithm.yaml:7", "redis-single"}},
		{"negative duration", []string{"run", "testdata/negative-duration.yaml"}, 254, []string{"negative-duration.yaml:10", "duration"}},
		{"zero tcp user timeout", []string{"run", "testdata/bad-tcp.yaml"}, 254, []string{"bad-tcp.yaml:12", "tcp.user-timeout", "whole number of milliseconds"}},
		{"no such history", []string{"check", "testdata/absent.jsonl"}, 254, []string{"absent.jsonl"}},
		{"unknown command", []string{"frobnicate"}, 254, []string{"frobnicate"}},
		{"unknown flag", []string{"run", "--frobnicate", "redis-single-baseline"}, 254, []string{"frobnicate"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tt.args...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tt.wantCode, stderr)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not mention %q:\n%s", w, stderr)
				}
			}
		})
	}
}

func TestHelpTeachesWithExamples(t *testing.T) {
	for _, cmd := range []string{"run", "check", "list", "gate", "report", "serve"} {
		t.Run(cmd, func(t *testing.T) {
			code, _, stderr := runCLI(t, cmd, "--help")
			if code != 0 {
				t.Fatalf("exit %d", code)
			}
			if !strings.Contains(stderr, "Examples:") || !strings.Contains(stderr, "jepsen-lite "+cmd) {
				t.Errorf("help of %s has no example:\n%s", cmd, stderr)
			}
		})
	}
}

// TestInterruptLeavesNothingBehind sends SIGINT in the middle of a run and
// requires the harness to exit within 5 s, leave no redis-server process,
// temp dir or listening port, and leave a checkable history.
func TestInterruptLeavesNothingBehind(t *testing.T) {
	store := t.TempDir()
	tmp := t.TempDir()
	cmd := exec.Command(binary, "run", "redis-single-baseline", "--time-limit", "60s", "--store", store, "-v")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	nodeAddr := regexp.MustCompile(`node n\d+ \S+ at (127\.0\.0\.1:\d+)`)
	var addrs []string
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		closed := false
		for sc.Scan() {
			if m := nodeAddr.FindStringSubmatch(sc.Text()); m != nil {
				addrs = append(addrs, m[1])
			}
			if strings.Contains(sc.Text(), "workers ready") && !closed {
				close(ready)
				closed = true
			}
		}
		if !closed {
			close(ready)
		}
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatal("the run did not get ready within 30 s")
	}
	time.Sleep(1500 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Errorf("interrupted run exited with %v, want exit 2 (unknown)", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the harness did not exit within 5 s of SIGINT")
	}
	t.Logf("exited %v after SIGINT", time.Since(sent).Round(time.Millisecond))

	if len(addrs) == 0 {
		t.Fatal("run.log named no node address")
	}
	for _, a := range addrs {
		if c, err := net.DialTimeout("tcp", a, 200*time.Millisecond); err == nil {
			c.Close()
			t.Errorf("node address %s still accepts connections", a)
		}
	}
	entries, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("temp dir left behind: %s", filepath.Join(tmp, e.Name()))
	}
	if out, err := exec.Command("pgrep", "-f", tmp).Output(); err == nil && len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("processes left behind: %s", out)
	}
	// What was recorded is checkable.
	code, stdout, stderrOut := runCLI(t, "check", filepath.Join(store, "latest"))
	if code != 0 {
		t.Errorf("check of the interrupted run exited %d:\n%s%s", code, stdout, stderrOut)
	}
}

// TestCheckSavedHistories checks saved histories offline: a recorded Redlock
// clock jump must be invalid with its anomalies, its truncated copy must be
// checked up to its last complete line and say so, and --json must print
// the results document.
func TestCheckSavedHistories(t *testing.T) {
	t.Run("invalid table", func(t *testing.T) {
		code, stdout, stderr := runCLI(t, "check", "testdata/redlock-clock-jump.jsonl")
		if code != 1 {
			t.Fatalf("exit %d, want 1:\n%s%s", code, stdout, stderr)
		}
		for _, w := range []string{"double-hold", "early-grant", "verdict: invalid", "linearizability"} {
			if !strings.Contains(stdout, w) {
				t.Errorf("output lacks %q:\n%s", w, stdout)
			}
		}
	})
	t.Run("truncated", func(t *testing.T) {
		code, stdout, stderr := runCLI(t, "check", "testdata/truncated.jsonl")
		if code != 1 {
			t.Fatalf("exit %d, want 1 (the anomalies come before the cut):\n%s%s", code, stdout, stderr)
		}
		if !strings.Contains(stdout, "last line was incomplete") || !strings.Contains(stdout, "83 complete lines") {
			t.Errorf("output does not say what was left out:\n%s", stdout)
		}
	})
	t.Run("json", func(t *testing.T) {
		code, stdout, _ := runCLI(t, "check", "--json", "testdata/truncated.jsonl")
		if code != 1 {
			t.Fatalf("exit %d", code)
		}
		var doc struct {
			Verdict   string `json:"verdict"`
			Truncated bool   `json:"truncated"`
			Checkers  []struct {
				Name      string `json:"name"`
				Verdict   string `json:"verdict"`
				Anomalies []struct {
					Kind    string `json:"kind"`
					Ops     []int  `json:"ops"`
					Message string `json:"message"`
				} `json:"anomalies"`
			} `json:"checkers"`
			Stats struct {
				Ops int `json:"ops"`
			} `json:"stats"`
		}
		if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
			t.Fatalf("not the results document: %v\n%s", err, stdout)
		}
		if doc.Verdict != "invalid" || !doc.Truncated || doc.Stats.Ops != 83 || len(doc.Checkers) == 0 {
			t.Errorf("document %+v", doc)
		}
	})
}
