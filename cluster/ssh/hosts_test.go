//go:build sshhosts

package ssh

// hosts_test.go makes the test hosts: network namespaces on a bridge the
// test creates, each with an address of a private range that exists only
// inside that bridge and an sshd of its own (Debian's openssh-server) with
// its own config, host key and authorized key in temp dirs; and the check
// that they, and everything the tests started on them, are gone after.
//
// The bridge lives in a namespace of its own, the switch, joined to the
// harness's namespace by one veth pair whose end there has the harness's
// address. Where br_netfilter is loaded, the kernel passes what a bridge
// forwards between its ports to the iptables of the bridge's namespace;
// the harness's may drop it (Docker's FORWARD policy is DROP), the
// switch's has no rule.

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// testHostCount is how many test hosts newTestHosts makes.
const testHostCount = 5

// privsepDir is the dir Debian's sshd chroots its unprivileged child
// into; it must exist.
const privsepDir = "/run/sshd"

// newTestHosts makes count hosts and returns their inventory. Everything
// it makes is removed at the test's cleanup, which then checks that the
// network namespaces, links, nftables tables and server processes are
// those that were there before.
func newTestHosts(t *testing.T, count int) Inventory {
	t.Helper()
	for _, bin := range []string{"ip", "nft", "/usr/sbin/sshd", "redis-server"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("SKIPPED: the test hosts need %s (scripts/deps.sh installs it): %v", bin, err)
		}
	}
	tag := fmt.Sprintf("%04x", mrand.IntN(0x10000))
	subnet := freeSubnet(t)
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
	sw := "jls" + tag + "-switch"
	must(t, "ip", "netns", "add", sw)
	t.Cleanup(func() { try(t, "ip", "netns", "del", sw) })
	*nets = append(*nets, netnsID(t, sw))
	must(t, "ip", "-n", sw, "link", "add", "br0", "type", "bridge")
	must(t, "ip", "-n", sw, "link", "set", "br0", "up")
	harness := "jls" + tag
	must(t, "ip", "link", "add", harness, "type", "veth", "peer", "name", "h0", "netns", sw)
	must(t, "ip", "-n", sw, "link", "set", "h0", "master", "br0", "up")
	must(t, "ip", "addr", "add", subnet+".1/24", "dev", harness)
	must(t, "ip", "link", "set", harness, "up")
	if _, err := os.Stat(privsepDir); os.IsNotExist(err) {
		if err := os.Mkdir(privsepDir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Remove(privsepDir) })
	}
	dir := t.TempDir()
	key, authorized := clientKey(t, dir)
	inv := Inventory{Harness: subnet + ".1"}
	known := filepath.Join(dir, "known_hosts")
	var knownLines []string
	for i := range count {
		h, line := testHost(t, tag, sw, fmt.Sprintf("h%d", i+1), fmt.Sprintf("%s.%d", subnet, 11+i), authorized)
		*nets = append(*nets, netnsID(t, "jls"+tag+"-"+h.Name))
		h.Key, h.KnownHosts = key, known
		inv.Hosts = append(inv.Hosts, h)
		knownLines = append(knownLines, line)
	}
	if err := os.WriteFile(known, []byte(strings.Join(knownLines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, h := range inv.Hosts {
		waitListening(t, h.sshAddr())
	}
	return inv
}

// testHost makes one host: its namespace, joined to the bridge in the
// switch namespace sw, its address, and its sshd in a temp dir of its own.
// It returns the host (without key and known hosts) and its known_hosts
// line.
func testHost(t *testing.T, tag, sw, name, addr, authorized string) (Host, string) {
	t.Helper()
	ns := "jls" + tag + "-" + name
	must(t, "ip", "netns", "add", ns)
	t.Cleanup(func() { try(t, "ip", "netns", "del", ns) })
	must(t, "ip", "-n", sw, "link", "add", name, "type", "veth", "peer", "name", "eth0", "netns", ns)
	must(t, "ip", "-n", sw, "link", "set", name, "master", "br0", "up")
	must(t, "ip", "-n", ns, "addr", "add", addr+"/24", "dev", "eth0")
	must(t, "ip", "-n", ns, "link", "set", "eth0", "up")
	must(t, "ip", "-n", ns, "link", "set", "lo", "up")
	dir := t.TempDir()
	hostKey, pub := newKey(t, filepath.Join(dir, "ssh_host_ed25519_key"))
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), []byte(authorized), 0o600); err != nil {
		t.Fatal(err)
	}
	config := strings.Join([]string{
		"ListenAddress " + addr + ":22",
		"HostKey " + hostKey,
		"AuthorizedKeysFile " + filepath.Join(dir, "authorized_keys"),
		"PidFile " + filepath.Join(dir, "sshd.pid"),
		"PermitRootLogin prohibit-password",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"UsePAM no",
		"StrictModes no",
		"PrintMotd no",
	}, "\n") + "\n"
	cfg := filepath.Join(dir, "sshd_config")
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ip", "netns", "exec", ns, "/usr/sbin/sshd", "-D", "-e", "-f", cfg)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("sshd of %s: %s", name, log.String())
		}
	})
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	// Servers that run unprivileged (PostgreSQL as nobody) reach their
	// dirs through the test's temp dirs, which are the owner's alone.
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return Host{Name: name, Address: addr, User: "root", Dir: data}, knownhosts.Line([]string{addr}, pub)
}

// clientKey writes the harness's private key into dir and returns its
// path and the authorized_keys line of its public key.
func clientKey(t *testing.T, dir string) (string, string) {
	t.Helper()
	path, pub := newKey(t, filepath.Join(dir, "id_ed25519"))
	return path, string(gossh.MarshalAuthorizedKey(pub))
}

// newKey writes a new ed25519 private key in OpenSSH's format to path and
// returns the path and its public key.
func newKey(t *testing.T, path string) (string, gossh.PublicKey) {
	t.Helper()
	pubRaw, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := gossh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	pub, err := gossh.NewPublicKey(pubRaw)
	if err != nil {
		t.Fatal(err)
	}
	return path, pub
}

// freeSubnet returns the first three octets of a /24 of 10.231.0.0/16
// that no address or route of the machine is in.
func freeSubnet(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("ip", "-4", "-o", "addr").Output()
	if err != nil {
		t.Fatal(err)
	}
	routes, err := exec.Command("ip", "-4", "route", "show", "table", "all").Output()
	if err != nil {
		t.Fatal(err)
	}
	for range 50 {
		s := fmt.Sprintf("10.231.%d", 1+mrand.IntN(254))
		if !strings.Contains(string(out)+string(routes), s+".") {
			return s
		}
	}
	t.Fatal("no free /24 in 10.231.0.0/16")
	return ""
}

// waitListening waits, within a bound, until something accepts
// connections on addr.
func waitListening(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens on %s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
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
