//go:build sshhosts

package runner_test

// backends_ssh_test.go gives TestBackendsAgree the ssh backend, on hosts
// made of network namespaces (build tag sshhosts: make test-ssh).

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/clients"
	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/backends"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
	"github.com/jepsen-lite/jepsen-lite/cluster/ssh"
	"github.com/jepsen-lite/jepsen-lite/cluster/ssh/nshosts"
	"github.com/jepsen-lite/jepsen-lite/cluster/ssh/nshosts/nshoststest"
)

// agreeHosts is how many namespace hosts the ssh backend gets: the
// largest topology of the quick set (a Redis Cluster of three masters and
// three replicas) needs a host per node.
const agreeHosts = 6

// sshAgreeBackend returns the ssh backend as --backend ssh --inventory
// builds it (backends.For), on agreeHosts namespace hosts that the test
// removes at its end (nshoststest.Create, which requires that nothing of
// them is left), requiring then too that no nftables table of this
// process's runs is left. It skips the test, saying why, where the hosts
// cannot be made here.
func sshAgreeBackend(t *testing.T) cluster.Backend {
	t.Helper()
	clients.SilenceRedisLogs()
	t.Cleanup(func() { noRunTables(t) })
	hosts := nshoststest.Create(t, nshosts.Options{Count: agreeHosts})
	file := filepath.Join(t.TempDir(), "hosts.yaml")
	if err := ssh.NamespaceInventory(hosts).Write(file, ""); err != nil {
		t.Fatal(err)
	}
	b, err := backends.For("ssh", backends.Options{Inventory: file})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// noRunTables requires that the harness's nftables ruleset holds no
// table of this process's runs (the workers' links'
// "jepsen_lite_<pid>_<n>").
func noRunTables(t *testing.T) {
	t.Helper()
	out, err := exec.Command("nft", "list", "tables").Output()
	if err != nil {
		t.Fatalf("nft list tables: %v", err)
	}
	if strings.Contains(string(out), linknet.TablePrefix+strconv.Itoa(os.Getpid())+"_") {
		t.Errorf("a run's nftables table left behind:\n%s", out)
	}
}
