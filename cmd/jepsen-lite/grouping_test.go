package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/checker"
)

// TestCheckGroupsAnomaliesBehindTheirCause checks a history in which one
// paused holder's belief overlaps twenty later grants and its three stale
// writes land after them: `check` prints one double-hold and one
// stale-write, each with a line counting the anomalies that follow from
// it, and --json gives the same count and the followers' ops, while the
// verdict stays invalid (docs/history.md §4, one cause, one finding).
func TestCheckGroupsAnomaliesBehindTheirCause(t *testing.T) {
	const file = "../../checker/testdata/double-holds-one-paused-holder.jsonl"
	code, stdout, stderr := runCLI(t, "check", file)
	for _, want := range []string{
		"double-hold      invalid  1 anomalies (and 19 that follow from them)",
		"double-hold k ops [1 5 10]: worker 1 acquired k at 2.010s while worker 0 held it since 0.110s",
		"+ 19 more double-hold that follow from it: ops [1 13 18], [1 21 26], [1 29 34], ... (see results.json)",
		"+ 2 more stale-write that follow from it",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output does not say %q", want)
		}
	}
	if code != 1 || t.Failed() {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, "check", "--json", file)
	var out struct {
		Checkers []checker.Result `json:"checkers"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil || code != 1 {
		t.Fatalf("exit %d, %v\nstdout:\n%s\nstderr:\n%s", code, err, stdout, stderr)
	}
	var dh []checker.Anomaly
	for _, r := range out.Checkers {
		for _, a := range r.Anomalies {
			if a.Kind == checker.DoubleHold {
				dh = append(dh, a)
			}
		}
	}
	if len(dh) != 1 || dh[0].Follows != 19 || len(dh[0].Followers) != 19 || dh[0].Followers[18][0] != 1 {
		t.Fatalf("double-holds %+v, want one with 19 followers, each naming worker 0's grant (op 1)", dh)
	}
}
