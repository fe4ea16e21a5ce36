package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/reports"
)

// TestCheckRunDirWithStepsNotAsWritten checks a stored run directory whose
// results.json lists a step that did not run as written: the history alone
// is valid, but `check` of the directory judges it as the run did, unknown
// (exit 2) naming the step, unless the step allowed it (expect-failure),
// when the run is valid (exit 0).
func TestCheckRunDirWithStepsNotAsWritten(t *testing.T) {
	h, err := os.ReadFile("../../checker/testdata/steps-late-and-not-run.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		expected bool
		code     int
	}{{"not allowed", false, exitUnknown}, {"allowed by expect-failure", true, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, reports.HistoryFile), h, 0o644); err != nil {
				t.Fatal(err)
			}
			res := &reports.Results{Scenario: "steps", Verdict: checker.Valid, StepIssues: []reports.StepIssue{
				{Step: "at 2.8s kill n1", Issue: reports.StepNotRun, Expected: tc.expected},
			}}
			if err := reports.WriteResults(dir, res); err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := runCLI(t, "check", dir)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
			if said := strings.Contains(stdout, "1 step did not run (the run ended before its time): at 2.8s kill n1"); said == tc.expected {
				t.Fatalf("the step not run named %v, want %v:\n%s", said, !tc.expected, stdout)
			}
		})
	}
}
