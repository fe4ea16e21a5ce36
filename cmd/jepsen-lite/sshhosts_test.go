//go:build sshhosts

package main

// sshhosts_test.go holds the command line's tests on hosts made of network
// namespaces (hosts up, --backend ssh): they need root, ip, nft, Debian's
// sshd and the servers, and run with the build tag sshhosts (make
// test-ssh).

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster/ssh"
	"github.com/jepsen-lite/jepsen-lite/cluster/ssh/nshosts"
	"github.com/jepsen-lite/jepsen-lite/cluster/ssh/nshosts/nshoststest"
)

// TestHostsUp starts "hosts up", waits for its inventory, reaches every
// host's sshd, stops it with SIGINT and requires it to exit 0 within two
// seconds, its inventory gone and nothing of its hosts left: namespaces,
// links, addresses, processes, dirs.
func TestHostsUp(t *testing.T) {
	requireHostTools(t)
	file := filepath.Join(t.TempDir(), "hosts.yaml")
	cmd := exec.Command(binary, "hosts", "up", "--count", "3", "--inventory", file)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	lines := bufio.NewScanner(out)
	for range 3 {
		if !lines.Scan() {
			t.Fatalf("hosts up printed fewer than 3 lines: %v", lines.Err())
		}
		t.Log(lines.Text())
	}
	inv, err := ssh.LoadInventory(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(inv.Hosts) != 3 {
		t.Fatalf("inventory of %d hosts, want 3", len(inv.Hosts))
	}
	for _, h := range inv.Hosts {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(h.Address, "22"), 2*time.Second)
		if err != nil {
			t.Fatalf("sshd of %s: %v", h.Name, err)
		}
		c.Close()
	}
	if left := nshosts.Remains(cmd.Process.Pid, inv.Harness); len(left) == 0 {
		t.Fatal("no trace of the hosts was seen while they were up")
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("hosts up after SIGINT: %v, want exit 0", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("hosts up did not end within 10 s of SIGINT")
	}
	if d := time.Since(began); d > 2*time.Second {
		t.Errorf("hosts up took %v to remove its hosts, want at most 2 s", d)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("the inventory is still there: %v", err)
	}
	for _, l := range nshosts.Remains(cmd.Process.Pid, inv.Harness) {
		t.Errorf("left behind: %s", l)
	}
}

// requireHostTools skips the test when the machine cannot make namespace
// hosts or run Redis on them.
func requireHostTools(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: namespace hosts need root")
	}
	for _, bin := range []string{"ip", "nft", "/usr/sbin/sshd", "redis-server"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("SKIPPED: the namespace hosts need %s (scripts/deps.sh installs it): %v", bin, err)
		}
	}
}

// TestSSHRunLeavesNothing runs the binary on the ssh backend and requires
// the machine and the hosts to be as they were before: after a run
// interrupted with SIGINT while its partitions and resets are on, and
// after a run whose servers cannot start (the inventory names a
// redis-server that does not exist). It compares the harness's nftables
// ruleset, network namespaces and links, each host's nftables ruleset,
// processes and dir, and the harness's temp dirs and the processes
// started from them.
func TestSSHRunLeavesNothing(t *testing.T) {
	requireHostTools(t)
	file := namespaceInventory(t, 3)
	inv, err := ssh.LoadInventory(file)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	scenario := filepath.Join(dir, "leftovers.yaml")
	if err := os.WriteFile(scenario, []byte(partitionScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	broken := inv
	broken.Hosts = nil
	for _, h := range inv.Hosts {
		h.Paths = map[string]string{"redis-server": "/nonexistent/redis-server"}
		broken.Hosts = append(broken.Hosts, h)
	}
	brokenFile := filepath.Join(dir, "broken.yaml")
	if err := broken.Write(brokenFile, ""); err != nil {
		t.Fatal(err)
	}
	t.Run("interrupted", func(t *testing.T) {
		before := sshState(t, inv, 0)
		cmd := exec.Command(binary, "run", scenario, "--backend", "ssh", "--inventory", file, "--store", t.TempDir(), "-v")
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		waitFaultsOn(t, cmd.Process.Pid)
		if sshState(t, inv, cmd.Process.Pid) == before {
			t.Error("no state of the run was seen while its faults were on")
		}
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		var ee *exec.ExitError
		if err := cmd.Wait(); !errors.As(err, &ee) || ee.ExitCode() != exitUnknown {
			t.Errorf("the interrupted run: %v, want exit %d", err, exitUnknown)
		}
		checkSameState(t, inv, before, cmd.Process.Pid)
	})
	t.Run("failed", func(t *testing.T) {
		before := sshState(t, inv, 0)
		cmd := exec.Command(binary, "run", scenario, "--backend", "ssh", "--inventory", brokenFile, "--store", t.TempDir())
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitUsage {
			t.Errorf("a run whose servers cannot start: %v, want exit %d\n%s", err, exitUsage, out)
		}
		checkSameState(t, inv, before, cmd.Process.Pid)
	})
}

// namespaceInventory makes count namespace hosts, removed at the test's
// end with a check that nothing of them is left, and returns the file of
// their inventory.
func namespaceInventory(t *testing.T, count int) string {
	t.Helper()
	hosts := nshoststest.Create(t, nshosts.Options{Count: count})
	file := filepath.Join(t.TempDir(), "hosts.yaml")
	if err := ssh.NamespaceInventory(hosts).Write(file, ""); err != nil {
		t.Fatal(err)
	}
	return file
}

// waitFaultsOn waits until the run of process pid has its resets in its
// nftables table: in reset_away_forward, the set of the resets of links
// whose target is on another host (docs/network.md, "On other hosts").
func waitFaultsOn(t *testing.T, pid int) {
	t.Helper()
	table := regexp.MustCompile(`table ip (jepsen_lite_` + strconv.Itoa(pid) + `_\d+)`)
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		out, _ := exec.Command("nft", "list", "tables", "ip").Output()
		if m := table.FindSubmatch(out); m != nil {
			set, _ := exec.Command("nft", "list", "set", "ip", string(m[1]), "reset_away_forward").Output()
			if strings.Contains(string(set), "elements") {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the run's resets were not in the kernel (reset_away_forward) within 90 s")
		}
	}
}

// checkSameState waits, within a bound, until the state is before again
// (the kernel frees what a run closed in the background), and fails the
// test with the difference when it is not.
func checkSameState(t *testing.T, inv ssh.Inventory, before string, pid int) {
	t.Helper()
	var after string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if after = sshState(t, inv, pid); after == before || time.Now().After(deadline) {
			break
		}
	}
	if after != before {
		t.Errorf("the machine or its hosts changed:\n%s", lineDiff(before, after))
	}
	for _, l := range harnessLeftovers(t, pid, false) {
		t.Errorf("left behind: %s", l)
	}
}

// otherHosts matches the names of other namespace hosts and of containers'
// veths, which tests and campaigns running beside this one make and remove.
var otherHosts = regexp.MustCompile(`jl[sh][0-9a-f]+|veth[0-9a-f]+|docker|br-[0-9a-f]+`)

// sshState is what a run on the inventory's namespace hosts may change:
// the harness's nftables ruleset (kernelState's, with the tables of the
// harness pid counted) and its network namespaces and links (without
// those of others), and on each host its nftables ruleset, the command
// lines of its processes but the sshd that listens, and its dir.
func sshState(t *testing.T, inv ssh.Inventory, pid int) string {
	t.Helper()
	ours := "jlh" + strconv.Itoa(os.Getpid()) + "-"
	var b strings.Builder
	nft, _, _ := strings.Cut(kernelState(t, pid), "# ip netns list")
	b.WriteString(nft)
	for _, c := range [][]string{{"ip", "netns", "list"}, {"ip", "-o", "link", "show"}} {
		out, err := exec.Command(c[0], c[1:]...).Output()
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if line = firstFieldsOf(line, 2); strings.Contains(line, ours) || !otherHosts.MatchString(line) {
				b.WriteString(strings.Join(c, " ") + ": " + line + "\n")
			}
		}
	}
	for _, h := range inv.Hosts {
		b.WriteString(hostState(t, h))
	}
	return b.String()
}

// hostState is one namespace host's nftables ruleset, the processes in its
// namespace but its listening sshd, and what its dir holds.
func hostState(t *testing.T, h ssh.Host) string {
	t.Helper()
	ns := nsOf(t, h)
	var b strings.Builder
	out, err := exec.Command("ip", "netns", "exec", ns, "nft", "list", "ruleset").CombinedOutput()
	if err != nil {
		t.Fatalf("nft in %s: %v: %s", ns, err, out)
	}
	fmt.Fprintf(&b, "# %s nft\n%s", h.Name, out)
	pids, _ := exec.Command("ip", "netns", "pids", ns).Output()
	for _, p := range strings.Fields(string(pids)) {
		cmd, _ := os.ReadFile("/proc/" + p + "/cmdline")
		line := strings.ReplaceAll(string(cmd), "\x00", " ")
		if !strings.Contains(line, "sshd -D") {
			fmt.Fprintf(&b, "# %s process: %s\n", h.Name, line)
		}
	}
	entries, _ := os.ReadDir(h.Dir)
	for _, e := range entries {
		fmt.Fprintf(&b, "# %s dir: %s\n", h.Name, e.Name())
	}
	return b.String()
}

// nsOf returns the name of the namespace, of this process's namespace
// hosts, that has the host's address.
func nsOf(t *testing.T, h ssh.Host) string {
	t.Helper()
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatal(err)
	}
	ours := "jlh" + strconv.Itoa(os.Getpid()) + "-"
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], ours) {
			continue
		}
		addrs, _ := exec.Command("ip", "-n", f[0], "-4", "-o", "addr").Output()
		if strings.Contains(string(addrs), " "+h.Address+"/") {
			return f[0]
		}
	}
	t.Fatalf("no namespace has the address %s of %s", h.Address, h.Name)
	return ""
}

// firstFieldsOf returns the first n fields of line.
func firstFieldsOf(line string, n int) string {
	f := strings.Fields(line)
	return strings.Join(f[:min(n, len(f))], " ")
}
