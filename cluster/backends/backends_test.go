package backends

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/local"
)

// TestAll requires every backend to have a unique name, a start and only
// declared systems, and local to come first (the default of --backend).
func TestAll(t *testing.T) {
	all := All()
	if len(all) == 0 || all[0].Name != "local" {
		t.Fatalf("All()[0] is not the local backend: %v", all)
	}
	seen := map[string]bool{}
	for _, b := range all {
		if b.Name == "" || seen[b.Name] {
			t.Errorf("backend name %q empty or twice", b.Name)
		}
		seen[b.Name] = true
		if b.Start == nil {
			t.Errorf("backend %s has no Start", b.Name)
		}
		if len(b.Systems) == 0 {
			t.Errorf("backend %s runs no system", b.Name)
		}
		for _, s := range b.Systems {
			if _, err := cluster.LookupSystem(s); err != nil {
				t.Errorf("backend %s: %v", b.Name, err)
			}
		}
	}
}

// TestFor builds each backend by name, and refuses, in one line naming the
// name or the file, an unknown name, the ssh backend without an inventory
// or with a missing or invalid one, and an inventory given to another
// backend.
func TestFor(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.yaml", "harness: 10.231.9.1\nhosts:\n  - {name: h1, address: 10.231.9.11, user: root, known-hosts: /dev/null}\n")
	bad := write("bad.yaml", "harness: nowhere\nhosts:\n  - {name: h1, address: 10.231.9.11}\n")
	for _, tc := range []struct {
		name, backend, inventory string
		want                     error  // nil: built
		mention                  string // what the error names
	}{
		{name: "local", backend: "local"},
		{name: "docker", backend: "docker"},
		{name: "ssh", backend: "ssh", inventory: good},
		{name: "unknown name", backend: "vm", want: ErrUnknown, mention: `"vm"`},
		{name: "ssh without inventory", backend: "ssh", want: ErrNoInventory, mention: "--inventory"},
		{name: "inventory for local", backend: "local", inventory: good, want: ErrInventoryNotUsed, mention: good},
		{name: "missing inventory", backend: "ssh", inventory: filepath.Join(dir, "none.yaml"), mention: "none.yaml"},
		{name: "invalid inventory", backend: "ssh", inventory: bad, mention: bad},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := For(tc.backend, Options{Inventory: tc.inventory})
			if tc.mention == "" {
				if err != nil || b.Name != tc.backend || b.Start == nil {
					t.Fatalf("For(%s) = %v, %v; want the backend", tc.backend, b.Name, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("For(%s, %q) built %s, want an error", tc.backend, tc.inventory, b.Name)
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("error %v, want %v", err, tc.want)
			}
			if msg := err.Error(); !strings.Contains(msg, tc.mention) || strings.Contains(msg, "\n") {
				t.Errorf("error %q: want one line naming %s", msg, tc.mention)
			}
		})
	}
}

// TestSSHLinkAddress requires the ssh backend bound to an inventory to
// have its workers' links on the inventory's harness address, and its
// entry in All to start nothing.
func TestSSHLinkAddress(t *testing.T) {
	p := filepath.Join(t.TempDir(), "hosts.yaml")
	inv := "harness: 10.231.9.1\nhosts:\n  - {name: h1, address: 10.231.9.11, user: root, known-hosts: /dev/null}\n"
	if err := os.WriteFile(p, []byte(inv), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := For("ssh", Options{Inventory: p})
	if err != nil {
		t.Fatal(err)
	}
	if b.LinkAddress != "10.231.9.1" {
		t.Errorf("LinkAddress %q, want the inventory's harness 10.231.9.1", b.LinkAddress)
	}
	for _, b := range All() {
		if b.Name != "ssh" {
			continue
		}
		if _, err := b.Start(context.Background(), cluster.Spec{System: cluster.Redis, Nodes: 1}, nil); !errors.Is(err, ErrNoInventory) {
			t.Errorf("All's ssh backend started: %v, want ErrNoInventory", err)
		}
	}
}

// TestSSHWithoutClockSkewLibrary requires the ssh backend built without
// the clock-skew library to refuse a spec that skews clocks, before any
// host is reached, saying why the library is missing.
func TestSSHWithoutClockSkewLibrary(t *testing.T) {
	t.Setenv(local.ClockSkewLibraryEnv, "/nonexistent/libclockskew.so")
	p := filepath.Join(t.TempDir(), "hosts.yaml")
	inv := "harness: 10.231.9.1\nhosts:\n  - {name: h1, address: 10.231.9.11, user: root, known-hosts: /dev/null}\n"
	if err := os.WriteFile(p, []byte(inv), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := For("ssh", Options{Inventory: p})
	if err != nil {
		t.Fatal(err)
	}
	spec := cluster.Spec{System: cluster.Redis, Topology: cluster.TopologyMasters, Nodes: 1, ClockSkew: true}
	_, err = b.Start(context.Background(), spec, nil)
	if !errors.Is(err, cluster.ErrUnavailable) || !strings.Contains(fmt.Sprint(err), "/nonexistent/libclockskew.so") {
		t.Errorf("start of a clock-skewing spec: %v, want ErrUnavailable naming the missing library", err)
	}
}
