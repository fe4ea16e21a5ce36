package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/history"
	"github.com/jepsen-lite/jepsen-lite/reports"
)

// TestRunWithAFaultTheNodeCannotTake runs a clock-bump on a real etcd node
// (a Go binary, whose clock cannot be skewed). A step that does not expect
// the failure is refused before anything starts (exit 254), as the fault
// declares the systems it acts on. A step that expects it (expect-failure:
// true) runs: the history records the fault as failed with its reason and
// never as in force (no heal follows, no node is recorded down), and `run`
// ends as the scenario expects (exit 0) with the reason on the console.
// `check` of the stored run says the same.
func TestRunWithAFaultTheNodeCannotTake(t *testing.T) {
	const scenario = `name: etcd-clock-bump
system: {name: etcd}
lock: {algorithm: etcd-mutex, ttl: 2s}
workers: 2
duration: 1500ms
quiet: 500ms
nemesis:
  steps:
    - {at: 300ms, fault: clock-bump, targets: [n1], offset: 30s, duration: 500ms%s}
`
	tests := []struct {
		name     string
		extra    string
		wantCode int
		want     string
	}{
		{"unexpected", "", exitUsage, "etcd-clock-bump.yaml:9: nemesis.steps.0.fault: nemesis: the system cannot take the fault: clock-bump cannot act on etcd nodes (it acts on redis, postgres, zookeeper"},
		{"expected", ", expect-failure: true", exitHeld, "FAILED fault at 300ms clock-bump n1 by 30s for 500ms (expected to fail)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "etcd-clock-bump.yaml")
			if err := os.WriteFile(file, []byte(strings.Replace(scenario, "%s", tc.extra, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			store := filepath.Join(dir, "store")
			code, stdout, stderr := runCLI(t, "run", file, "--store", store, "--seed", "1")
			if tc.wantCode == exitUsage {
				if code != tc.wantCode || !strings.Contains(stderr, tc.want) {
					t.Fatalf("exit %d, want %d with %q\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, tc.want, stdout, stderr)
				}
				if _, err := os.Stat(store); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("the refused run made its store: %v", err)
				}
				return
			}
			if code != tc.wantCode || !strings.Contains(stdout, tc.want) {
				t.Fatalf("exit %d, want %d with %q\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, tc.want, stdout, stderr)
			}
			h, _, err := history.ReadFile(filepath.Join(store, reports.LatestLink, reports.HistoryFile))
			if err != nil {
				t.Fatal(err)
			}
			var nemesisOps []string
			for _, op := range h {
				if !op.IsNemesis() || op.IsHeader() || op.IsEnd() || op.IsHostRecord() {
					continue
				}
				nemesisOps = append(nemesisOps, op.F+" "+string(op.Type))
				if !op.NemesisFailed(history.Version(h)) || !strings.Contains(op.Error, "cannot be skewed") {
					t.Errorf("nemesis op %+v is not a failed fault with its reason", op)
				}
			}
			if len(nemesisOps) != 1 || nemesisOps[0] != "clock-bump fail" {
				t.Fatalf("nemesis ops %q, want the failed clock-bump alone (no heal, no node down)", nemesisOps)
			}
			// Checked again from the store, the run ends the same way.
			code, stdout, stderr = runCLI(t, "check", filepath.Join(store, reports.LatestLink))
			if code != tc.wantCode {
				t.Fatalf("check of the stored run: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, stdout, stderr)
			}
		})
	}
}

// TestRunRefusesTargetsTheClusterDoesNotHave runs scenario files whose fault
// targets a node or a worker that does not exist, whose lock option the
// algorithm does not know, or that asks of its lock a capability its
// declaration lacks: `run` exits 254 with one line before anything starts
// (no store directory is made).
func TestRunRefusesTargetsTheClusterDoesNotHave(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"n7 on one node", "name: t\nsystem: {name: redis, nodes: 1}\nlock: {algorithm: redis-single, ttl: 1s}\nworkers: 2\nduration: 2s\nnemesis:\n  steps:\n    - {at: 1s, fault: kill, targets: [n7]}\n",
			`t.yaml:8: nemesis.steps.0.targets: nemesis: bad target: "n7" is neither a node (n1)`},
		{"w9 with two workers", "name: t\nsystem: {name: redis, nodes: 1}\nlock: {algorithm: redis-single, ttl: 1s}\nworkers: 2\nduration: 2s\nnemesis:\n  steps:\n    - {at: 1s, fault: client-pause, targets: [w9]}\n",
			`t.yaml:8: nemesis.steps.0.targets: nemesis: bad target: worker target "w9": want w0..w1`},
		{"an unknown lock option", "name: t\nsystem: {name: redis, nodes: 1}\nlock:\n  algorithm: redis-single\n  ttl: 1s\n  options: {colour: red}\nworkers: 2\nduration: 2s\n",
			"t.yaml:6: lock.options: clients: redis-single: clients: bad option: unknown colour (known: timeout)"},
		{"an unknown queue option", "name: t\nworkload: queue\nsystem: {name: postgres, nodes: 1}\nlock:\n  algorithm: pg-queue\n  ttl: 1s\n  options: {colour: red}\nworkers: 2\nduration: 2s\n",
			"t.yaml:7: lock.options: clients: pg-queue: clients: bad option: unknown colour (known: database, timeout, user)"},
		{"a renewal the lock cannot make", "name: t\nsystem: {name: redis, nodes: 1}\nlock:\n  algorithm: redis-zadd-mutex\n  ttl: 1s\n  renew: 300ms\nworkers: 2\nduration: 2s\n",
			"t.yaml: lock.renew: clients: missing capability: redis-zadd-mutex cannot renew a lease (algorithms that can: "},
		{"a guarded register the lock cannot keep", "name: t\nsystem: {name: redis, nodes: 1}\nlock: {algorithm: redlock, ttl: 1s}\nresource: guarded\nworkers: 2\nduration: 2s\n",
			"t.yaml: resource: clients: missing capability: redlock cannot keep the register in its own system, guarded by the lease (algorithms that can: pg-mutex, "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "t.yaml")
			if err := os.WriteFile(file, []byte(tc.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			store := filepath.Join(dir, "store")
			code, stdout, stderr := runCLI(t, "run", file, "--store", store)
			if code != exitUsage || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Fatalf("exit %d, want %d with the one line %q\nstdout:\n%s\nstderr:\n%s", code, exitUsage, tc.want, stdout, stderr)
			}
			if _, err := os.Stat(store); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the store was created: %v", err)
			}
		})
	}
}
