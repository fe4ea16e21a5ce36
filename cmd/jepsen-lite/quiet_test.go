package main

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker/synth"
)

// shortScenario is a run of a second on one Redis server, for the tests
// of what the commands print.
const shortScenario = `name: short
system: {name: redis, nodes: 1}
lock: {algorithm: redis-single, ttl: 1s}
workers: 2
duration: 1s
quiet: 200ms
expect: {verdict: valid}
`

// bigHistory writes a synthetic history of a correct lock, of ops ops,
// and returns its path.
func bigHistory(t *testing.T, ops int) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "big.jsonl")
	opts := synth.Options{Workers: 16, Keys: 4, Ops: ops, TTL: time.Second, InfoRate: 0.01, Tokens: true}
	if _, err := synth.WriteFile(file, rand.New(rand.NewPCG(1, 1)), opts); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestNoProgressOnAPipe runs run, check, gate and hunt with stderr on a
// pipe: none prints a progress line (no carriage return, no terminal
// sequence, no line of its own); what they print on stderr is their
// messages alone.
func TestNoProgressOnAPipe(t *testing.T) {
	dir := t.TempDir()
	scenario := filepath.Join(dir, "short.yaml")
	if err := os.WriteFile(scenario, []byte(shortScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	store := func(name string) string { return filepath.Join(dir, name) }
	tests := []struct {
		name string
		args []string
		// wantCodes are the exit codes the command may give.
		wantCodes []int
		// stderrLine reports whether a line of stderr is one of the
		// command's messages.
		stderrLine func(string) bool
	}{
		{"check", []string{"check", bigHistory(t, 200_000)}, []int{exitHeld}, func(string) bool { return false }},
		{"run", []string{"run", scenario, "--store", store("run"), "--seed", "1"}, []int{exitHeld}, func(string) bool { return false }},
		{"gate", []string{"gate", scenario, "--seeds", "2", "--store", store("gate")}, []int{exitHeld},
			func(l string) bool { return l == "gate: short seed 1 ..." || l == "gate: short seed 2 ..." }},
		{"hunt", []string{"hunt", scenario, "--faults", "kill", "--runs", "1", "--store", store("hunt")}, []int{exitHeld, exitViolated},
			func(l string) bool { return strings.HasPrefix(l, "hunt: ") }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.args...)
			codeOK := false
			for _, c := range tc.wantCodes {
				codeOK = codeOK || c == code
			}
			if !codeOK {
				t.Fatalf("exit %d, want one of %v\nstdout:\n%s\nstderr:\n%s", code, tc.wantCodes, stdout, stderr)
			}
			if strings.ContainsAny(stderr+stdout, "\r\x1b") {
				t.Fatalf("a carriage return or a terminal sequence on a pipe:\nstdout: %q\nstderr: %q", stdout, stderr)
			}
			for _, l := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
				if l != "" && !tc.stderrLine(l) {
					t.Fatalf("stderr has a line that is not one of the command's messages: %q\nstderr:\n%s", l, stderr)
				}
			}
		})
	}
}
