package runner_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
	"github.com/jepsen-lite/jepsen-lite/history"
	"github.com/jepsen-lite/jepsen-lite/reports"
	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// slowPauser is a local cluster whose pause of a node takes until the run's
// driving phase ends (the nemesis's context) before it pauses the node, as a
// fault that hangs on a loaded machine would: every step due meanwhile
// waits for it, and the run ends before they come.
type slowPauser struct {
	cluster.Cluster
}

func (s *slowPauser) Pause(ctx context.Context, node string) error {
	<-ctx.Done()
	return s.Cluster.(cluster.Pauser).Pause(context.WithoutCancel(ctx), node)
}

func (s *slowPauser) Resume(ctx context.Context, node string) error {
	return s.Cluster.(cluster.Pauser).Resume(ctx, node)
}

// TestStepsThatDidNotRunMakeTheRunUnknown runs a real Redis node under a
// schedule of more steps than fit in the run: the pause at 200ms acts only
// when the driving phase ends, so the three steps after it are never
// reached. The history records each as a fail op of its fault with its due
// time, results.json lists them as not run, run.log says so, and the run's
// outcome is unknown, though no checker found anything.
func TestStepsThatDidNotRunMakeTheRunUnknown(t *testing.T) {
	yml := `name: steps-not-run
system: {name: redis}
lock: {algorithm: redis-single, ttl: 1s}
workers: 2
duration: 1200ms
quiet: 300ms
nemesis:
  steps:
    - {at: 200ms, fault: pause, targets: [n1], duration: 100ms}
    - {at: 500ms, fault: kill, targets: [n1], duration: 100ms}
    - {at: 800ms, fault: partition, targets: [n1], duration: 100ms}
    - {at: 1000ms, fault: heal-all}
`
	sc, err := scenarios.Parse([]byte(yml), "steps-not-run.yaml", runner.Names())
	if err != nil {
		t.Fatal(err)
	}
	start := func(ctx context.Context, spec cluster.Spec, nw *linknet.Network) (cluster.Cluster, error) {
		c, err := runner.LocalBackend(ctx, spec, nw)
		if err != nil {
			return nil, err
		}
		return &slowPauser{Cluster: c}, nil
	}
	res, err := runner.Run(context.Background(), sc, runner.WithStore(t.TempDir()), runner.WithSeed(1), runner.WithBackend(start))
	if err != nil {
		t.Fatal(err)
	}
	h, _, err := history.ReadFile(filepath.Join(res.Dir, reports.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := history.Validate(h); err != nil {
		t.Fatal(err)
	}
	dues := notRunDues(t, h)
	want := map[string]time.Duration{"kill": 500 * time.Millisecond, "partition": 800 * time.Millisecond, "heal-all": time.Second}
	wantSteps := []string{"at 500ms kill n1 for 100ms", "at 800ms partition n1 for 100ms", "at 1s heal-all"}
	if _, ok := dues["pause"]; ok {
		// A machine that froze for the whole run before 200ms never
		// reached the pause either.
		want["pause"] = 200 * time.Millisecond
		wantSteps = append([]string{"at 200ms pause n1 for 100ms"}, wantSteps...)
	}
	if len(dues) != len(want) || dues["kill"] != want["kill"] || dues["partition"] != want["partition"] || dues["heal-all"] != want["heal-all"] || dues["pause"] != want["pause"] {
		t.Fatalf("the history records the steps not run with the dues %v, want %v", dues, want)
	}
	r := res.Results
	var notRun []string
	for _, s := range r.StepIssues {
		if s.Issue == reports.StepNotRun && !s.Expected {
			notRun = append(notRun, s.Step)
		}
	}
	if !slices.Equal(notRun, wantSteps) {
		t.Fatalf("results.json lists the steps not run %q, want %q", notRun, wantSteps)
	}
	if !r.FaultsFailed() || r.Verdict != checker.Unknown || r.ExpectationMet {
		t.Fatalf("verdict %s, met %v, checkers %+v: want unknown and not met", r.Verdict, r.ExpectationMet, r.Checkers)
	}
	note := r.Checkers[len(r.Checkers)-1]
	if note.Name != "nemesis" || !strings.Contains(note.Note, fmt.Sprintf("%d steps did not run", len(wantSteps))) || !strings.Contains(note.Note, wantSteps[0]) {
		t.Fatalf("the run's results do not say which steps did not run: %+v", note)
	}
	stored, err := reports.ReadResults(res.Dir)
	if err != nil || len(stored.StepIssues) != len(r.StepIssues) {
		t.Fatalf("results.json holds the step issues %+v (%v), want %+v", stored, err, r.StepIssues)
	}
	log, err := os.ReadFile(filepath.Join(res.Dir, reports.RunLogFile))
	if err != nil || !strings.Contains(string(log), fmt.Sprintf("%d not run", len(wantSteps))) || !strings.Contains(string(log), "not-run (heal false, late 0s, expected false): "+wantSteps[0]) {
		t.Fatalf("run.log does not name the steps not run (%v):\n%s", err, log)
	}
}

// notRunDues returns the due time of each fault the history records as not
// run, by the fault's name, and fails the test for one whose error does not
// say why.
func notRunDues(t *testing.T, h history.History) map[string]time.Duration {
	t.Helper()
	dues := map[string]time.Duration{}
	for _, op := range h {
		if op.NotRun() {
			dues[op.F] = *op.Due
			if !strings.HasPrefix(op.Error, "not run: the run ended before its time") {
				t.Errorf("the not-run %s says %q", op.F, op.Error)
			}
		}
	}
	return dues
}
