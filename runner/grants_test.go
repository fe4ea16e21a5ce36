package runner

import (
	"context"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/clients"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// TestGrantsTokens checks which locks a hunt may draw a fenced register
// for: the built-in algorithms that declare a fencing token, and no
// external client or Locker of the caller's own.
func TestGrantsTokens(t *testing.T) {
	tests := []struct {
		name      string
		algorithm string
		own       bool
		want      bool
	}{
		{"zookeeper recipe: czxid", "zk-recipe", false, true},
		{"etcd mutex: create revision", "etcd-mutex", false, true},
		{"redis-fenced: INCR", "redis-fenced", false, true},
		{"redis-single: none", "redis-single", false, false},
		{"redlock: none", "redlock", false, false},
		{"an external client", clients.ExecAlgorithm, false, false},
		{"a Locker of the caller's own", "mine", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &config{}
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
