package main

import (
	"strings"
	"testing"
)

// TestCheckDriftAndMalformed pins two promises of `check`: --drift 0 means
// no drift allowance at all (not the default), and a history that is not
// well-formed is bad input (exit 254, naming the line), never a verdict.
func TestCheckDriftAndMalformed(t *testing.T) {
	const fixtures = "../../checker/testdata/"
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantOutput string // a substring of stdout or stderr
	}{
		// worker 1 is granted the lock at 5.950 s, exactly when worker 0's
		// 5 s lease, asked for at 1 s, may end with the default 1 % drift;
		// with no drift it may end only at 6 s
		{"default drift", []string{"check", fixtures + "grant-at-earliest-expiry.jsonl"}, 0, "verdict: valid"},
		{"drift 0 is no drift", []string{"check", fixtures + "grant-at-earliest-expiry.jsonl", "--drift", "0"}, 1, "could not have expired before 6.000s"},
		{"a drift of 2 %", []string{"check", fixtures + "grant-at-earliest-expiry.jsonl", "--drift", "0.02"}, 0, "verdict: valid"},
		{"a drift of 1 or more is bad usage", []string{"check", fixtures + "grant-at-earliest-expiry.jsonl", "--drift", "1"}, 254, "want a fraction in [0, 1)"},
		{"a completion of another key", []string{"check", fixtures + "key-mismatch.jsonl"}, 254, "line 2 (op 1)"},
		{"a completion without an invoke", []string{"check", fixtures + "malformed.jsonl"}, 254, "line 3 (op 2)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.args...)
			if code != tc.wantCode || !strings.Contains(stdout+stderr, tc.wantOutput) {
				t.Fatalf("exit %d, want %d with %q\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, tc.wantOutput, stdout, stderr)
			}
		})
	}
}

// TestCheckReportsStuckApartFromTheVerdict checks a history in which the
// holder of a lock that never expires crashed and every later acquire was
// refused: `check` says the key is stuck, with the ops, while the safety
// verdict stays valid (exit 0).
func TestCheckReportsStuckApartFromTheVerdict(t *testing.T) {
	code, stdout, stderr := runCLI(t, "check", "testdata/holder-crashed-lock-never-expires.jsonl")
	for _, want := range []string{"liveness (apart from the verdict): STUCK, UNAVAILABLE; grants in the run: 1", "only 1 grant: a safe verdict says little", "stuck k ops [1 2", "unavailable k ops [1 2", "k unavailable from 0.015s to", "with every server node up", "verdict: valid"} {
		if !strings.Contains(stdout, want) {
			t.Fatalf("output does not say %q\nstdout:\n%s\nstderr:\n%s", want, stdout, stderr)
		}
	}
	if code != 0 {
		t.Fatalf("exit %d, want 0: a stuck lock is not a safety violation", code)
	}
}
