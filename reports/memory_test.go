package reports

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// TestWriteReportFromMemoryMatchesStore pins that the report a run writes
// from memory (WriteReport with its results, history, scenario and the
// checker's analysis) is byte for byte the report the offline `report`
// command writes from the store (WriteHTML), for lock and queue runs, valid
// and invalid.
func TestWriteReportFromMemoryMatchesStore(t *testing.T) {
	const description = "One Redis node; its clock jumps forward 30s while worker 0 holds the lock."
	tests := []struct {
		name    string
		history history.History
	}{
		{"an invalid lock run", invalidHistory()},
		{"a valid lock run", validHistory()},
		{"a stuck lock run", livenessHistory()},
		{"a queue run with a double capture", queueHistory(6, "t1")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.history
			checkers, live, facts := checker.CheckAnalyzed(context.Background(), h, checker.Options{}, checker.LivenessOptions{})
			if facts == nil {
				t.Fatalf("the fixture is not well-formed: %+v", checkers[0])
			}
			r := Results{Scenario: "memory", Seed: 7, Verdict: checker.Overall(checkers), Checkers: checkers, Liveness: live, Stats: CountStats(h)}
			scenario := "name: memory\ndescription: |\n  " + description + "\nseed: 7\n"
			dir := t.TempDir()
			writeRunDir(t, dir, h, r, scenario)

			if err := WriteHTML(dir); err != nil {
				t.Fatal(err)
			}
			fromStore := readReport(t, dir)
			in := ReportInput{Results: r, History: h, Description: description, Scenario: scenario, Links: RunLinks(dir), Facts: facts}
			if err := WriteReport(dir, in); err != nil {
				t.Fatal(err)
			}
			fromMemory := readReport(t, dir)
			if !bytes.Equal(fromMemory, fromStore) {
				t.Fatalf("the report from memory (%d bytes) differs from the report from the store (%d bytes) at byte %d", len(fromMemory), len(fromStore), firstDifference(fromMemory, fromStore))
			}
			if !bytes.Contains(fromMemory, []byte(string(r.Verdict))) {
				t.Fatalf("the report does not show the verdict %s", r.Verdict)
			}
		})
	}
}

func readReport(t *testing.T, dir string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// firstDifference is the index of the first byte where a and b differ.
func firstDifference(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
