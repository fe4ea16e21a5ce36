package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/clients"
	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// TestReplayOwnLock replays, from the command line, a run of a Go Locker
// of the caller's own: the command line cannot build the lock, so it must
// refuse with one line that names it, exit 254 and run nothing (rather than
// run a built-in algorithm in its place).
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
		name string
		args []string
	}{
		{"--replay", []string{"run", "--replay", res.Dir}},
		{"the run dir", []string{"run", res.Dir}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := t.TempDir()
			code, stdout, stderr := runCLI(t, append(tt.args, "--store", store)...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d; stdout %q, stderr %q", code, exitUsage, stdout, stderr)
			}
			msg := strings.TrimSpace(stderr)
			if strings.Count(msg, "\n") > 0 || !strings.Contains(msg, `"`+name+`"`) || !strings.Contains(msg, "runner.WithLockerNamed") {
				t.Errorf("stderr %q, want one line naming the lock %q and how to run it", stderr, name)
			}
			if entries, _ := os.ReadDir(store); len(entries) > 0 {
				t.Errorf("the refused replay left %d entries in its store", len(entries))
			}
		})
	}
}
