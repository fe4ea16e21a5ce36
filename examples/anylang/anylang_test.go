package anylang

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/clients"
	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// debianPython is the interpreter the Python examples run under in these
// tests: Debian's, which sees Debian's python3-redis, python3-kazoo,
// python3-etcd3 and python3-pymysql (make deps) and starts fast enough for
// the clock mapping of docs/lock-protocol.md §3 to stay well inside a ttl.
const debianPython = "/usr/bin/python3"

// TestPythonClients runs the Python examples as exec clients under catalog
// scenarios of their systems, against real servers, and requires each run to
// end as its scenario expects: the baselines valid and live, the GC pauses
// before an unfenced write caught as stale-write and lost-update, and
// MariaDB's GET_LOCK through PyMySQL granted again after a server kill.
func TestPythonClients(t *testing.T) {
	for _, pkg := range []string{"redis", "kazoo", "etcd3", "pymysql"} {
		if _, err := os.Stat(filepath.Join("/usr/lib/python3/dist-packages", pkg)); err != nil {
			t.Fatalf("Debian's python3-%s is not installed (make deps): %v", pkg, err)
		}
	}
	tests := []struct {
		name     string
		script   string
		library  string // what the client's init_ok names
		scenario string
	}{
		{"redis-py baseline", "redis_py_lock.py", "redis-py 4.3.4", "redis-single-baseline"},
		{"redis-py gc pause", "redis_py_lock.py", "redis-py 4.3.4", "redis-single-gc-pause"},
		{"kazoo wait", "kazoo_lock.py", "kazoo 2.8.0", "zk-recipe-wait"},
		{"kazoo gc pause", "kazoo_lock.py", "kazoo 2.8.0", "zk-gc-pause"},
		{"python-etcd3 renew", "etcd3_lock.py", "python-etcd3 0.12.0", "etcd-mutex-renew"},
		{"python-etcd3 gc pause", "etcd3_lock.py", "python-etcd3 0.12.0", "etcd-mutex-gc-pause"},
		{"PyMySQL kill", "pymysql_lock.py", "PyMySQL 1.0.2", "mysql-get-lock-kill"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			script, err := filepath.Abs(tc.script)
			if err != nil {
				t.Fatal(err)
			}
			sc, err := scenarios.Load(tc.scenario, runner.Names())
			if err != nil {
				t.Fatal(err)
			}
			sc.Lock.Algorithm = clients.ExecAlgorithm
			opts := map[string]string{}
			for k, v := range sc.Lock.Options {
				opts[k] = v
			}
			opts[clients.ExecCommandOption] = debianPython + " " + script
			sc.Lock.Options = opts
			res, err := runner.Run(context.Background(), sc, runner.WithStore(t.TempDir()), runner.WithSeed(1))
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			r := res.Results
			if r.LockClient == nil || !strings.Contains(r.LockClient.Name, tc.library) {
				t.Fatalf("lock client %+v, want the exec client of %s", r.LockClient, tc.library)
			}
			if !r.ExpectationMet {
				var found []string
				for _, c := range r.Checkers {
					for _, a := range c.Anomalies {
						found = append(found, a.Kind+": "+a.Message)
					}
				}
				t.Fatalf("%s with %s: verdict %s, expected %+v, liveness %+v; anomalies %q; store %s",
					tc.scenario, r.LockClient.Name, r.Verdict, r.Expected, r.Liveness, found, res.Dir)
			}
			t.Logf("%s: %s as expected (%d ops)", tc.scenario, r.Verdict, r.Stats.Ops)
		})
	}
}
