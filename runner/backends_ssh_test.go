//go:build sshhosts

package runner_test

// backends_ssh_test.go gives TestBackendsAgree the ssh backend, on hosts
// made of network namespaces (build tag sshhosts: make test-ssh).

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/clients"
	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/backends"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
	"github.com/jepsen-lite/jepsen-lite/cluster/ssh"
	"github.com/jepsen-lite/jepsen-lite/cluster/ssh/nshosts"
)

// agreeHosts is how many namespace hosts the ssh backend gets: the
// largest topology of the quick set (a Redis Cluster of three masters and
// three replicas) needs a host per node.
const agreeHosts = 6

// sshAgreeBackend returns the ssh backend as --backend ssh --inventory
// builds it (backends.For), on agreeHosts namespace hosts that the test
// removes at its end, requiring then that none of their namespaces and no
// nftables table of the harness's runs is left. It skips the test, saying
// why, where the hosts cannot be made (nshosts.Check).
func sshAgreeBackend(t *testing.T) cluster.Backend {
	t.Helper()
	if err := nshosts.Check(); err != nil {
		t.Skipf("SKIPPED: namespace hosts cannot be made here (%v); the ssh backend was not compared", err)
	}
	clients.SilenceRedisLogs()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hosts, err := nshosts.Create(ctx, nshosts.Options{Count: agreeHosts})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(hosts.Logs())
		}
		if err := hosts.Close(); err != nil {
			t.Error(err)
		}
		sshLeftNothing(t, hosts.Namespaces())
	})
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

// sshLeftNothing requires that none of the hosts' namespaces remains and
// that the harness's nftables ruleset holds no table of this process's
// runs (the workers' links' "jepsen_lite_<pid>_<n>").
func sshLeftNothing(t *testing.T, namespaces []string) {
	t.Helper()
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatalf("ip netns list: %v", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 && slices.Contains(namespaces, f[0]) {
			t.Errorf("namespace %s of the hosts left behind", f[0])
		}
	}
	out, err = exec.Command("nft", "list", "tables").Output()
	if err != nil {
		t.Fatalf("nft list tables: %v", err)
	}
	if strings.Contains(string(out), linknet.TablePrefix+strconv.Itoa(os.Getpid())+"_") {
		t.Errorf("a run's nftables table left behind:\n%s", out)
	}
}
