package cluster

import (
	"errors"
	"strings"
	"testing"
)

// TestSystemsDeclared requires every system constant to be declared once,
// and every declaration to state every fact its readers need.
func TestSystemsDeclared(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range Systems {
		if seen[s.Name] {
			t.Errorf("system %q declared twice", s.Name)
		}
		seen[s.Name] = true
		t.Run(s.Name, func(t *testing.T) { checkFacts(t, s) })
	}
	for _, name := range []string{Redis, Postgres, ZooKeeper, Etcd, MariaDB} {
		if !seen[name] {
			t.Errorf("system %q is not in Systems", name)
		}
	}
}

// checkFacts fails for each fact the declaration s lacks.
func checkFacts(t *testing.T, s SystemInfo) {
	if s.Name == "" {
		t.Error("no name")
	}
	if s.Ready == nil {
		t.Error("no readiness probe (Ready)")
	}
	if s.Port <= 0 || s.Port > 65535 {
		t.Errorf("client port %d", s.Port)
	}
	if s.Settings == nil || len(s.Settings(Spec{System: s.Name, Nodes: 1})) == 0 {
		t.Error("no server settings (Settings)")
	}
	if len(s.Packages) == 0 {
		t.Error("no packages (Packages)")
	}
	if len(s.Topologies) == 0 {
		t.Fatal("no topologies")
	}
	cold := 0
	for i, top := range s.Topologies {
		if top.Name == "" && len(s.Topologies) > 1 {
			t.Errorf("topology %d has no name, and the system has %d", i, len(s.Topologies))
		}
		if top.Nodes == nil {
			t.Errorf("topology %q: no Nodes", top.Name)
			continue
		}
		if top.OneAdvertisedAddress && !top.PeerLinks {
			t.Errorf("topology %q: one advertised address (OneAdvertisedAddress) without peer links (PeerLinks)", top.Name)
		}
		if nodes, err := Layout(Spec{System: s.Name, Topology: top.Name, Nodes: 1}); err != nil || len(nodes) == 0 {
			t.Errorf("topology %q: Layout of one node: %v, %v", top.Name, nodes, err)
		}
		cold += len(top.ColdStarts)
	}
	if cold == 0 {
		t.Error("no cold start for the benchmarks (ColdStarts)")
	}
}

// TestUndeclaredSystem requires every reader of the declarations to refuse
// a system that is not declared, naming it, rather than use another's
// facts.
func TestUndeclaredSystem(t *testing.T) {
	spec := Spec{System: "mysql", Nodes: 1}
	if _, err := Layout(spec); err == nil || !strings.Contains(err.Error(), `"mysql"`) {
		t.Errorf("Layout of an undeclared system: %v, want an error naming it", err)
	}
	if _, err := TopologyOf(spec); err == nil || !strings.Contains(err.Error(), `"mysql"`) {
		t.Errorf("TopologyOf an undeclared system: %v, want an error naming it", err)
	}
	if err := ClockSkewError("mysql", "n1"); err == nil || !strings.Contains(err.Error(), `"mysql"`) {
		t.Errorf("ClockSkewError of an undeclared system: %v, want an error naming it", err)
	}
}

// TestLayout checks the nodes and roles of each declared topology.
func TestLayout(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		want string // name:role, ...
		ok   bool
	}{
		{"redis default is masters", Spec{System: Redis, Nodes: 3}, "n1:primary n2:primary n3:primary", true},
		{"redis masters", Spec{System: Redis, Topology: TopologyMasters}, "n1:primary", true},
		{"redis primary-replica has two nodes at least", Spec{System: Redis, Topology: TopologyPrimaryReplica, Nodes: 1}, "n1:primary n2:replica", true},
		{"redis sentinel", Spec{System: Redis, Topology: TopologySentinel, Nodes: 2}, "n1:primary n2:replica s1:sentinel s2:sentinel s3:sentinel", true},
		{"redis unknown topology", Spec{System: Redis, Topology: "ring", Nodes: 3}, "", false},
		{"postgres", Spec{System: Postgres}, "n1:primary", true},
		{"postgres refuses two nodes", Spec{System: Postgres, Nodes: 2}, "", false},
		{"zookeeper takes any topology name", Spec{System: ZooKeeper, Topology: "masters", Nodes: 3}, "n1: n2: n3:", true},
		{"etcd", Spec{System: Etcd, Nodes: 1}, "n1:", true},
		{"mariadb", Spec{System: MariaDB}, "n1:primary", true},
		{"mariadb refuses two nodes", Spec{System: MariaDB, Nodes: 2}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodes, err := Layout(tt.spec)
			if (err == nil) != tt.ok {
				t.Fatalf("Layout(%+v) = %v, %v; want ok %v", tt.spec, nodes, err, tt.ok)
			}
			var got []string
			for _, n := range nodes {
				got = append(got, n.Name+":"+n.Role)
			}
			if strings.Join(got, " ") != tt.want {
				t.Errorf("Layout(%+v) = %s, want %s", tt.spec, strings.Join(got, " "), tt.want)
			}
		})
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
		{"mariadb can be skewed", MariaDB, false},
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
	redisOnly := Backend{Name: "small", Systems: []string{Redis}, Topologies: map[string][]string{Redis: {TopologyMasters, TopologySentinel}}}
	tests := []struct {
		name        string
		spec        Spec
		ok          bool
		unavailable bool
	}{
		{"declared system", Spec{System: Redis, Nodes: 3}, true, false},
		{"undeclared system", Spec{System: Etcd, Nodes: 3}, false, true},
		{"unknown system", Spec{System: "mysql", Nodes: 1}, false, false},
		{"declared topology", Spec{System: Redis, Topology: TopologySentinel, Nodes: 2}, true, false},
		{"default topology, declared", Spec{System: Redis}, true, false},
		{"undeclared topology", Spec{System: Redis, Topology: TopologyCluster}, false, true},
		{"unknown topology", Spec{System: Redis, Topology: "ring"}, false, false},
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
	if !redisOnly.Runs(Redis, TopologyMasters) || redisOnly.Runs(Redis, TopologyCluster) || redisOnly.Runs(Etcd, "") {
		t.Error("Runs disagrees with the declaration")
	}
}
