package scenarios

import (
	"errors"
	"strings"
	"testing"
)

// algSystemNames declare the systems of the algorithms, as the runner's
// Names do from clients.Algorithms.
var algSystemNames = Names{
	Algorithms:      []string{"redis-single", "pg-advisory", "exec"},
	QueueAlgorithms: []string{"pg-queue"},
	Systems:         []string{"redis", "postgres", "etcd"},
	AlgorithmSystems: map[string]string{
		"redis-single": "redis", "pg-advisory": "postgres", "exec": AnySystem, "pg-queue": "postgres",
	},
}

// algSystemScenario is a scenario of system running algorithm.
func algSystemScenario(system, algorithm, workload string) string {
	return "name: t\nsystem:\n  name: " + system + "\n  nodes: 1\nworkload: " + workload +
		"\nlock:\n  algorithm: " + algorithm + "\n  ttl: 1s\nworkers: 2\nduration: 3s\n"
}

// TestAlgorithmSystem checks that a scenario whose lock runs on another
// system than the scenario's is refused, naming the file, the line and the
// field, and that an algorithm of its system or of any system is not.
func TestAlgorithmSystem(t *testing.T) {
	tests := []struct {
		name, system, algorithm, workload string
		wantErr                           string // empty for none
	}{
		{"an algorithm of the system", "redis", "redis-single", "lock", ""},
		{"another of the system", "postgres", "pg-advisory", "lock", ""},
		{"an algorithm of another system", "postgres", "redis-single", "lock",
			`t.yaml:7: lock.algorithm: "redis-single" runs on redis, not on the scenario's system postgres`},
		{"an algorithm of any system", "etcd", "exec", "lock", ""},
		{"a queue of the system", "postgres", "pg-queue", "queue", ""},
		{"a queue of another system", "redis", "pg-queue", "queue",
			`t.yaml:7: lock.algorithm: "pg-queue" runs on postgres, not on the scenario's system redis`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(algSystemScenario(tc.system, tc.algorithm, tc.workload)), "t.yaml", algSystemNames)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantErr == "":
			case !errors.Is(err, ErrInvalid):
				t.Fatalf("error %v, want one wrapping ErrInvalid", err)
			case strings.Contains(err.Error(), "\n") || !strings.HasSuffix(err.Error(), tc.wantErr):
				t.Errorf("error %q, want one line ending %q", err, tc.wantErr)
			}
		})
	}
}
