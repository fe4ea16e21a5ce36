package nemesis_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/clients"
	"github.com/jepsen-lite/jepsen-lite/history"
	"github.com/jepsen-lite/jepsen-lite/nemesis"
	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// runScenario runs the catalog scenario name with workers workers for d,
// under steps, on the local cluster backend (real servers), with the
// Locker factory f when it is not nil, and returns the run's history.
func runScenario(t *testing.T, name string, workers int, d time.Duration, steps nemesis.Schedule, f clients.Factory) history.History {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not installed")
	}
	sc, err := scenarios.Load(name, runner.Names())
	if err != nil {
		t.Fatal(err)
	}
	sc.Workers, sc.Duration, sc.Nemesis.Steps = workers, d, steps
	opts := []runner.Option{runner.WithStore(t.TempDir()), runner.WithSeed(1)}
	if f != nil {
		opts = append(opts, runner.WithLocker(f))
	}
	res, err := runner.Run(context.Background(), sc, opts...)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	h, _, err := history.ReadFile(filepath.Join(res.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return h
}
