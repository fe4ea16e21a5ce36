package main

import (
	"strings"
	"testing"
)

// TestCheckMalformedFirstOps pins that a history that stops being
// well-formed at one of its first ops, before any worker op, is refused for
// that op (exit 254, naming its line and what is wrong), not as a history
// with nothing to judge: worker ops follow each of them.
func TestCheckMalformedFirstOps(t *testing.T) {
	tests := []struct {
		name string
		file string
		want string
	}{
		{"a task table with a negative budget", "testdata/first-op-task-table-negative-budget.jsonl", `line 2 (op 1): task table: task "t1" has a negative budget -1`},
		{"a fault at a negative time", "testdata/first-op-fault-negative-time.jsonl", "line 2 (op 1): time -5 is negative"},
		{"a header whose index is not 0", "testdata/first-op-header-index-1.jsonl", "line 1 (op 0): index is 1, want 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "check", tc.file)
			if code != exitUsage || !strings.Contains(stderr, tc.file+": history: "+tc.want) || strings.Contains(stderr, "nothing to judge") || strings.Contains(stdout, "verdict") {
				t.Fatalf("exit %d, want %d with %q and no verdict\nstdout:\n%s\nstderr:\n%s", code, exitUsage, tc.want, stdout, stderr)
			}
		})
	}
}
