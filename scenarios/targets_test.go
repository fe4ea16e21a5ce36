package scenarios_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// TestTargetsAndOptionsAgainstTheRun requires fault targets the cluster or
// the workers do not have, lock options the algorithm does not know or
// cannot take, and clusters that cannot be built to fail at parse time, with
// the file, the line and what there is; and the targets and options a run
// has to pass.
func TestTargetsAndOptionsAgainstTheRun(t *testing.T) {
	scenario := func(system, lock, steps string) string {
		return fmt.Sprintf("name: t\nsystem: %s\nlock: %s\nworkers: 2\nduration: 3s\nnemesis:\n  steps:\n%s", system, lock, steps)
	}
	const redis1 = "{name: redis, nodes: 1}"
	const single = "{algorithm: redis-single, ttl: 1s}"
	step := func(s string) string { return "    - " + s + "\n" }
	tests := []struct {
		name string
		yaml string
		want []string // nil: valid
	}{
		{"a node the cluster has", scenario(redis1, single, step("{at: 1s, fault: kill, targets: [n1]}")), nil},
		{"n7 on one node", scenario(redis1, single, step("{at: 1s, fault: kill, targets: [n7]}")),
			[]string{"t.yaml:8: nemesis.steps.0.targets:", `"n7" is neither a node (n1)`, "the cluster's nodes: n1 (primary); workers: w0..w1"}},
		{"n7 in a partition", scenario(redis1, single, step("{at: 1s, fault: partition, targets: [n7]}")),
			[]string{"t.yaml:8", `"n7"`}},
		{"w9 with two workers", scenario(redis1, single, step("{at: 1s, fault: client-pause, targets: [w9]}")),
			[]string{"t.yaml:8: nemesis.steps.0.targets:", `worker target "w9": want w0..w1`}},
		{"w9 in a partition", scenario(redis1, single, step("{at: 1s, fault: partition, targets: [w9]}")),
			[]string{"t.yaml:8", `"w9"`}},
		{"a worker partition losing a node there is not", scenario(redis1, single, step("{at: 1s, fault: partition, targets: [w1], options: {nodes: n3}}")),
			[]string{"t.yaml:8", `"n3"`}},
		{"workers and nodes mixed", scenario("{name: redis, nodes: 3}", "{algorithm: redlock, ttl: 1s}", step("{at: 1s, fault: partition, targets: [w0, n1]}")),
			[]string{"t.yaml:8", "mixes workers and nodes"}},
		{"replicas where no node is one", scenario("{name: redis, nodes: 3}", "{algorithm: redlock, ttl: 1s}", step("{at: 1s, fault: pause, targets: [replicas]}")),
			[]string{"t.yaml:8", "no node has the replica role", "n1 (primary), n2 (primary), n3 (primary)"}},
		{"replicas of a primary-replica cluster", scenario("{name: redis, topology: primary-replica, nodes: 2}", single, step("{at: 1s, fault: pause, targets: [replicas]}")), nil},
		{"a sentinel by name", scenario("{name: redis, topology: sentinel, nodes: 2}", single, step("{at: 1s, fault: kill, targets: [s2]}")), nil},
		{"halves on one node", scenario(redis1, single, step("{at: 1s, fault: partition, targets: [halves]}")),
			[]string{"t.yaml:8", "halves needs at least 2 server nodes"}},
		{"a random target the cluster does not have", "name: t\nsystem: {name: etcd, nodes: 3}\nlock: {algorithm: etcd-mutex, ttl: 2s}\nworkers: 2\nduration: 3s\nnemesis:\n  random: {faults: [kill], interval: 1s, targets: [n4]}\n",
			[]string{"t.yaml:7: nemesis.random:", `"n4"`}},
		{"a random worker the run does not have", "name: t\nsystem: {name: etcd, nodes: 3}\nlock: {algorithm: etcd-mutex, ttl: 2s}\nworkers: 2\nduration: 3s\nnemesis:\n  random: {faults: [client-pause], interval: 1s, workers: [w2]}\n",
			[]string{"t.yaml:7: nemesis.random:", `"w2"`}},
		{"a random partition of a worker the run does not have", "name: t\nsystem: {name: etcd, nodes: 3}\nlock: {algorithm: etcd-mutex, ttl: 2s}\nworkers: 2\nduration: 3s\nnemesis:\n  random: {faults: [partition], interval: 1s, targets: [one, w2]}\n",
			[]string{"t.yaml:7: nemesis.random:", `"w2"`}},
		{"a random partition of one worker's links", "name: t\nsystem: {name: etcd, nodes: 3}\nlock: {algorithm: etcd-mutex, ttl: 2s}\nworkers: 2\nduration: 3s\nnemesis:\n  random: {faults: [partition], interval: 1s, targets: [one, w1], choices: {partition: {direction: [both, outbound]}}}\n", nil},
		{"an unknown lock option", scenario(redis1, "{algorithm: redis-single, ttl: 1s, options: {colour: red}}", step("{at: 1s, fault: kill, targets: [n1]}")),
			[]string{"t.yaml:3: lock.options:", "redis-single", "unknown colour (known: timeout)"}},
		{"a lock option that does not parse", scenario(redis1, "{algorithm: redis-single, ttl: 1s, options: {timeout: soon}}", step("{at: 1s, fault: kill, targets: [n1]}")),
			[]string{"t.yaml:3: lock.options:", `timeout="soon"`}},
		{"a lock option of another algorithm", scenario("{name: etcd}", "{algorithm: etcd-mutex, ttl: 2s, options: {node-timeout: 5ms}}", step("{at: 1s, fault: kill, targets: [n1]}")),
			[]string{"t.yaml:3", "unknown node-timeout (known: release, timeout)"}},
		{"lock options the algorithm takes", scenario("{name: etcd}", "{algorithm: etcd-mutex, ttl: 2s, options: {release: txn, timeout: 1s}}", step("{at: 1s, fault: kill, targets: [n1]}")), nil},
		{"an unknown topology", scenario("{name: redis, topology: ring}", single, step("{at: 1s, fault: kill, targets: [n1]}")),
			[]string{"t.yaml:2: system.topology:", `unknown redis topology "ring"`}},
		{"three postgres nodes", scenario("{name: postgres, nodes: 3}", "{algorithm: pg-mutex, ttl: 1s}", step("{at: 1s, fault: kill, targets: [n1]}")),
			[]string{"t.yaml:2: system.nodes:", "postgres runs a single node"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := scenarios.Parse([]byte(tc.yaml), "t.yaml", realNames())
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Parse = %v, want a valid scenario\n%s", err, tc.yaml)
				}
				return
			}
			if !errors.Is(err, scenarios.ErrInvalid) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("Parse = %v, want a one-line ErrInvalid\n%s", err, tc.yaml)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestCheckRunAfterOverrides checks a scenario again with a run's own
// number of workers: w3 is a target of four workers, not of two.
func TestCheckRunAfterOverrides(t *testing.T) {
	yml := "name: t\nsystem: {name: redis}\nlock: {algorithm: redis-single, ttl: 1s}\nworkers: 4\nduration: 3s\nnemesis:\n  steps:\n    - {at: 1s, fault: client-pause, targets: [w3]}\n"
	s, err := scenarios.Parse([]byte(yml), "t.yaml", realNames())
	if err != nil {
		t.Fatal(err)
	}
	s.Workers = 2
	if err := s.CheckRun(realNames()); !errors.Is(err, scenarios.ErrInvalid) || !strings.Contains(err.Error(), "t.yaml:8: nemesis.steps.0.targets:") || !strings.Contains(err.Error(), `"w3"`) {
		t.Fatalf("CheckRun with 2 workers = %v, want w3 refused with its line", err)
	}
}
