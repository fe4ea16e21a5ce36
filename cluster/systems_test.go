package cluster

import (
	"errors"
	"strings"
	"testing"
)

// TestSystemsDeclared requires every system constant to be declared once,
// with Layout and Ready knowing it.
func TestSystemsDeclared(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range Systems {
		if seen[s.Name] {
			t.Errorf("system %q declared twice", s.Name)
		}
		seen[s.Name] = true
		if _, err := Layout(Spec{System: s.Name, Nodes: 1}); err != nil {
			t.Errorf("Layout of %s: %v", s.Name, err)
		}
		if Ready(s.Name) == nil {
			t.Errorf("no readiness probe for %s", s.Name)
		}
	}
	for _, name := range []string{Redis, Postgres, ZooKeeper, Etcd} {
		if !seen[name] {
			t.Errorf("system %q is not in Systems", name)
		}
	}
}

func TestClockSkewError(t *testing.T) {
	tests := []struct {
		name        string
		system      string
		unavailable bool
	}{
		{"redis can be skewed", Redis, false},
		{"postgres can be skewed", Postgres, false},
		{"zookeeper can be skewed", ZooKeeper, false},
		{"etcd cannot", Etcd, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ClockSkewError(tt.system, "n1")
			if got := errors.Is(err, ErrUnavailable); got != tt.unavailable {
				t.Fatalf("ClockSkewError(%s) = %v, want unavailable %v", tt.system, err, tt.unavailable)
			}
			if err != nil && !strings.Contains(err.Error(), "n1") {
				t.Errorf("error %q does not name the node", err)
			}
		})
	}
}

func TestBackendCheck(t *testing.T) {
	redisOnly := Backend{Name: "small", Systems: []string{Redis}}
	tests := []struct {
		name        string
		spec        Spec
		ok          bool
		unavailable bool
	}{
		{"declared system", Spec{System: Redis, Nodes: 3}, true, false},
		{"undeclared system", Spec{System: Etcd, Nodes: 3}, false, true},
		{"unknown system", Spec{System: "mysql", Nodes: 1}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := redisOnly.Check(tt.spec)
			if (err == nil) != tt.ok {
				t.Fatalf("Check(%+v) = %v, want ok %v", tt.spec, err, tt.ok)
			}
			if err == nil {
				return
			}
			if got := errors.Is(err, ErrUnavailable); got != tt.unavailable {
				t.Errorf("Check(%+v) = %v, want unavailable %v", tt.spec, err, tt.unavailable)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q is not one line", err)
			}
		})
	}
}
