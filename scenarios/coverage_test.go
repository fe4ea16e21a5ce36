package scenarios_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/clients"
	"github.com/jepsen-lite/jepsen-lite/nemesis"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// outsideCatalog are the algorithms no catalog scenario can run, with why,
// and the scenarios of docs/matrix run them instead.
var outsideCatalog = map[string]string{
	clients.ExecAlgorithm: "runs a lock client program that the scenario names (lock.options.command), which the embedded catalog cannot ship",
}

// TestCatalogCoversEveryFaultAndAlgorithm requires every fault of
// nemesis.Faults() and every algorithm of clients.Algorithms() and
// clients.QueueAlgorithms() to appear in at least one catalog scenario
// other than the hour-long soaks, which no gate runs: a fault in a scripted
// step or a random schedule's mix, an algorithm as the scenario's lock. An algorithm of outsideCatalog must instead be the lock
// of a scenario of docs/matrix, and of no catalog scenario.
func TestCatalogCoversEveryFaultAndAlgorithm(t *testing.T) {
	cat, err := scenarios.Catalog(realNames())
	if err != nil {
		t.Fatal(err)
	}
	faults, algorithms := map[string][]string{}, map[string][]string{}
	for _, s := range cat {
		if s.HasTag(scenarios.SoakLongTag) {
			continue
		}
		for _, f := range scenarioFaults(s) {
			faults[f] = append(faults[f], s.Name)
		}
		algorithms[s.Lock.Algorithm] = append(algorithms[s.Lock.Algorithm], s.Name)
	}
	for _, f := range nemesis.Faults() {
		if name := f.Facts().Name; len(faults[name]) == 0 {
			t.Errorf("fault %s appears in no catalog scenario but the hour-long soaks", name)
		}
	}
	var names []string
	for _, a := range clients.Algorithms() {
		names = append(names, a.Name)
	}
	for _, a := range clients.QueueAlgorithms() {
		names = append(names, a.Name)
	}
	for _, name := range names {
		_, outside := outsideCatalog[name]
		switch {
		case outside && len(algorithms[name]) > 0:
			t.Errorf("algorithm %s, which outsideCatalog leaves out, is the lock of catalog scenarios %v: take it out of outsideCatalog", name, algorithms[name])
		case outside && !inMatrix(t, name):
			t.Errorf("algorithm %s is left out of the catalog (%s), and no scenario of docs/matrix runs it either", name, outsideCatalog[name])
		case !outside && len(algorithms[name]) == 0:
			t.Errorf("algorithm %s is the lock of no catalog scenario but the hour-long soaks", name)
		}
	}
	for name := range outsideCatalog {
		if !slices.Contains(names, name) {
			t.Errorf("outsideCatalog names %s, which is no algorithm", name)
		}
	}
}

// inMatrix reports whether a scenario of docs/matrix has algorithm as its
// lock.
func inMatrix(t *testing.T, algorithm string) bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "docs", "matrix", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios in ../docs/matrix (%v): the test runs in the package's directory", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s, err := scenarios.Parse(b, f, realNames())
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if s.Lock.Algorithm == algorithm {
			return true
		}
	}
	return false
}

// scenarioFaults returns the faults of s's scripted steps and of its
// random schedule's mix.
func scenarioFaults(s *scenarios.Scenario) []string {
	var out []string
	for _, st := range s.Nemesis.Steps {
		out = append(out, st.Fault)
	}
	if s.Nemesis.Random != nil {
		out = append(out, s.Nemesis.Random.Faults...)
	}
	return out
}
