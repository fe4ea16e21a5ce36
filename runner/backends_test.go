package runner_test

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/docker"
	"github.com/jepsen-lite/jepsen-lite/cluster/local"
	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// agreeTags selects the scenarios TestBackendsAgree compares: those that
// carry every tag (comma-separated), or the whole catalog when empty.
var agreeTags = flag.String("agree-tags", "quick", "TestBackendsAgree: the tags of the scenarios to compare; empty for the whole catalog")

// agreeAll makes TestBackendsAgree compare every selected scenario; without
// it (make test), the first selected scenario of one system, in turn by the
// day of the year, so that the test suite stays within its time (make
// test-docker sets it; the conformance suite tests every system on both
// backends in every run).
var agreeAll = flag.Bool("agree-all", false, "TestBackendsAgree: compare every selected scenario, not the first of each system")

// TestBackendsAgree runs every scenario of the quick set (-agree-tags
// selects others; -agree-tags= the whole catalog; without -agree-all, the
// first of one system, in turn by the day) whose system both the local and the docker
// backend run (cluster.Backend.Check), on each, and
// requires the scenario's expectation from both, the same verdicts, and
// nothing of the harness left in the engine afterwards. It is skipped,
// saying why, where no Docker engine or no node image is present (`make
// images` builds it), and in -short mode.
func TestBackendsAgree(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPED in -short mode: runs every quick scenario twice")
	}
	ctx := context.Background()
	cli, err := docker.Engine(ctx)
	if err != nil {
		t.Skipf("SKIPPED: no working Docker engine here (%v); the docker backend was not compared", err)
	}
	defer cli.Close()
	if err := docker.CheckImage(ctx, cli, docker.ImageName()); err != nil {
		t.Skipf("SKIPPED: the node image is missing (%v); run `make images` to compare the backends", err)
	}
	cat, err := scenarios.Catalog(names())
	if err != nil {
		t.Fatal(err)
	}
	backends := []cluster.Backend{local.Backend, docker.Backend}
	compared := 0
	sampled := map[string]bool{} // the systems compared, without -agree-all
	var tags []string
	if *agreeTags != "" {
		tags = strings.Split(*agreeTags, ",")
	}
	runnable, today := agreeable(scenarios.Select(cat, tags...), backends)
	for _, sc := range runnable {
		if !*agreeAll && (sampled[sc.System.Name] || sc.System.Name != today) {
			continue
		}
		sampled[sc.System.Name] = true
		compared++
		t.Run(sc.Name, func(t *testing.T) {
			verdicts := map[string]string{}
			for _, b := range backends {
				res, err := runner.Run(ctx, sc, runner.WithClusterBackend(b), runner.WithStore(t.TempDir()), runner.WithSeed(1))
				if err != nil {
					t.Fatalf("%s: %v", b.Name, err)
				}
				if !res.Results.ExpectationMet {
					t.Errorf("%s backend: verdict %s, expectation not met: %+v", b.Name, res.Results.Verdict, res.Results.Checkers)
				}
				verdicts[b.Name] = string(res.Results.Verdict)
			}
			if verdicts["local"] != verdicts["docker"] {
				t.Errorf("backends disagree: %v", verdicts)
			}
		})
	}
	if compared == 0 {
		t.Fatalf("no scenario tagged %q runs on both backends", *agreeTags)
	}
	// Nothing of the harness remains in the engine.
	for _, args := range [][]string{
		{"ps", "-a", "-q", "--filter", "label=" + docker.RunLabel},
		{"network", "ls", "-q", "--filter", "label=" + docker.RunLabel},
	} {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		out, err := exec.CommandContext(ctx, "docker", args...).Output()
		cancel()
		if err != nil {
			t.Fatalf("docker %v: %v", args, err)
		}
		if s := strings.TrimSpace(string(out)); s != "" {
			t.Errorf("docker %v lists what the harness left behind:\n%s", args, s)
		}
	}
}

// dockerTested reports whether this run tests system in containers: every
// system unless JEPSEN_LITE_DOCKER_SYSTEMS names some (cluster/docker's
// tests read it the same way).
func dockerTested(system string) bool {
	switch v := os.Getenv("JEPSEN_LITE_DOCKER_SYSTEMS"); v {
	case "", "all":
		return true
	default:
		return slices.Contains(strings.Split(v, ","), system)
	}
}

// agreeable returns the scenarios of selected whose system both backends
// run and this run tests in containers, and the system whose first
// scenario make test compares today (the systems in turn by the day of the
// year).
func agreeable(selected []*scenarios.Scenario, backends []cluster.Backend) (runnable []*scenarios.Scenario, today string) {
	var systems []string
	for _, sc := range selected {
		both := !slices.ContainsFunc(backends, func(b cluster.Backend) bool {
			return b.Check(cluster.Spec{System: sc.System.Name, Topology: sc.System.Topology, Nodes: sc.System.Nodes}) != nil
		})
		if both && dockerTested(sc.System.Name) {
			runnable = append(runnable, sc)
			if !slices.Contains(systems, sc.System.Name) {
				systems = append(systems, sc.System.Name)
			}
		}
	}
	slices.Sort(systems)
	if len(systems) > 0 {
		today = systems[time.Now().YearDay()%len(systems)]
	}
	return runnable, today
}
