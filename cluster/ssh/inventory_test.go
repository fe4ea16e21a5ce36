package ssh

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/cluster"
)

func TestLoadInventory(t *testing.T) {
	good := `harness: 10.0.0.1
hosts:
  - name: h1
    address: 10.0.0.11
    user: root
    key: /keys/id
    known-hosts: /keys/known_hosts
    dir: /var/tmp
    paths: {redis-server: /opt/redis/bin/redis-server}
  - name: h2
    address: 10.0.0.12
    port: 2222
    user: ops
    known-hosts: /keys/known_hosts
`
	tests := []struct {
		name, text string
		want       string // a part of the error; "" for none
	}{
		{"good", good, ""},
		{"unknown field", good + "extra: 1\n", "field extra not found"},
		{"no hosts", "harness: 10.0.0.1\nhosts: []\n", "0 hosts"},
		{"bad harness", strings.Replace(good, "harness: 10.0.0.1", "harness: here", 1), "harness"},
		{"same name", strings.Replace(good, "name: h2", "name: h1", 1), "hosts[1].name"},
		{"bad address", strings.Replace(good, "address: 10.0.0.12", "address: ::1", 1), "hosts[1].address"},
		{"no user", strings.Replace(good, "user: ops", "user: ''", 1), "hosts[1].user"},
		{"no known hosts", strings.Replace(good, "    known-hosts: /keys/known_hosts\n", "", 1), "hosts[0].known-hosts"},
		{"relative dir", strings.Replace(good, "dir: /var/tmp", "dir: tmp", 1), "hosts[0].dir"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "inventory.yaml")
			if err := os.WriteFile(file, []byte(tt.text), 0o600); err != nil {
				t.Fatal(err)
			}
			inv, err := LoadInventory(file)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("LoadInventory: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("LoadInventory: %v, want an error saying %q", err, tt.want)
			case tt.want == "":
				h1, h2 := inv.Hosts[0], inv.Hosts[1]
				if h1.sshAddr() != "10.0.0.11:22" || h2.sshAddr() != "10.0.0.12:2222" {
					t.Errorf("SSH addresses %s, %s", h1.sshAddr(), h2.sshAddr())
				}
				if h1.binary("redis-server") != "/opt/redis/bin/redis-server" || h2.binary("redis-server") != "redis-server" {
					t.Errorf("redis-server paths %s, %s", h1.binary("redis-server"), h2.binary("redis-server"))
				}
				if h1.dir() != "/var/tmp" || h2.dir() != "/tmp" {
					t.Errorf("dirs %s, %s", h1.dir(), h2.dir())
				}
			}
		})
	}
}

// TestDeclaredRefuses holds the backend's declaration to what it runs:
// every Redis topology is declared, and a spec it cannot run (clock skew
// without the library; nodes that dial one another, more than the hosts)
// is refused with cluster.ErrUnavailable before any host is reached.
func TestDeclaredRefuses(t *testing.T) {
	for _, top := range []string{"", cluster.TopologyMasters, cluster.TopologyPrimaryReplica, cluster.TopologySentinel, cluster.TopologyCluster} {
		spec := cluster.Spec{System: cluster.Redis, Topology: top, Nodes: 3}
		if err := Declared.Check(spec); err != nil {
			t.Errorf("Check(%+v) = %v, want nil", spec, err)
		}
	}
	// Nodes that dial one another are told apart by their hosts: one host
	// cannot take three etcd members (refused before it is reached).
	oneHost := Inventory{Harness: "10.0.0.1", Hosts: []Host{{Name: "h1", Address: "10.0.0.11", User: "root", KnownHosts: "/nonexistent"}}}
	tests := []struct {
		name string
		inv  Inventory
		spec cluster.Spec
	}{
		{"clock skew without the library", Inventory{}, cluster.Spec{System: cluster.Redis, ClockSkew: true}},
		{"etcd members on one host", oneHost, cluster.Spec{System: cluster.Etcd, Nodes: 3}},
		{"primary and replica on one host", oneHost, cluster.Spec{System: cluster.Redis, Topology: cluster.TopologyPrimaryReplica, Nodes: 2}},
		{"sentinels on one host", oneHost, cluster.Spec{System: cluster.Redis, Topology: cluster.TopologySentinel, Nodes: 2}},
		{"Redis Cluster on one host", oneHost, cluster.Spec{System: cluster.Redis, Topology: cluster.TopologyCluster}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Start(t.Context(), tt.inv, tt.spec, nil); !errors.Is(err, cluster.ErrUnavailable) {
				t.Errorf("Start(%+v) = %v, want cluster.ErrUnavailable", tt.spec, err)
			}
		})
	}
}

func TestRunDirPid(t *testing.T) {
	tests := []struct {
		name    string
		pid     int
		matches bool
	}{
		{runDirName("vm", 123, 4), 123, true},
		{runDirName("vm-2", 123, 4), 0, false},
		{runDirName("vm", 0, 4), 0, false},
		{"jepsen-lite-ssh-vm-12", 0, false},
		{"jepsen-lite-123-redis-x", 0, false},
	}
	for _, tt := range tests {
		pid, ok := runDirPid(tt.name, "vm")
		if pid != tt.pid || ok != tt.matches {
			t.Errorf("runDirPid(%q) = %d, %v, want %d, %v", tt.name, pid, ok, tt.pid, tt.matches)
		}
	}
}

func TestTablePid(t *testing.T) {
	tests := []struct {
		name    string
		pid     int
		matches bool
	}{
		{tableName(runDirName("vm", 123, 4)), 123, true},
		{tableName(runDirName("vm.lan", 123, 4)), 0, false},
		{tableName(runDirName("vm_2", 123, 4)), 0, false},
		{"jepsen_lite_123_4", 0, false},
	}
	for _, tt := range tests {
		pid, ok := tablePid(tt.name, "vm")
		if pid != tt.pid || ok != tt.matches {
			t.Errorf("tablePid(%q) = %d, %v, want %d, %v", tt.name, pid, ok, tt.pid, tt.matches)
		}
	}
}

// TestDepsInstallsPackages requires scripts/deps.sh to install what the
// backend's test hosts need (Packages).
func TestDepsInstallsPackages(t *testing.T) {
	b, err := os.ReadFile("../../scripts/deps.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range Packages {
		if !strings.Contains(string(b), "need+=("+p+")") {
			t.Errorf("scripts/deps.sh does not install %s", p)
		}
	}
}
