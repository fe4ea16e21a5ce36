package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/clients"
	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// TestReplayOwnLock replays, shrinks and hunts, from the command line, a
// run of a Go Locker of the caller's own made in-process: the command line
// cannot build the lock, so it must refuse with one line that names it and
// says how to do it from Go, exit 254 and run nothing (rather than run a
// built-in algorithm in its place).
func TestReplayOwnLock(t *testing.T) {
	const name = "my-redis-lock"
	sc, err := scenarios.Load("redis-single-baseline", runner.Names())
	if err != nil {
		t.Fatal(err)
	}
	res, err := runner.Run(context.Background(), sc, runner.WithStore(t.TempDir()), runner.WithSeed(1),
		runner.WithTimeLimit(time.Second), runner.WithLockerNamed(name, clients.NewRedisSingle))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		args   []string
		fromGo string
	}{
		{"--replay", []string{"run", "--replay", res.Dir}, "lockapi.Replay"},
		{"the run dir", []string{"run", res.Dir}, "lockapi.Replay"},
		{"shrink", []string{"shrink", res.Dir}, "lockapi.Shrink"},
		{"hunt", []string{"hunt", res.Dir, "--runs", "1"}, "lockapi.Hunt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := t.TempDir()
			args := tt.args
			if tt.args[0] != "shrink" {
				args = append(args, "--store", store)
			}
			code, stdout, stderr := runCLI(t, args...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d; stdout %q, stderr %q", code, exitUsage, stdout, stderr)
			}
			msg := strings.TrimSpace(stderr)
			if strings.Count(msg, "\n") > 0 || !strings.Contains(msg, `"`+name+`"`) || !strings.Contains(msg, tt.fromGo) || !strings.Contains(msg, "--lock-command") {
				t.Errorf("stderr %q, want one line naming the lock %q and how to do it from Go (%s) or with --lock-command", stderr, name, tt.fromGo)
			}
			if entries, _ := os.ReadDir(store); len(entries) > 0 {
				t.Errorf("the refused command left %d entries in its store", len(entries))
			}
			if _, err := os.Stat(filepath.Join(res.Dir, "shrink")); err == nil {
				t.Errorf("the refused command left %s", filepath.Join(res.Dir, "shrink"))
			}
		})
	}
}
