package runner_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/clients"
	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
	"github.com/jepsen-lite/jepsen-lite/nemesis"
	"github.com/jepsen-lite/jepsen-lite/reports"
	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// refusingBackend declares that it runs only the systems it names, and
// counts the clusters it was asked to start (it starts none).
type refusingBackend struct {
	systems []string
	checked []cluster.Spec
	starts  int
}

func (b *refusingBackend) CheckSpec(spec cluster.Spec) error {
	b.checked = append(b.checked, spec)
	for _, s := range b.systems {
		if s == spec.System {
			return nil
		}
	}
	return fmt.Errorf("system %q: %w (this backend runs %s)", spec.System, cluster.ErrUnavailable, strings.Join(b.systems, ", "))
}

func (b *refusingBackend) Start(context.Context, cluster.Spec, *linknet.Network) (cluster.Cluster, error) {
	b.starts++
	return nil, errors.New("this backend starts nothing")
}

// TestValidateStartsNothing pins the validate stage: bad input of every
// kind that can be known before a server starts is refused with a one-line
// error that the command line turns into exit 254, the backend is asked to
// start nothing and the store stays empty.
func TestValidateStartsNothing(t *testing.T) {
	tests := []struct {
		name string
		edit func(*scenarios.Scenario)
		opts []runner.Option
		is   error
		want string
	}{
		{"a system the backend does not run", nil, nil, runner.ErrSetup, `backend: system "redis": cluster: not available (this backend runs postgres)`},
		{"an unknown lock option", func(s *scenarios.Scenario) { s.Lock.Options = map[string]string{"no-such-option": "1"} }, nil, scenarios.ErrInvalid, "lock.options"},
		{"an unknown algorithm", func(s *scenarios.Scenario) { s.Lock.Algorithm = "no-such-lock" }, nil, clients.ErrUnknownAlgorithm, `"no-such-lock"`},
		{"a lock of its own without its factory", func(s *scenarios.Scenario) { s.Lock.Own = true }, nil, runner.ErrOwnLock, "only Go code that has its factory"},
		{"a lock of its own under a built-in name", nil, []runner.Option{runner.WithLockerNamed("redlock", clients.NewRedisSingle)}, nil, `"redlock" is a built-in algorithm's name`},
		{"renew on a lock that cannot", func(s *scenarios.Scenario) { s.Lock.Algorithm, s.Lock.Renew = "redis-zadd-mutex", 100*time.Millisecond }, nil, runner.ErrSetup, "lock.renew: clients: missing capability: redis-zadd-mutex cannot renew a lease"},
		{"a guarded register on a lock without one", func(s *scenarios.Scenario) { s.Resource = scenarios.Guarded }, nil, runner.ErrSetup, "resource: clients: missing capability: redis-single cannot keep the register"},
		{"workers past their bound", nil, []runner.Option{runner.WithWorkers(scenarios.MaxWorkers + 1)}, scenarios.ErrInvalid, fmt.Sprintf("workers: %d workers; a run has at most %d", scenarios.MaxWorkers+1, scenarios.MaxWorkers)},
		{"a run past the longest duration", nil, []runner.Option{runner.WithTimeLimit(scenarios.MaxDuration + time.Second)}, scenarios.ErrInvalid, "duration: 24h0m1s is beyond 24h0m0s"},
		{"a random interval of 1ns set in code", func(s *scenarios.Scenario) {
			s.Nemesis.Random = &nemesis.RandomSpec{Faults: []string{"kill"}, Interval: 1, MinDuration: 1, MaxDuration: 1}
		}, nil, scenarios.ErrInvalid, "nemesis.random.interval: must be at least 2ms"},
		{"a stored scenario a replay could not read", func(s *scenarios.Scenario) { s.Description = strings.Repeat("x", scenarios.MaxLineLength) }, nil, scenarios.ErrInvalid, "would not be read back by a replay"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc := load(t, "redis-single-gc-pause")
			if tc.edit != nil {
				tc.edit(sc)
			}
			store := t.TempDir()
			b := &refusingBackend{systems: []string{cluster.Postgres}}
			if tc.edit != nil || tc.opts != nil {
				b.systems = append(b.systems, cluster.Redis)
			}
			opts := append([]runner.Option{runner.WithStore(store), runner.WithBackendOf(b)}, tc.opts...)
			res, err := runner.Run(context.Background(), sc, opts...)
			if err == nil || (tc.is != nil && !errors.Is(err, tc.is)) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("Run = %v, want one line wrapping %v with %q", err, tc.is, tc.want)
			}
			if res != nil || b.starts != 0 {
				t.Errorf("the refused run returned %+v and started %d clusters", res, b.starts)
			}
			if entries, _ := os.ReadDir(store); len(entries) > 0 {
				t.Errorf("the refused run left %d entries in its store", len(entries))
			}
		})
	}
}

// TestBackendIsAskedTheRunsSpec pins what the validate stage asks a
// backend that declares what it runs: the scenario's cluster, with the
// clock skew its schedule needs.
func TestBackendIsAskedTheRunsSpec(t *testing.T) {
	tests := []struct {
		scenario string
		want     cluster.Spec
	}{
		{"redis-single-gc-pause", cluster.Spec{System: cluster.Redis, Topology: "masters", Nodes: 1}},
		{"redlock-clock-jump", cluster.Spec{System: cluster.Redis, Topology: "masters", Nodes: 5, ClockSkew: true}},
	}
	for _, tc := range tests {
		t.Run(tc.scenario, func(t *testing.T) {
			b := &refusingBackend{}
			_, err := runner.Run(context.Background(), load(t, tc.scenario), runner.WithStore(t.TempDir()), runner.WithBackendOf(b))
			if !errors.Is(err, cluster.ErrUnavailable) || len(b.checked) != 1 {
				t.Fatalf("Run = %v after %d checks, want the backend's refusal after one", err, len(b.checked))
			}
			if got := b.checked[0]; got != tc.want {
				t.Errorf("the backend was asked about %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestAbilitiesBeforeTheClock runs a scenario that asks an external
// client for what it says it cannot do (resp_lock.py claims wait, not
// renew), on a real redis-server: an external client's abilities are its
// own to say, so they are known only once its first process answers; the
// run fails its setup naming what it lacks, before its clock starts (the
// history holds no op) and with nothing left running. A built-in lock's
// capabilities are declared, and refused before anything starts
// (TestValidateStartsNothing).
func TestAbilitiesBeforeTheClock(t *testing.T) {
	sc := execScenario(t, "redis-single-gc-pause", "")
	sc.Lock.Renew = 100 * time.Millisecond
	var nodes []cluster.Node
	local := func(ctx context.Context, spec cluster.Spec, net *linknet.Network) (cluster.Cluster, error) {
		c, err := runner.LocalBackend(ctx, spec, net)
		if err == nil {
			nodes = c.Nodes()
		}
		return c, err
	}
	res, err := runner.Run(context.Background(), sc, runner.WithStore(t.TempDir()), runner.WithSeed(1), runner.WithTimeLimit(time.Second), runner.WithBackend(local))
	const want = "cannot renew"
	if !errors.Is(err, runner.ErrSetup) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Run = %v, want a setup error with %q", err, want)
	}
	stored, rerr := reports.ReadResults(res.Dir)
	if rerr != nil || stored.SetupError != err.Error() {
		t.Fatalf("results.json of the failed setup: %+v, %v", stored, rerr)
	}
	if h, err := os.ReadFile(filepath.Join(res.Dir, reports.HistoryFile)); err != nil || len(h) != 0 {
		t.Errorf("the history of a run that never started its clock holds %q (%v)", h, err)
	}
	if len(nodes) == 0 {
		t.Fatal("the run started no cluster, so nothing here tests its teardown")
	}
	for _, n := range nodes {
		if conn, err := net.Dial("tcp", n.Addr); err == nil {
			conn.Close()
			t.Errorf("node %s still answers at %s after the failed run", n.Name, n.Addr)
		}
	}
}

// assertReportMatchesStore checks that the report a run wrote from memory
// is the report the offline `report` command writes from its store.
func assertReportMatchesStore(t *testing.T, dir string) {
	t.Helper()
	path := filepath.Join(dir, reports.ReportFile)
	fromMemory, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := reports.WriteHTML(dir); err != nil {
		t.Fatal(err)
	}
	fromStore, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fromMemory, fromStore) {
		t.Errorf("the run's report (%d bytes) differs from the report written again from its store (%d bytes)", len(fromMemory), len(fromStore))
	}
}
