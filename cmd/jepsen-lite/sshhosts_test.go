//go:build sshhosts

package main

// sshhosts_test.go holds the command line's tests on hosts made of network
// namespaces (hosts up, --backend ssh): they need root, ip, nft, Debian's
// sshd and the servers, and run with the build tag sshhosts (make
// test-ssh).

import (
	"bufio"
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
	if left := hostsLeft(cmd.Process.Pid, inv.Harness); len(left) == 0 {
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
	for _, l := range hostsLeft(cmd.Process.Pid, inv.Harness) {
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

// hostsLeft lists what the namespace hosts made by process pid have on
// the machine: namespaces and links named for it, addresses of the
// harness's subnet (harness's first three octets), processes whose command
// line names its dir, and its dirs.
func hostsLeft(pid int, harness string) []string {
	mark := "jlh" + strconv.Itoa(pid) + "-"
	subnet := harness[:strings.LastIndex(harness, ".")+1]
	var left []string
	for _, c := range [][]string{{"ip", "netns", "list"}, {"ip", "-o", "link", "show"}, {"ip", "-4", "-o", "addr"}} {
		b, _ := exec.Command(c[0], c[1:]...).Output()
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, mark) || strings.Contains(line, " "+subnet) {
				left = append(left, strings.Join(c, " ")+": "+line)
			}
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "jepsen-lite-nshosts-"+strconv.Itoa(pid)+"-*"))
	left = append(left, dirs...)
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	dirMark := regexp.MustCompile(`jepsen-lite-nshosts-` + strconv.Itoa(pid) + `-`)
	for _, p := range procs {
		b, _ := os.ReadFile(p)
		if cmd := strings.ReplaceAll(string(b), "\x00", " "); dirMark.MatchString(cmd) {
			left = append(left, "process "+filepath.Base(filepath.Dir(p))+": "+cmd)
		}
	}
	return left
}
