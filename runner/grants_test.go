package runner

import (
	"context"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/clients"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// TestGrantsTokens checks which locks a hunt may draw a fenced register
// for: the built-in algorithms that declare a fencing token, and an
// external client or a Locker of the caller's own only when declared
// (WithLockTokens).
func TestGrantsTokens(t *testing.T) {
	tests := []struct {
		name      string
		algorithm string
		own       bool
		declared  bool
		want      bool
	}{
		{"zookeeper recipe: czxid", "zk-recipe", false, false, true},
		{"etcd mutex: create revision", "etcd-mutex", false, false, true},
		{"redis-fenced: INCR", "redis-fenced", false, false, true},
		{"redis-single: none", "redis-single", false, false, false},
		{"redis-single: none, whatever is declared", "redis-single", false, true, false},
		{"redlock: none", "redlock", false, false, false},
		{"an external client", clients.ExecAlgorithm, false, false, false},
		{"an external client that declares tokens", clients.ExecAlgorithm, false, true, true},
		{"a Locker of the caller's own", "mine", true, false, false},
		{"a Locker of the caller's own that declares tokens", "mine", true, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &config{tokens: tt.declared}
			if tt.own {
				cfg.factory = func(context.Context, clients.Target) (clients.Locker, error) { return nil, nil }
			}
			sc := &scenarios.Scenario{Lock: scenarios.Lock{Algorithm: tt.algorithm}}
			if got := grantsTokens(sc, cfg); got != tt.want {
				t.Errorf("grantsTokens = %v, want %v", got, tt.want)
			}
		})
	}
}
