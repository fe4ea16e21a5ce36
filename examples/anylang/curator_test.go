package anylang

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/clients"
	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/history"
	"github.com/jepsen-lite/jepsen-lite/lockproto"
	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// curatorCommand returns the command that runs CuratorLock, failing the
// test when it has not been built (make anylang, part of make build).
func curatorCommand(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("../../build/anylang/curator-lock.jar"); err != nil {
		t.Fatalf("CuratorLock is not built (make anylang): %v", err)
	}
	cmd, err := filepath.Abs("curator_lock.sh")
	if err != nil {
		t.Fatal(err)
	}
	return cmd
}

// TestCuratorConforms runs the protocol's conformance checks against
// CuratorLock and a real ZooKeeper server: every check must hold.
func TestCuratorConforms(t *testing.T) {
	command := curatorCommand(t)
	net, err := cluster.NewNetwork()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { net.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	c, err := runner.LocalBackend(ctx, cluster.Spec{System: "zookeeper", Nodes: 1}, net)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	init := lockproto.Init{System: "zookeeper", Options: map[string]string{}, Seed: 1}
	for _, n := range c.Nodes() {
		init.Endpoints = append(init.Endpoints, lockproto.Endpoint{Name: n.Name, Role: n.Role, Addr: n.Addr})
	}
	cfg := lockproto.Config{Command: command, Init: init, Stderr: func(line string) { t.Logf("client stderr: %s", line) }}
	checks := lockproto.Conform(context.Background(), lockproto.ConformConfig{Config: cfg, TTL: 2 * time.Second})
	// init, the refusal, both releases, not-held, the wait and both exits:
	// a client that claims wait runs at least these.
	if len(checks) < 12 {
		t.Errorf("only %d checks ran", len(checks))
	}
	for _, ch := range checks {
		if !ch.Passed {
			t.Errorf("%s: %s", ch.Name, ch.Detail)
		}
	}
}

// runCurator runs a catalog scenario with seed 1 against CuratorLock.
func runCurator(t *testing.T, name string) *runner.Result {
	t.Helper()
	command := curatorCommand(t)
	sc, err := scenarios.Load(name, runner.Names())
	if err != nil {
		t.Fatal(err)
	}
	sc.Lock.Algorithm = clients.ExecAlgorithm
	if sc.Lock.Options == nil {
		sc.Lock.Options = map[string]string{}
	}
	sc.Lock.Options[clients.ExecCommandOption] = command
	res, err := runner.Run(context.Background(), sc, runner.WithStore(t.TempDir()), runner.WithSeed(1))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// kinds returns the kinds of the anomalies a run found.
func kinds(res *runner.Result) []string {
	var ks []string
	for _, c := range res.Results.Checkers {
		for _, a := range c.Anomalies {
			ks = append(ks, a.Kind)
		}
	}
	return ks
}

// TestCuratorGCPause runs zk-gc-pause against InterProcessMutex: the holder
// is stopped, whole JVM and all, for longer than its session, so ZooKeeper
// expires the session and grants the lock to another worker while the
// stopped one still believes it holds it; its late write is stale. Its
// release afterwards is refused: the client looked its node up first, as
// InterProcessMutex.release() itself returns normally for a node that is
// gone.
func TestCuratorGCPause(t *testing.T) {
	res := runCurator(t, "zk-gc-pause")
	if res.Results.Verdict != checker.Invalid || !res.Results.ExpectationMet {
		t.Fatalf("verdict %s, expectation met %v, anomalies %v (store %s)", res.Results.Verdict, res.Results.ExpectationMet, kinds(res), res.Dir)
	}
	if !slices.Contains(kinds(res), checker.StaleWrite) {
		t.Fatalf("no stale-write among %v (store %s)", kinds(res), res.Dir)
	}
	h, _, err := history.ReadFile(filepath.Join(res.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// Worker 0 is the one paused: its first release after the resume is the
	// release of the lease the pause outlived.
	resumed := false
	for _, op := range h {
		if op.F == "client-resume" {
			resumed = true
			continue
		}
		if !resumed || op.Client != 0 || op.F != history.FRelease || op.Type == history.Invoke {
			continue
		}
		if op.Type != history.Fail || !strings.Contains(op.Error, "not held") {
			t.Errorf("op %d: the paused holder's release is %s %q, want fail (not held)", op.Index, op.Type, op.Error)
		}
		return
	}
	t.Errorf("no release by worker 0 after the resume (store %s)", res.Dir)
}

// TestCuratorWait runs zk-recipe-wait against InterProcessMutex's blocking
// acquire: no faults, so the lock must stay exclusive and live.
func TestCuratorWait(t *testing.T) {
	res := runCurator(t, "zk-recipe-wait")
	if res.Results.Verdict != checker.Valid || !res.Results.ExpectationMet {
		t.Fatalf("verdict %s, expectation met %v, anomalies %v (store %s)", res.Results.Verdict, res.Results.ExpectationMet, kinds(res), res.Dir)
	}
}
