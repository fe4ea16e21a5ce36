//go:build sshhosts

package nshosts

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCreateAndClose makes two hosts, reaches each sshd on its address
// only, and requires Close to remove every namespace, the harness's veth
// and address and the dir, and a second Close to do nothing.
func TestCreateAndClose(t *testing.T) {
	requireTools(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, err := Create(ctx, Options{Count: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	if got := len(h.List()); got != 2 {
		t.Fatalf("%d hosts, want 2", got)
	}
	for _, x := range h.List() {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(x.Address, "22"), 2*time.Second)
		if err != nil {
			t.Errorf("sshd of %s: %v", x.Name, err)
			continue
		}
		c.Close()
	}
	if left := remains(t, h); len(left) != 5 {
		t.Errorf("while up: %v, want 3 namespaces, the harness's veth and the dir", left)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
	for _, l := range remains(t, h) {
		t.Errorf("left behind: %s", l)
	}
}

// TestDeleteLeftovers leaves what a creation of a dead process leaves (a
// namespace and a dir named with its pid) and one of a live process
// (pid 1), and requires DeleteLeftovers to remove the first only.
func TestDeleteLeftovers(t *testing.T) {
	requireTools(t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		pid  int
		gone bool
	}{
		{name: "dead", pid: dead.Process.Pid, gone: true},
		{name: "live", pid: 1, gone: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := fmt.Sprintf("%s%d-1-h1", prefix, tc.pid)
			if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
			dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-1-", dirPrefix, tc.pid))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			if err := DeleteLeftovers(); err != nil {
				t.Fatal(err)
			}
			_, err = os.Stat(filepath.Join("/run/netns", ns))
			if nsGone := os.IsNotExist(err); nsGone != tc.gone {
				t.Errorf("namespace %s gone: %v, want %v", ns, nsGone, tc.gone)
			}
			_, err = os.Stat(dir)
			if dirGone := os.IsNotExist(err); dirGone != tc.gone {
				t.Errorf("dir %s gone: %v, want %v", dir, dirGone, tc.gone)
			}
		})
	}
}

// requireTools skips the test when the machine cannot make hosts.
func requireTools(t *testing.T) {
	t.Helper()
	if err := Check(); err != nil {
		t.Skipf("SKIPPED: %v", err)
	}
}

// remains lists the namespaces, links and addresses of h on the machine,
// and its dir.
func remains(t *testing.T, h *Hosts) []string {
	t.Helper()
	var left []string
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, h.name+"-") {
			left = append(left, "namespace "+line)
		}
	}
	if exec.Command("ip", "link", "show", "dev", h.name).Run() == nil {
		left = append(left, "link "+h.name)
	}
	if _, err := os.Stat(h.dir); err == nil {
		left = append(left, "dir "+h.dir)
	}
	return left
}
