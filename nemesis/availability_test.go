package nemesis

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// bareCluster is a cluster description without abilities, for availability
// checks that never reach a server.
type bareCluster struct {
	system string
	nodes  []cluster.Node
}

func (c bareCluster) System() string        { return c.system }
func (c bareCluster) Nodes() []cluster.Node { return c.nodes }
func (c bareCluster) Close() error          { return nil }

// skewableCluster is a bareCluster that claims to skew clocks.
type skewableCluster struct{ bareCluster }

func (skewableCluster) SetClockOffset(string, time.Duration) error { return nil }

func TestAvailability(t *testing.T) {
	nw, err := cluster.NewNetwork()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nw.Close() })
	masters := bareCluster{system: cluster.Redis, nodes: fiveMasters()}
	etcd := skewableCluster{bareCluster{system: cluster.Etcd, nodes: []cluster.Node{{Name: "n1"}}}}
	tests := []struct {
		name  string
		fault Fault
		env   *Env
		ok    bool
	}{
		{"partition without a network", Partition{}, &Env{Cluster: masters}, false},
		{"partition with a network", Partition{}, &Env{Cluster: masters, Network: nw}, true},
		{"clock-bump on etcd", ClockBump{}, &Env{Cluster: etcd}, false},
		{"clock-strobe on a cluster that cannot skew", ClockStrobe{}, &Env{Cluster: masters}, false},
		{"pause on a cluster that cannot pause", Pause{}, &Env{Cluster: masters}, false},
		{"kill on a cluster that cannot kill", Kill{}, &Env{Cluster: masters}, false},
		{"failover without replicas", Failover{}, &Env{Cluster: masters, Network: nw}, false},
		{"failover on postgres", Failover{}, &Env{Cluster: bareCluster{system: cluster.Postgres, nodes: sentinelTopology()}, Network: nw}, false},
		{"failover with a replica", Failover{}, &Env{Cluster: bareCluster{system: cluster.Redis, nodes: sentinelTopology()}, Network: nw}, true},
		{"sentinel-failover without sentinels", SentinelFailover{}, &Env{Cluster: masters, Network: nw}, false},
		{"client-pause without workers", ClientPause{}, &Env{Cluster: masters}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.fault.Available(tc.env)
			if tc.ok && err != nil {
				t.Fatalf("Available = %v, want nil", err)
			}
			if !tc.ok && !errors.Is(err, cluster.ErrUnavailable) {
				t.Fatalf("Available = %v, want cluster.ErrUnavailable", err)
			}
		})
	}
}

func TestRunnerRecordsFaultsAndHeals(t *testing.T) {
	workers := &quietWorkers{n: 3}
	rec := history.NewRecorder()
	r := NewRunner(&Env{Cluster: bareCluster{system: cluster.Redis, nodes: fiveMasters()}, Workers: workers, Recorder: rec})
	steps := Schedule{
		{At: 0, Fault: "client-clock", Targets: []string{"w1"}, Offset: -5 * time.Second, Duration: 50 * time.Millisecond},
		{At: 0, Fault: "client-clock", Targets: []string{"w2"}, Offset: 7 * time.Second},
		{At: 0, Fault: "clock-bump", Targets: []string{"n1"}, Offset: time.Second}, // unavailable: recorded, returned
	}
	err := r.Run(context.Background(), time.Now(), steps)
	if !errors.Is(err, cluster.ErrUnavailable) {
		t.Fatalf("Run = %v, want the unavailable clock-bump reported", err)
	}
	if got := workers.clocks; got[1] != 0 || got[2] != 7*time.Second {
		t.Fatalf("after Run the worker clocks are %v, want w1 healed and w2 at +7s", got)
	}
	if err := r.HealAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := workers.clocks[2]; got != 0 {
		t.Fatalf("HealAll left w2's clock at %v", got)
	}
	var fs []string
	for _, op := range rec.History() {
		if op.F == "clock-bump" {
			// A fault the cluster cannot take did not take effect.
			if op.Process != history.NemesisProcess || op.Type != history.Fail || !strings.Contains(op.Error, "cannot skew") {
				t.Fatalf("clock-bump %+v is not a fail op of process -1 with its error", op)
			}
		} else if op.Process != history.NemesisProcess || op.Type != history.Info || op.Error != "" {
			t.Fatalf("nemesis op %+v is not an info op of process -1", op)
		}
		fs = append(fs, op.F)
		if op.F == "client-clock" && op.Error == "" {
			var v map[string]any
			if err := json.Unmarshal(op.Value, &v); err != nil || v["offset"] == nil || v["workers"] == nil {
				t.Fatalf("client-clock value %s (%v) does not say what was done to whom", op.Value, err)
			}
		}
	}
	want := map[string]int{"client-clock": 2, "client-clock-reset": 2, "clock-bump": 1}
	for f, n := range want {
		c := 0
		for _, g := range fs {
			if g == f {
				c++
			}
		}
		if c != n {
			t.Errorf("recorded %d %s ops in %v, want %d", c, f, fs, n)
		}
	}
}

func TestOverlappingLinkFaultsHealSeparately(t *testing.T) {
	nw, err := cluster.NewNetwork(linknet.WithProxies()) // latency needs proxies
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nw.Close() })
	for _, l := range []string{"w0->n1", "w0->n2", "w1->n1"} {
		// Nothing listens upstream: no connection is ever made here.
		if _, err := nw.Link(l, "127.0.0.1:9"); err != nil {
			t.Fatal(err)
		}
	}
	nodes := []cluster.Node{{Name: "n1"}, {Name: "n2"}}
	env := &Env{Cluster: bareCluster{system: cluster.Redis, nodes: nodes}, Network: nw, Workers: &quietWorkers{n: 2}}
	ctx := context.Background()
	healNode, _, err := Partition{}.Inject(ctx, env, Step{Fault: "partition", Targets: []string{"n1"}})
	if err != nil {
		t.Fatal(err)
	}
	healWorker, _, err := Partition{}.Inject(ctx, env, Step{Fault: "partition", Targets: []string{"w0"}})
	if err != nil {
		t.Fatal(err)
	}
	healSlow, _, err := Latency{}.Inject(ctx, env, Step{Fault: "latency", Targets: []string{"n2"}, Options: map[string]string{"delay": "10ms"}})
	if err != nil {
		t.Fatal(err)
	}
	check := func(when string, want ...string) {
		t.Helper()
		if got := nw.Faulty(); !slices.Equal(got, want) {
			t.Fatalf("%s: faulty links %v, want %v", when, got, want)
		}
	}
	cable := linknet.Fault{Kind: linknet.FaultCut}
	if err := env.ApplyLinks(cable, "w1->n1"); err != nil { // an isolated worker, say
		t.Fatal(err)
	}
	check("three faults", "w0->n1", "w0->n2", "w1->n1")
	if err := healNode(ctx); err != nil {
		t.Fatal(err)
	}
	check("after healing the n1 partition", "w0->n1", "w0->n2", "w1->n1")
	if err := env.HealLinks(cable, "w1->n1"); err != nil {
		t.Fatal(err)
	}
	check("after healing the isolated worker", "w0->n1", "w0->n2")
	if err := healWorker(ctx); err != nil {
		t.Fatal(err)
	}
	check("after healing the w0 partition", "w0->n2") // the latency stays
	if err := healSlow(ctx); err != nil {
		t.Fatal(err)
	}
	check("after every heal")
}

func TestBegunAfterTheStartSteps(t *testing.T) {
	workers := &quietWorkers{n: 2}
	r := NewRunner(&Env{Cluster: bareCluster{system: cluster.Redis, nodes: fiveMasters()}, Workers: workers, Recorder: history.NewRecorder()})
	select {
	case <-r.Begun():
		t.Fatal("Begun is closed before Run started")
	default:
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	steps := Schedule{
		{At: time.Hour, Fault: "client-clock", Targets: []string{"w0"}, Offset: time.Second},
		{At: 0, Fault: "client-clock", Targets: []string{"w1"}, Offset: 7 * time.Second},
	}
	go func() { done <- r.Run(ctx, time.Now(), steps) }()
	<-r.Begun()
	workers.mu.Lock()
	got := workers.clocks
	workers.mu.Unlock()
	if got[1] != 7*time.Second || got[0] != 0 {
		t.Fatalf("when Begun closed the worker clocks were %v, want the step at 0 (w1 +7s) in force and the step an hour later (w0) not", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// A Run that stops before its first step still ends Begun.
	r2 := NewRunner(&Env{Cluster: bareCluster{system: cluster.Redis, nodes: fiveMasters()}, Workers: workers})
	ctx2, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if err := r2.Run(ctx2, time.Now(), Schedule{{At: time.Hour, Fault: "client-clock", Targets: []string{"w0"}}}); err != nil {
		t.Fatal(err)
	}
	<-r2.Begun()
}
