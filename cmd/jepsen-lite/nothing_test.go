package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
	"github.com/jepsen-lite/jepsen-lite/reports"
	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// TestCheckNothingToJudge pins that a history with no worker op, however it
// came to have none, is bad input (exit 254 naming the file), never a valid
// verdict; and that a write applied outside its own invoke–completion window
// is not well-formed.
func TestCheckNothingToJudge(t *testing.T) {
	tests := []struct {
		name string
		file string
		want string
	}{
		{"an empty file", "testdata/empty.jsonl", "testdata/empty.jsonl: nothing to judge: the file holds no op"},
		{"a header alone", "testdata/header-only.jsonl", "testdata/header-only.jsonl: nothing to judge: the history holds only its header"},
		{"garbage with no newline", "testdata/garbage-no-newline.jsonl", "testdata/garbage-no-newline.jsonl: nothing to judge: its only line was incomplete"},
		{"a write applied after its completion", "testdata/write-applied-outside-window.jsonl", "line 5 (op 4): process 0's write was applied at 9000000, outside its own window"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "check", tc.file)
			if code != exitUsage || !strings.Contains(stderr, tc.want) || strings.Contains(stdout, "verdict") {
				t.Fatalf("exit %d, want %d with %q and no verdict\nstdout:\n%s\nstderr:\n%s", code, exitUsage, tc.want, stdout, stderr)
			}
		})
	}
}

// TestFailedSetupIsNothingToJudge runs a scenario whose cluster cannot
// start: the run's directory says its setup failed, `check` refuses it with
// that reason (exit 254), and `gate --from-store` counts it as an error, not
// as a valid run.
func TestFailedSetupIsNothingToJudge(t *testing.T) {
	const name = "redis-single-gc-pause"
	sc, err := scenarios.Load(name, runner.Names())
	if err != nil {
		t.Fatal(err)
	}
	store := t.TempDir()
	noServers := func(context.Context, cluster.Spec, *linknet.Network) (cluster.Cluster, error) {
		return nil, errors.New("no server binary here")
	}
	res, err := runner.Run(context.Background(), sc, runner.WithStore(store), runner.WithSeed(1), runner.WithBackend(noServers))
	if !errors.Is(err, runner.ErrSetup) || res == nil {
		t.Fatalf("Run = %v, want a setup error", err)
	}
	stored, err := reports.ReadResults(res.Dir)
	if err != nil || !strings.Contains(stored.SetupError, "setup failed") || stored.Verdict != "unknown" {
		t.Fatalf("results.json of the failed setup: %+v, %v", stored, err)
	}
	if _, err := os.Stat(filepath.Join(res.Dir, reports.HistoryFile)); err != nil {
		t.Fatalf("the failed run has no history file, so nothing here tests that check refuses it: %v", err)
	}

	code, stdout, stderr := runCLI(t, "check", res.Dir)
	if code != exitUsage || !strings.Contains(stderr, res.Dir+": nothing to judge: the run's setup failed: ") || !strings.Contains(stderr, "no server binary here") {
		t.Fatalf("check exit %d, want %d naming the directory and the reason\nstdout:\n%s\nstderr:\n%s", code, exitUsage, stdout, stderr)
	}

	var out, errOut bytes.Buffer
	code, err = gateCmd(context.Background(), []string{name, "--seeds", "1", "--from-store", store}, &out, &errOut)
	if err != nil {
		t.Fatalf("gate: %v\n%s", err, errOut.String())
	}
	if code == exitHeld || !strings.Contains(out.String(), "error×1") || strings.Contains(out.String(), "valid×1") {
		t.Fatalf("gate --from-store exit %d, want the failed setup counted as an error:\n%s%s", code, out.String(), errOut.String())
	}
}
