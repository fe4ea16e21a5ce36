package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/datasheet"
	"github.com/jepsen-lite/jepsen-lite/hunt"
)

// TestMatrixRejectsABadCampaignFile: a file that is not a campaign is bad
// input, named in the error.
func TestMatrixRejectsABadCampaignFile(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"rows": 3}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, "matrix", bad); code != exitUsage || !strings.Contains(stderr, "bad.json") {
		t.Errorf("a malformed campaign file: exit %d, stderr %q; want %d naming it", code, stderr, exitUsage)
	}
}

// writeParts writes the campaign files of the two parts of a hunt of
// redlock (kill invalid at seed 2 in part 2 and seed 3 in part 1) into dir
// and returns their paths, part 1 first; edit, when set, changes part 2.
func writeParts(t *testing.T, dir string, edit func(*datasheet.CampaignFile)) []string {
	t.Helper()
	var paths []string
	for i := 1; i <= 2; i++ {
		seed := uint64(4 - i)
		rep := &hunt.Report{Scenario: "redlock-baseline", Runs: 2, Elapsed: time.Minute, Rows: []*hunt.Row{
			{Fault: hunt.NoFault, Runs: 1},
			{Fault: "kill", Runs: 1, Invalid: 1, Anomalies: []string{"stale-write"}, Failing: []string{fmt.Sprintf("store/kill-%d", seed)}, FailingSeeds: []uint64{seed}, Findings: []string{fmt.Sprintf("stale-write: seed %d", seed)}},
		}}
		cf := &datasheet.CampaignFile{Target: "redlock", Algorithm: "redlock", System: "redis", Nodes: 3, Workers: 4, Duration: 10 * time.Second, TTL: time.Second,
			RunsPerKind: 2, Seed: 2, Backend: "local", Faults: []string{"kill"}, Report: rep, Shard: &hunt.Shard{Index: i, Count: 2}}
		if i == 2 && edit != nil {
			edit(cf)
		}
		p := filepath.Join(dir, fmt.Sprintf("redlock-%d.json", i))
		if err := cf.Write(p); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

// TestMatrixOfMergedShards merges the campaign files of a hunt's two parts
// given in reverse (hunt --merge): it exits as the whole campaign (1, a run
// invalid), its first failing run is the lowest seed's, and matrix lays
// the merged file out as one row that says its time is the parts' sum,
// while it refuses a part's file alone.
func TestMatrixOfMergedShards(t *testing.T) {
	dir := t.TempDir()
	parts := writeParts(t, dir, nil)
	merged := filepath.Join(dir, "redlock.json")
	code, stdout, stderr := runCLI(t, "hunt", "--merge", parts[1], parts[0], "--json", merged)
	if code != exitViolated || !strings.Contains(stdout, "2/2") || !strings.Contains(stdout, "store/kill-2") || strings.Contains(stdout, "store/kill-3") {
		t.Fatalf("hunt --merge: exit %d, want %d with kill 2/2 invalid, first failing run store/kill-2:\n%s%s", code, exitViolated, stdout, stderr)
	}
	code, md, stderr := runCLI(t, "matrix", merged)
	for _, want := range []string{"**unsafe** [2/2](#redlock-kill): stale-write", "The first failing run: stale-write: seed 2.", "4 runs in 2m0s (the sum of its 2 parts' times, merged)"} {
		if code != exitHeld || !strings.Contains(md, want) {
			t.Errorf("matrix of the merge: exit %d, lacks %q:\n%s%s", code, want, md, stderr)
		}
	}
	code, _, stderr = runCLI(t, "matrix", parts[0], merged)
	if code != exitUsage || !strings.Contains(stderr, "redlock-1.json holds part 1/2") {
		t.Errorf("matrix of a part: exit %d, %q; want %d naming it", code, stderr, exitUsage)
	}
}

// TestHuntMergeShardsRefused: hunt --merge refuses with 254 and one line,
// naming the files, anything but every part of one campaign once; and
// flags that do not go with it, as --page with --shard.
func TestHuntMergeShardsRefused(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "merged.json")
	good := writeParts(t, filepath.Join(dir), nil)
	other := writeParts(t, t.TempDir(), func(c *datasheet.CampaignFile) { c.Seed = 7 })
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"different campaigns", []string{"--merge", good[0], other[1], "--json", out}, `parts of different campaigns: seed "2" and "7"`},
		{"a part twice", []string{"--merge", good[0], good[1], good[1], "--json", out}, "are both part 2/2"},
		{"a part missing", []string{"--merge", good[1], "--json", out}, "hold parts 2 of 2: part 1 is missing"},
		{"without --json", []string{"--merge", good[0], good[1]}, "--merge wants --json"},
		{"with a campaign's flag", []string{"--merge", good[0], good[1], "--json", out, "--runs", "3"}, "not [--runs]"},
		{"--page with --shard", []string{"redlock", "--shard", "1/2", "--page", dir, "--list"}, "--page with --shard"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, append([]string{"hunt"}, tt.args...)...)
			if code != exitUsage || !strings.Contains(stderr, tt.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
				t.Errorf("hunt %v: exit %d, stderr %q; want %d, one line with %q", tt.args, code, stderr, exitUsage, tt.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("hunt %v wrote %s", tt.args, out)
			}
		})
	}
}
