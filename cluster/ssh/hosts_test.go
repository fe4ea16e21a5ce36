//go:build sshhosts

package ssh

// hosts_test.go makes the test hosts, network namespaces with an sshd each
// on a bridge of their own (package nshosts), and checks that they, and
// everything the tests started on them, are gone after.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster/ssh/nshosts"
	"github.com/jepsen-lite/jepsen-lite/cluster/ssh/nshosts/nshoststest"
)

// testHostCount is how many test hosts newTestHosts makes.
const testHostCount = 5

// newTestHosts makes count hosts and returns their inventory. Everything
// it makes is removed at the test's cleanup, which then checks that the
// network namespaces, links, nftables tables and server processes are
// those that were there before.
func newTestHosts(t *testing.T, count int) Inventory {
	t.Helper()
	inv, _ := newTestHostsIn(t, count)
	return inv
}

// newTestHostsIn is newTestHosts that also returns each host's network
// namespace, by the inventory's order.
func newTestHostsIn(t *testing.T, count int) (Inventory, []string) {
	t.Helper()
	for _, bin := range []string{"ip", "nft", "/usr/sbin/sshd", "redis-server"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("SKIPPED: the test hosts need %s (scripts/deps.sh installs it): %v", bin, err)
		}
	}
	subnet, err := nshosts.FreeSubnet()
	if err != nil {
		t.Fatal(err)
	}
	nets := &[]string{} // the namespaces' net:[inode] names
	before := systemState(t, subnet+".", nets)
	t.Cleanup(func() {
		// The kernel frees a deleted namespace, and the links in it, in
		// the background: what is left is looked at until it is gone or
		// a bound passes.
		var left []string
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			left = left[:0]
			for _, l := range systemState(t, subnet+".", nets) {
				if !slices.Contains(before, l) {
					left = append(left, l)
				}
			}
			if len(left) == 0 || time.Now().After(deadline) {
				break
			}
		}
		for _, l := range left {
			t.Errorf("left behind: %s", l)
		}
	})
	hosts := nshoststest.Create(t, nshosts.Options{Count: count, Subnet: subnet})
	for _, ns := range hosts.Namespaces() {
		*nets = append(*nets, netnsID(t, ns))
	}
	// The switch's namespace comes first.
	return NamespaceInventory(hosts), hosts.Namespaces()[1:]
}

// netnsID returns the named network namespace's identity as
// /proc/<pid>/ns/net reads it ("net:[inode]").
func netnsID(t *testing.T, ns string) string {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat("/run/netns/"+ns, &st); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("net:[%d]", st.Ino)
}

// systemState lists what a test of the hosts could leave behind: network
// namespaces, links, nftables tables, and the processes in the test's
// namespaces (nets) or whose command line names an address of the test's
// subnet (mark), one line each.
func systemState(t *testing.T, mark string, nets *[]string) []string {
	t.Helper()
	var out []string
	for _, c := range [][]string{{"ip", "netns", "list"}, {"ip", "-o", "link", "show"}, {"nft", "list", "tables"}} {
		b, err := exec.Command(c[0], c[1:]...).Output()
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if line != "" {
				out = append(out, strings.Join(c, " ")+": "+firstFields(line, 2))
			}
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		b, err := os.ReadFile(p + "/cmdline")
		cmd := strings.ReplaceAll(string(b), "\x00", " ")
		ns, _ := os.Readlink(p + "/ns/net")
		if err == nil && (strings.Contains(cmd, mark) || slices.Contains(*nets, ns)) {
			out = append(out, "process "+filepath.Base(p)+": "+cmd)
		}
	}
	return out
}

// firstFields returns the first n fields of line.
func firstFields(line string, n int) string {
	f := strings.Fields(line)
	return strings.Join(f[:min(n, len(f))], " ")
}

// must runs a command and fails the test when it fails.
func must(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
}

// try runs a cleanup command and reports it when it fails.
func try(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
}
