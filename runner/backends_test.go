package runner_test

import (
	"context"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
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
// test-docker and make test-ssh set it; the conformance suite tests every
// system on every backend in every run).
var agreeAll = flag.Bool("agree-all", false, "TestBackendsAgree: compare every selected scenario, not the first of each system")

// agreeBackends names the backends TestBackendsAgree compares, the first
// the reference: local and docker by default (make test, make
// test-docker); local and ssh in make test-ssh, whose build tag sshhosts
// gives the ssh backend hosts of its own (sshAgreeBackend).
var agreeBackends = flag.String("agree-backends", "local,docker", "TestBackendsAgree: the backends to compare (local, docker, ssh), comma-separated")

// TestBackendsAgree runs every scenario of the quick set (-agree-tags
// selects others; -agree-tags= the whole catalog; without -agree-all, the
// first of one system, in turn by the day) whose system every backend of
// -agree-backends runs (cluster.Backend.Check), on each, and requires the
// scenario's expectation from each, the same verdict from each, and
// nothing of the harness left behind by any. A scenario that a backend
// refuses when it starts (cluster.ErrUnavailable: the ssh backend's hosts
// are fewer than the nodes that dial one another) is named and not
// counted as compared. It is skipped, saying why, where a backend cannot
// run here (no Docker engine or node image: `make images`; no root, ip,
// nft or sshd for the ssh backend's namespace hosts), and in -short mode.
func TestBackendsAgree(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPED in -short mode: runs every quick scenario on each backend")
	}
	backends := agreeingBackends(t)
	cat, err := scenarios.Catalog(names())
	if err != nil {
		t.Fatal(err)
	}
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
		t.Run(sc.Name, func(t *testing.T) {
			if agreeOn(t, sc, backends) {
				compared++
			}
		})
	}
	if compared == 0 {
		t.Fatalf("no scenario tagged %q ran on every backend of %s", *agreeTags, *agreeBackends)
	}
}

// agreeingBackends returns the backends of -agree-backends, each ready to
// run here, and registers the check that nothing of the harness is left
// in the Docker engine when docker is among them. It skips the test,
// saying why, when one cannot run here.
func agreeingBackends(t *testing.T) []cluster.Backend {
	t.Helper()
	var backends []cluster.Backend
	for _, name := range strings.Split(*agreeBackends, ",") {
		switch name {
		case "local":
			backends = append(backends, local.Backend)
		case "docker":
			requireDocker(t)
			backends = append(backends, docker.Backend)
		case "ssh":
			backends = append(backends, sshAgreeBackend(t))
		default:
			t.Fatalf("-agree-backends: unknown backend %q (known: local, docker, ssh)", name)
		}
	}
	if len(backends) < 2 {
		t.Fatalf("-agree-backends %q: name at least two backends to compare", *agreeBackends)
	}
	return backends
}

// agreeOn runs the scenario on each backend with the same seed and
// requires its expectation from each and one verdict from all. It reports
// false, naming the backend, when one refused the scenario at its start
// (cluster.ErrUnavailable), so that the scenario is not counted as
// compared.
func agreeOn(t *testing.T, sc *scenarios.Scenario, backends []cluster.Backend) bool {
	t.Helper()
	verdicts := map[string]string{}
	for _, b := range backends {
		res, err := runner.Run(context.Background(), sc, runner.WithClusterBackend(b), runner.WithStore(t.TempDir()), runner.WithSeed(1))
		if errors.Is(err, cluster.ErrUnavailable) {
			t.Logf("NOT COMPARED: the %s backend refused %s at its start: %v", b.Name, sc.Name, err)
			return false
		}
		if err != nil {
			t.Fatalf("%s: %v", b.Name, err)
		}
		if !res.Results.ExpectationMet {
			t.Errorf("%s backend: verdict %s, expectation not met: %+v (%s)", b.Name, res.Results.Verdict, res.Results.Checkers, res.Dir)
			logRun(t, res.Dir)
		}
		verdicts[b.Name] = string(res.Results.Verdict)
	}
	for _, b := range backends[1:] {
		if verdicts[b.Name] != verdicts[backends[0].Name] {
			t.Errorf("backends disagree: %v", verdicts)
			return true
		}
	}
	t.Logf("agreed: %v", verdicts)
	return true
}

// requireDocker skips the test, saying why, without a working Docker
// engine or the node image, and otherwise registers the check that
// nothing of the harness remains in the engine at the test's end.
func requireDocker(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	cli, err := docker.Engine(ctx)
	if err != nil {
		t.Skipf("SKIPPED: no working Docker engine here (%v); the docker backend was not compared", err)
	}
	defer cli.Close()
	if err := docker.CheckImage(ctx, cli, docker.ImageName()); err != nil {
		t.Skipf("SKIPPED: the node image is missing (%v); run `make images` to compare the backends", err)
	}
	t.Cleanup(func() { dockerLeftNothing(t) })
}

// dockerLeftNothing requires no container or network of the harness in
// the Docker engine.
func dockerLeftNothing(t *testing.T) {
	t.Helper()
	for _, args := range [][]string{
		{"ps", "-a", "-q", "--filter", "label=" + docker.RunLabel},
		{"network", "ls", "-q", "--filter", "label=" + docker.RunLabel},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
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

// agreeable returns the scenarios of selected whose system every backend
// runs (and, with docker among them, this run tests in containers), and the system whose first
// scenario make test compares today (the systems in turn by the day of the
// year).
func agreeable(selected []*scenarios.Scenario, backends []cluster.Backend) (runnable []*scenarios.Scenario, today string) {
	var systems []string
	for _, sc := range selected {
		all := !slices.ContainsFunc(backends, func(b cluster.Backend) bool {
			return b.Check(cluster.Spec{System: sc.System.Name, Topology: sc.System.Topology, Nodes: sc.System.Nodes}) != nil
		})
		noDocker := !slices.ContainsFunc(backends, func(b cluster.Backend) bool { return b.Name == docker.Backend.Name })
		if all && (noDocker || dockerTested(sc.System.Name)) {
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

// logRun logs the run's run.log, which the test's temp dir takes away
// with the run.
func logRun(t *testing.T, dir string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "run.log"))
	if err != nil {
		t.Logf("run.log of %s: %v", dir, err)
		return
	}
	t.Logf("run.log of %s:\n%s", dir, b)
}
