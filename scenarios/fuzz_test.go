package scenarios

import (
	"errors"
	"io/fs"
	"slices"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/nemesis"
)

// catalogFiles returns the text of every catalog scenario.
func catalogFiles(tb testing.TB) [][]byte {
	files, err := fs.Glob(catalogFS, "catalog/*.yaml")
	if err != nil || len(files) == 0 {
		tb.Fatalf("no catalog scenarios (%v)", err)
	}
	var out [][]byte
	for _, file := range files {
		data, err := catalogFS.ReadFile(file)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, data)
	}
	return out
}

// fuzzNames are the names FuzzScenario validates against: the real faults,
// systems and cluster layouts, and, for algorithms, those the catalog's
// scenarios name (the clients package that declares every algorithm, with
// every client library, would make the fuzzing build many times slower).
func fuzzNames(tb testing.TB, catalog [][]byte) Names {
	names := Names{
		Systems: cluster.SystemNames(),
		Faults:  nemesis.Names(),
		Nodes: func(system, topology string, nodes int) ([]cluster.Node, error) {
			return cluster.Layout(cluster.Spec{System: system, Topology: topology, Nodes: nodes})
		},
	}
	for _, data := range catalog {
		var s struct {
			Workload string
			Lock     struct{ Algorithm string }
		}
		if err := yaml.Unmarshal(data, &s); err != nil {
			tb.Fatal(err)
		}
		list := &names.Algorithms
		if s.Workload == WorkloadQueue {
			list = &names.QueueAlgorithms
		}
		if !slices.Contains(*list, s.Lock.Algorithm) {
			*list = append(*list, s.Lock.Algorithm)
		}
	}
	return names
}

// FuzzScenario feeds scenario files to parsing, validation and schedule
// generation: every input is either refused with an error wrapping
// ErrInvalid, or parses into a scenario within its bounds whose resolved
// schedule (nemesis.Resolve, as a run resolves it) has at most
// nemesis.MaxSteps steps. The corpus starts from every catalog scenario
// and the inputs that once hung or grew without end.
func FuzzScenario(f *testing.F) {
	catalog := catalogFiles(f)
	for _, data := range catalog {
		f.Add(data)
	}
	f.Add([]byte("name: x\nsystem: {name: redis}\nlock: {algorithm: redis-single, ttl: 1s}\nworkers: 2\nduration: 10s\nnemesis:\n  random: {faults: [client-pause], interval: 1ns, min-duration: 1ns, max-duration: 1ns}\n"))
	f.Add([]byte("name: x\nsystem: {name: redis}\nlock: {algorithm: redis-single, ttl: 1s}\nworkers: 2\nduration: 24h\nnemesis:\n  random: {faults: [kill], interval: 2ms, min-duration: 1ms, max-duration: 1ms}\n"))
	names := fuzzNames(f, catalog)
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := Parse(data, "fuzz.yaml", names)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse = %v, which is not ErrInvalid", err)
			}
			return
		}
		if err := sc.CheckBounds(); err != nil {
			t.Fatalf("Parse accepted a scenario that CheckBounds refuses: %v", err)
		}
		if steps := nemesis.Resolve(sc.Nemesis.Steps, sc.Nemesis.Random, sc.Seed, sc.Duration); len(steps) > nemesis.MaxSteps {
			t.Fatalf("a valid scenario resolved to %d steps, above %d", len(steps), nemesis.MaxSteps)
		}
	})
}

// TestFuzzNamesParseTheCatalog requires the names FuzzScenario validates
// against to accept every catalog scenario, so that its corpus starts from
// scenarios that parse.
func TestFuzzNamesParseTheCatalog(t *testing.T) {
	catalog := catalogFiles(t)
	names := fuzzNames(t, catalog)
	for i, data := range catalog {
		if _, err := Parse(data, "catalog", names); err != nil {
			t.Errorf("catalog scenario %d: %v", i, err)
		}
	}
}
