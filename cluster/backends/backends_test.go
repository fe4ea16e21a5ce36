package backends

import (
	"testing"

	"github.com/jepsen-lite/jepsen-lite/cluster"
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
