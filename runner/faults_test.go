package runner_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
	"github.com/jepsen-lite/jepsen-lite/history"
	"github.com/jepsen-lite/jepsen-lite/nemesis"
	"github.com/jepsen-lite/jepsen-lite/reports"
	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// portTaker is a local cluster whose killed nodes find their port taken: a
// listener binds it as soon as the node is dead, so that the node's restart
// cannot bind and fails, as when another process takes the port while a node
// is down. It kills and starts nodes only (the faults of these tests).
type portTaker struct {
	cluster.Cluster
	t     *testing.T
	mu    sync.Mutex
	taken []string // the addresses taken
}

func (p *portTaker) Kill(ctx context.Context, node string) error {
	if err := p.Cluster.(cluster.Killer).Kill(ctx, node); err != nil {
		return err
	}
	for _, n := range p.Nodes() {
		if n.Name != node {
			continue
		}
		ln, err := net.Listen("tcp", n.Addr)
		if err != nil {
			p.t.Errorf("taking the port of the killed %s: %v", node, err)
			return nil
		}
		p.t.Cleanup(func() { ln.Close() })
		p.mu.Lock()
		p.taken = append(p.taken, n.Addr)
		p.mu.Unlock()
	}
	return nil
}

func (p *portTaker) Start(ctx context.Context, node string) error {
	return p.Cluster.(cluster.Killer).Start(ctx, node)
}

// restartScenario kills the one Redis node at 500ms for 1s; expectFailure
// sets the step's expect-failure.
func restartScenario(t *testing.T, expectFailure bool) *scenarios.Scenario {
	t.Helper()
	yml := `name: restart-port-taken
system: {name: redis}
lock: {algorithm: redis-single, ttl: 1s}
workers: 2
duration: 2500ms
quiet: 500ms
nemesis:
  steps:
    - {at: 500ms, fault: kill, targets: [n1], duration: 1s` + map[bool]string{true: ", expect-failure: true", false: ""}[expectFailure] + `}
`
	sc, err := scenarios.Parse([]byte(yml), "restart-port-taken.yaml", runner.Names())
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// TestRestartThatCannotBind runs a real Redis node whose restart after a kill
// cannot bind its port: the history records the kill as a fault in force and
// its heal (start) as failed with its error, the availability record keeps
// the node down to the end, and the run's outcome is unknown with the reason
// in results.json; unless the step expects the failure, when the run is
// judged as usual.
func TestRestartThatCannotBind(t *testing.T) {
	for _, expected := range []bool{false, true} {
		name := map[bool]string{false: "unexpected", true: "expected"}[expected]
		t.Run(name, func(t *testing.T) {
			var taker *portTaker
			start := func(ctx context.Context, spec cluster.Spec, nw *linknet.Network) (cluster.Cluster, error) {
				c, err := runner.LocalBackend(ctx, spec, nw)
				if err != nil {
					return nil, err
				}
				taker = &portTaker{Cluster: c, t: t}
				return taker, nil
			}
			res, err := runner.Run(context.Background(), restartScenario(t, expected), runner.WithStore(t.TempDir()), runner.WithSeed(1), runner.WithBackend(start))
			if err != nil {
				t.Fatal(err)
			}
			if len(taker.taken) != 1 {
				t.Fatalf("took the ports %v, want n1's", taker.taken)
			}
			h, _, err := history.ReadFile(filepath.Join(res.Dir, reports.HistoryFile))
			if err != nil {
				t.Fatal(err)
			}
			if err := history.Validate(h); err != nil {
				t.Fatal(err)
			}
			var trail []string
			var last history.Availability
			for _, op := range h {
				if !op.IsNemesis() || op.IsHeader() || op.IsEnd() || op.IsHostRecord() {
					continue
				}
				if a, ok := history.AvailabilityOf(op); ok {
					last = a
					trail = append(trail, "availability "+strings.Join(a.Down, ","))
					continue
				}
				trail = append(trail, op.F+" "+string(op.Type))
				if op.F == "start" && !strings.Contains(op.Error, "n1") {
					t.Errorf("the failed start's error %q does not name the node", op.Error)
				}
			}
			if want := []string{"availability n1", "kill info", "start fail"}; !slices.Equal(trail, want) {
				t.Fatalf("nemesis ops %q, want %q", trail, want)
			}
			if !slices.Equal(last.Down, []string{"n1"}) {
				t.Fatalf("the last availability record says %v down, want n1 to the end", last.Down)
			}
			r := res.Results
			if len(r.FailedFaults) != 1 || !r.FailedFaults[0].Heal || r.FailedFaults[0].Expected != expected {
				t.Fatalf("results.json lists the failed faults %+v, want the kill's heal (expected %v)", r.FailedFaults, expected)
			}
			if expected {
				if r.FaultsFailed() || r.Verdict != checker.Valid || !r.ExpectationMet {
					t.Fatalf("an expected failure: verdict %s, met %v, checkers %+v", r.Verdict, r.ExpectationMet, r.Checkers)
				}
				return
			}
			if !r.FaultsFailed() || r.Verdict != checker.Unknown || r.ExpectationMet {
				t.Fatalf("an unexpected failure: verdict %s, met %v, want unknown and not met", r.Verdict, r.ExpectationMet)
			}
			note := r.Checkers[len(r.Checkers)-1]
			if note.Name != "nemesis" || !strings.Contains(note.Note, "the heal of at 500ms kill n1 for 1s failed") {
				t.Fatalf("the run's results do not say which heal failed: %+v", note)
			}
		})
	}
}

// TestNothingStartsForTargetsTheRunDoesNotHave runs scenarios whose faults
// target a node or a worker the run does not have, or whose lock options the
// algorithm does not take: Run refuses each with scenarios.ErrInvalid, naming
// the thing, before it creates a run directory or starts any server (the
// backend is never called).
func TestNothingStartsForTargetsTheRunDoesNotHave(t *testing.T) {
	base := func() *scenarios.Scenario {
		return &scenarios.Scenario{Name: "bad-targets", System: scenarios.System{Name: cluster.Redis, Nodes: 1},
			Lock: scenarios.Lock{Algorithm: "redis-single", TTL: time.Second}, Workers: 2, Duration: 2 * time.Second}
	}
	tests := []struct {
		name string
		edit func(*scenarios.Scenario)
		opts []runner.Option
		want string
	}{
		{"n7 on one node", func(s *scenarios.Scenario) {
			s.Nemesis.Steps = nemesis.Schedule{{At: time.Second, Fault: "kill", Targets: []string{"n7"}}}
		}, nil, `"n7" is neither a node (n1)`},
		{"w9 with two workers", func(s *scenarios.Scenario) {
			s.Nemesis.Steps = nemesis.Schedule{{At: time.Second, Fault: "client-pause", Targets: []string{"w9"}}}
		}, nil, `"w9"`},
		{"w1 once the run has one worker", func(s *scenarios.Scenario) {
			s.Nemesis.Steps = nemesis.Schedule{{At: time.Second, Fault: "client-pause", Targets: []string{"w1"}}}
		}, []runner.Option{runner.WithWorkers(1)}, `"w1"`},
		{"an unknown lock option", func(s *scenarios.Scenario) {
			s.Lock.Options = map[string]string{"colour": "red"}
		}, nil, "unknown colour (known: timeout)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			started := false
			start := func(context.Context, cluster.Spec, *linknet.Network) (cluster.Cluster, error) {
				started = true
				return nil, errors.New("no cluster should start")
			}
			s := base()
			tc.edit(s)
			store := filepath.Join(t.TempDir(), "store")
			opts := append([]runner.Option{runner.WithStore(store), runner.WithBackend(start)}, tc.opts...)
			_, err := runner.Run(context.Background(), s, opts...)
			if !errors.Is(err, scenarios.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run = %v, want ErrInvalid saying %q", err, tc.want)
			}
			if started {
				t.Fatal("the backend was asked to start a cluster")
			}
			if _, err := os.Stat(store); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the store %s was created (%v)", store, err)
			}
		})
	}
}
