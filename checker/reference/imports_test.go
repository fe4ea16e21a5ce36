package reference

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// serverSide are the import paths that start or reach servers: the cluster
// and its backends, the nemesis that injects faults into them, and the
// clients of the systems under test and of their proxies. A checker reads a
// stored history offline, years later, without any of them (docs/design.md
// §1), so the reference checker imports none.
var serverSide = []string{
	"github.com/jepsen-lite/jepsen-lite/cluster",
	"github.com/jepsen-lite/jepsen-lite/nemesis",
	"github.com/jepsen-lite/jepsen-lite/clients",
	"github.com/jepsen-lite/jepsen-lite/runner",
	"github.com/jackc/pgx",
	"github.com/Shopify/toxiproxy",
	"github.com/redis/go-redis",
	"github.com/go-zookeeper/zk",
	"go.etcd.io/etcd",
	"github.com/go-sql-driver/mysql",
}

// leaves are the packages under a server-side path that import none of it:
// the fault kinds' facts, which the generator reads.
var leaves = []string{"github.com/jepsen-lite/jepsen-lite/nemesis/faultkind"}

// TestImportsNothingServerSide fails when the package, or anything it
// imports, is a server-side package (serverSide), other than the leaves.
func TestImportsNothingServerSide(t *testing.T) {
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	out, err := exec.CommandContext(t.Context(), goBin, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 {
		t.Fatal("go list -deps listed nothing")
	}
	for _, d := range deps {
		if serverSidePath(d) {
			t.Errorf("imports %s, which reaches servers: a stored history must be re-checkable offline", d)
		}
	}
}

// serverSidePath reports whether the import path p is under a server-side
// path and is no leaf.
func serverSidePath(p string) bool {
	for _, l := range leaves {
		if p == l {
			return false
		}
	}
	for _, s := range serverSide {
		if p == s || strings.HasPrefix(p, s+"/") {
			return true
		}
	}
	return false
}

// TestServerSidePath checks which import paths count as server-side.
func TestServerSidePath(t *testing.T) {
	tests := []struct {
		name, path string
		want       bool
	}{
		{"the nemesis", "github.com/jepsen-lite/jepsen-lite/nemesis", true},
		{"the fault kinds' facts", "github.com/jepsen-lite/jepsen-lite/nemesis/faultkind", false},
		{"a backend", "github.com/jepsen-lite/jepsen-lite/cluster/local", true},
		{"a driver's subpackage", "github.com/jackc/pgx/v5/pgconn", true},
		{"the history", "github.com/jepsen-lite/jepsen-lite/history", false},
		{"a name that only starts alike", "github.com/jepsen-lite/jepsen-lite/clusterless", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := serverSidePath(tc.path); got != tc.want {
				t.Errorf("serverSidePath(%q) = %v, want %v", tc.path, got, tc.want)
			}
		})
	}
}
