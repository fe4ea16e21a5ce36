package runner

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/history"
	"github.com/jepsen-lite/jepsen-lite/nemesis"
)

// nodesOnly is a cluster of named nodes and nothing else: enough for the
// network faults, which act on links only.
type nodesOnly []cluster.Node

func (c nodesOnly) System() string        { return cluster.Redis }
func (c nodesOnly) Nodes() []cluster.Node { return c }
func (c nodesOnly) Close() error          { return nil }

// TestIsolatingPauseHealsOnlyItsOwnCut overlaps a partition of worker 0 with
// an isolating client pause of the same worker and checks, from the network
// itself, that the partition still holds after the pause's heal, and that the
// history records the pause with history's own names.
func TestIsolatingPauseHealsOnlyItsOwnCut(t *testing.T) {
	nw, err := cluster.NewNetwork()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nw.Close() })
	links := []string{"w0->n1", "w0->n2", "w1->n1"}
	for _, l := range links {
		// Nothing listens upstream: no connection is ever made here.
		if _, err := nw.Link(l, "127.0.0.1:9"); err != nil {
			t.Fatal(err)
		}
	}
	rec := history.NewRecorder()
	env := &nemesis.Env{Cluster: nodesOnly{{Name: "n1"}, {Name: "n2"}}, Network: nw, Recorder: rec}
	w := &worker{id: 0, rec: rec, pauses: map[string]pause{}, isolate: isolator(env, "w0")}
	env.Workers = workerSet{w}
	ctx := context.Background()

	healPartition, _, err := nemesis.Partition{}.Inject(ctx, env, nemesis.Step{Fault: "partition", Targets: []string{"w0"}})
	if err != nil {
		t.Fatal(err)
	}
	faulty := func(when string, want ...string) {
		t.Helper()
		if got := nw.Faulty(); !slices.Equal(got, want) {
			t.Fatalf("%s: faulty links %v, want %v", when, got, want)
		}
	}
	faulty("partition of w0", "w0->n1", "w0->n2")

	w.armPause(nemesis.BeforeWrite, pause{d: time.Millisecond, isolate: true})
	w.pauseAt(ctx, nemesis.BeforeWrite)
	faulty("after the isolating pause healed", "w0->n1", "w0->n2")

	if err := healPartition(ctx); err != nil {
		t.Fatal(err)
	}
	faulty("after the partition healed")

	// The other order: the pause's cut outlives the partition's heal.
	healPartition, _, err = nemesis.Partition{}.Inject(ctx, env, nemesis.Step{Fault: "partition", Targets: []string{"w0"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.isolate(true); err != nil {
		t.Fatal(err)
	}
	if err := healPartition(ctx); err != nil {
		t.Fatal(err)
	}
	faulty("isolated worker after the partition healed", "w0->n1", "w0->n2")
	if err := w.isolate(false); err != nil {
		t.Fatal(err)
	}
	faulty("after both healed")

	var fs []string
	for _, op := range rec.History() {
		if op.IsAvailability() {
			continue // the partitions' record of the nodes w0 cannot reach
		}
		fs = append(fs, op.F)
	}
	if !slices.Equal(fs, []string{history.FClientPause, history.FClientResume}) {
		t.Fatalf("recorded %v, want one %s and one %s", fs, history.FClientPause, history.FClientResume)
	}
}
