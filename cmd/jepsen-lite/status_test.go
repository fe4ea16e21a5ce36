package main

import (
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/progress"
	"github.com/jepsen-lite/jepsen-lite/runner"
)

// TestStatuses pins what the commands' progress lines are made of: a
// check's, a run's and a batch's.
func TestStatuses(t *testing.T) {
	running := runner.Progress{Phase: runner.PhaseRunning, Elapsed: 3200 * time.Millisecond, Total: 7 * time.Second, Ops: 1234, OK: 500, Fail: 90, Inf: 3}
	tests := []struct {
		name string
		got  progress.Status
		want progress.Status
	}{
		{"a check reading",
			fileStatus(checker.FileProgress{Phase: checker.PhaseReading, Ops: 1000, Bytes: 4096, Total: 65536}),
			progress.Status{Phase: "reading", Done: 4096, Total: 65536, Unit: progress.Bytes, Count: 1000, CountUnit: "ops"}},
		{"a check deciding",
			fileStatus(checker.FileProgress{Phase: checker.PhaseDeciding, Ops: 3000, Bytes: 65536, Total: 65536}),
			progress.Status{Phase: "deciding", Count: 3000, CountUnit: "ops"}},
		{"a run starting",
			runStatus(runner.Progress{Phase: runner.PhaseStarting}),
			progress.Status{Phase: "starting servers"}},
		{"a run running without faults",
			runStatus(running),
			progress.Status{Phase: "running", Done: int64(3200 * time.Millisecond), Total: int64(7 * time.Second), Unit: progress.Time, Count: 1234, CountUnit: "ops", Note: "ok 500  fail 90  info 3"}},
		{"a run running with faults",
			runStatus(runner.Progress{Phase: runner.PhaseRunning, Faults: []string{"kill n1", "partition n2"}}),
			progress.Status{Phase: "running", Unit: progress.Time, CountUnit: "ops", Note: "faults: kill n1; partition n2  ok 0  fail 0  info 0"}},
		{"a run checking",
			runStatus(runner.Progress{Phase: runner.PhaseChecking, Ops: 1234}),
			progress.Status{Phase: "checking"}},
		{"a batch before its first run",
			(&batchStatus{phase: "hunt"}).status(),
			progress.Status{Phase: "hunt", Unit: "runs"}},
		{"a batch's run starting",
			(&batchStatus{phase: "gate", done: 2, total: 6, found: gateFound(1, 0), current: "redlock-gc-pause seed 3"}).status(),
			progress.Status{Phase: "gate", Done: 2, Total: 6, Unit: "runs", Note: "1 invalid · redlock-gc-pause seed 3"}},
		{"a batch's run running, an expectation unmet",
			(&batchStatus{phase: "gate", done: 2, total: 6, found: gateFound(1, 1), current: "redlock-gc-pause seed 3", at: runNote(running)}).status(),
			progress.Status{Phase: "gate", Done: 2, Total: 6, Unit: "runs", Note: "1 invalid, 1 unmet · redlock-gc-pause seed 3: running 3.2s/7.0s"}},
		{"a batch's run checking",
			(&batchStatus{phase: "hunt", done: 0, total: 4, found: "0 invalid", current: "kill seed 1", at: runNote(runner.Progress{Phase: runner.PhaseChecking})}).status(),
			progress.Status{Phase: "hunt", Total: 4, Unit: "runs", Note: "0 invalid · kill seed 1: checking"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Fatalf("status\n%+v\nwant\n%+v", tc.got, tc.want)
			}
		})
	}
}
