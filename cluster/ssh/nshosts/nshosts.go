// Package nshosts owns hosts made of network namespaces on this machine,
// for the ssh backend to run on without real hosts: it creates N network
// namespaces on a private bridge, each with an address of a /24 of
// 10.231.0.0/16 that no address or route of the machine is in and an sshd
// of its own (Debian's openssh-server) with its own config, host key and
// authorized key in a dir of its own; it gives what the inventory of those
// hosts holds (the harness's address, each host's name, address, user,
// key, known_hosts and dir) and removes all of it: the namespaces, the
// bridge, the veth pairs, the sshd processes and the dirs.
//
// The bridge lives in a namespace of its own, the switch, joined to the
// harness's namespace by one veth pair whose end there has the harness's
// address (the subnet's .1), the only address it adds outside its
// namespaces; each sshd listens only on its namespace's address. Where
// br_netfilter is loaded, the kernel passes what a bridge forwards between
// its ports to the iptables of the bridge's namespace; the harness's may
// drop it (Docker's FORWARD policy is DROP), the switch's has no rule.
//
// Every name it gives (namespaces, the harness's veth, its dir) begins
// with "jlh", the creating process's pid and a sequence number: Create
// first removes what creations of processes that are gone left behind
// (DeleteLeftovers), as when one was killed with SIGKILL. Its sshd
// processes die with the process that created them (package spawn).
package nshosts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// MaxCount bounds the hosts of one Create.
const MaxCount = 32

// prefix begins every name of the hosts: "jlh<pid>-<seq>".
const prefix = "jlh"

// dirPrefix begins the name of the dir of a creation's keys, configs and
// data dirs.
const dirPrefix = "jepsen-lite-nshosts-"

// sshdPath is Debian's sshd.
const sshdPath = "/usr/sbin/sshd"

// privsepDir is the dir Debian's sshd chroots its unprivileged child
// into; it must exist.
const privsepDir = "/run/sshd"

// readyTimeout bounds the wait for every sshd to accept connections.
const readyTimeout = 20 * time.Second

// goneTimeout bounds the wait, in Close, until the kernel has freed the
// harness's veth after its namespaces were deleted.
const goneTimeout = 5 * time.Second

// ErrCount reports a count of hosts out of range.
var ErrCount = fmt.Errorf("nshosts: the count of hosts must be from 1 to %d", MaxCount)

// Options are what Create makes.
type Options struct {
	// Count is how many hosts, 1 to MaxCount.
	Count int
	// Dir is where the dir of the hosts' keys, configs and data dirs is
	// made; os.TempDir() when empty. Close removes the dir it made there.
	// Servers that run unprivileged (PostgreSQL as nobody) must be able to
	// reach it.
	Dir string
	// Subnet is the first three octets of the hosts' /24 ("10.231.7");
	// when empty, a free one of 10.231.0.0/16 (FreeSubnet).
	Subnet string
}

// Host is one host as an inventory names it.
type Host struct {
	Name       string // h1, h2, ...
	Address    string // its IPv4 address, on which its sshd listens (port 22)
	User       string // root
	Key        string // the harness's private key file
	KnownHosts string // the known_hosts file holding its host key
	Dir        string // its data dir, under which runs make theirs
}

// Hosts are the hosts of one Create. Close removes them.
type Hosts struct {
	name    string // "jlh<pid>-<seq>": the harness's veth, and the namespaces' prefix
	subnet  string
	dir     string
	netns   []string // the namespaces made, the switch first
	sshd    []*sshd
	hosts   []Host
	privsep bool // it holds a reference to privsepDir

	once     sync.Once
	closeErr error
}

// sshd is one host's running sshd.
type sshd struct {
	host string
	cmd  *exec.Cmd
	log  *syncBuffer
}

var seq atomic.Int64

// Check returns an error naming what this machine lacks to create hosts:
// root, ip, or Debian's sshd.
func Check() error {
	var errs []error
	if os.Geteuid() != 0 {
		errs = append(errs, errors.New("nshosts: creating network namespaces needs root"))
	}
	if _, err := exec.LookPath("ip"); err != nil {
		errs = append(errs, fmt.Errorf("nshosts: ip (iproute2): %w", err))
	}
	if _, err := os.Stat(sshdPath); err != nil {
		errs = append(errs, fmt.Errorf("nshosts: %s (openssh-server; scripts/deps.sh installs it): %w", sshdPath, err))
	}
	return errors.Join(errs...)
}

// Create removes what earlier creations of processes that are gone left
// (DeleteLeftovers), then creates the hosts of o and waits, within a
// bound and ctx, until every sshd accepts connections. On error, or when
// ctx ends first, it removes everything it made.
func Create(ctx context.Context, o Options) (*Hosts, error) {
	if o.Count < 1 || o.Count > MaxCount {
		return nil, fmt.Errorf("%w: %d", ErrCount, o.Count)
	}
	if err := Check(); err != nil {
		return nil, err
	}
	if err := DeleteLeftovers(); err != nil {
		return nil, err
	}
	h := &Hosts{name: fmt.Sprintf("%s%d-%d", prefix, os.Getpid(), seq.Add(1)), subnet: o.Subnet}
	if err := h.create(ctx, o); err != nil {
		return nil, errors.Join(err, h.Close())
	}
	return h, nil
}

// create makes the dir, the switch, the harness's veth and each host, in
// that order, recording each as it is made for Close.
func (h *Hosts) create(ctx context.Context, o Options) error {
	if h.subnet == "" {
		var err error
		if h.subnet, err = FreeSubnet(); err != nil {
			return err
		}
	}
	dir := o.Dir
	if dir == "" {
		dir = os.TempDir()
	}
	var err error
	if h.dir, err = os.MkdirTemp(dir, dirPrefix+strings.TrimPrefix(h.name, prefix)+"-"); err != nil {
		return fmt.Errorf("nshosts: %w", err)
	}
	// Servers that run unprivileged (PostgreSQL as nobody) reach their
	// dirs through this one.
	if err := os.Chmod(h.dir, 0o755); err != nil {
		return fmt.Errorf("nshosts: %w", err)
	}
	if err := h.makeSwitch(); err != nil {
		return err
	}
	if err := acquirePrivsep(); err != nil {
		return err
	}
	h.privsep = true
	key, authorized, err := clientKey(h.dir)
	if err != nil {
		return err
	}
	known := filepath.Join(h.dir, "known_hosts")
	var lines []string
	for i := range o.Count {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("nshosts: %w", err)
		}
		host, line, err := h.makeHost(fmt.Sprintf("h%d", i+1), fmt.Sprintf("%s.%d", h.subnet, 11+i), authorized)
		if err != nil {
			return err
		}
		host.Key, host.KnownHosts = key, known
		h.hosts = append(h.hosts, host)
		lines = append(lines, line)
	}
	if err := os.WriteFile(known, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		return fmt.Errorf("nshosts: %w", err)
	}
	return h.waitReady(ctx)
}

// makeSwitch makes the switch namespace with its bridge, and the veth
// pair that joins it to the harness's namespace, with the harness's
// address on the harness's end.
func (h *Hosts) makeSwitch() error {
	sw := h.name + "-switch"
	if err := ip("netns", "add", sw); err != nil {
		return err
	}
	h.netns = append(h.netns, sw)
	steps := [][]string{
		{"-n", sw, "link", "add", "br0", "type", "bridge"},
		{"-n", sw, "link", "set", "br0", "up"},
		{"link", "add", h.name, "type", "veth", "peer", "name", "h0", "netns", sw},
		{"-n", sw, "link", "set", "h0", "master", "br0", "up"},
		{"addr", "add", h.Harness() + "/24", "dev", h.name},
		{"link", "set", h.name, "up"},
	}
	for _, s := range steps {
		if err := ip(s...); err != nil {
			return err
		}
	}
	return nil
}

// makeHost makes one host: its namespace, joined to the bridge, its
// address, and its sshd in a dir of its own. It returns the host (without
// key and known hosts) and its known_hosts line.
func (h *Hosts) makeHost(name, addr, authorized string) (Host, string, error) {
	ns, sw := h.name+"-"+name, h.netns[0]
	if err := ip("netns", "add", ns); err != nil {
		return Host{}, "", err
	}
	h.netns = append(h.netns, ns)
	steps := [][]string{
		{"-n", sw, "link", "add", name, "type", "veth", "peer", "name", "eth0", "netns", ns},
		{"-n", sw, "link", "set", name, "master", "br0", "up"},
		{"-n", ns, "addr", "add", addr + "/24", "dev", "eth0"},
		{"-n", ns, "link", "set", "eth0", "up"},
		{"-n", ns, "link", "set", "lo", "up"},
	}
	for _, s := range steps {
		if err := ip(s...); err != nil {
			return Host{}, "", err
		}
	}
	dir := filepath.Join(h.dir, name)
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return Host{}, "", fmt.Errorf("nshosts: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return Host{}, "", fmt.Errorf("nshosts: %w", err)
	}
	line, err := h.startSSHD(name, ns, addr, dir, authorized)
	if err != nil {
		return Host{}, "", err
	}
	return Host{Name: name, Address: addr, User: "root", Dir: data}, line, nil
}

// Harness returns the harness's address on the hosts' network: the
// subnet's .1, on the harness's end of the veth pair to the switch.
func (h *Hosts) Harness() string { return h.subnet + ".1" }

// Subnet returns the first three octets of the hosts' /24.
func (h *Hosts) Subnet() string { return h.subnet }

// List returns the hosts, in order.
func (h *Hosts) List() []Host { return append([]Host(nil), h.hosts...) }

// Namespaces returns the names of the network namespaces made, the
// switch's first.
func (h *Hosts) Namespaces() []string { return append([]string(nil), h.netns...) }

// Logs returns what each sshd wrote, one block per host.
func (h *Hosts) Logs() string {
	var b strings.Builder
	for _, s := range h.sshd {
		fmt.Fprintf(&b, "sshd of %s:\n%s\n", s.host, s.log.String())
	}
	return b.String()
}

// Close kills every sshd, deletes the namespaces (with the bridge and the
// veth pairs in them), waits within a bound until the kernel has freed the
// harness's veth, and removes the dir. It is safe to call more than once:
// later calls return the first's error.
func (h *Hosts) Close() error {
	h.once.Do(func() { h.closeErr = h.remove() })
	return h.closeErr
}

// remove is Close's work, done once.
func (h *Hosts) remove() error {
	var errs []error
	for _, s := range h.sshd {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		_ = s.cmd.Wait()
	}
	for i := len(h.netns) - 1; i >= 0; i-- {
		errs = append(errs, deleteNetns(h.netns[i]))
	}
	if h.privsep {
		errs = append(errs, releasePrivsep())
	}
	if len(h.netns) > 0 {
		errs = append(errs, waitLinkGone(h.name, goneTimeout))
	}
	if h.dir != "" {
		if err := os.RemoveAll(h.dir); err != nil {
			errs = append(errs, fmt.Errorf("nshosts: %w", err))
		}
	}
	return errors.Join(errs...)
}

// ip runs ip with args.
func ip(args ...string) error {
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("nshosts: ip %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// deleteNetns kills every process left in the namespace and deletes it.
func deleteNetns(ns string) error {
	if out, err := exec.Command("ip", "netns", "pids", ns).Output(); err == nil {
		for _, f := range strings.Fields(string(out)) {
			var pid int
			if _, err := fmt.Sscan(f, &pid); err == nil && pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	return ip("netns", "del", ns)
}

// waitLinkGone waits until the harness's namespace has no link called
// name, or d has passed.
func waitLinkGone(name string, d time.Duration) error {
	for deadline := time.Now().Add(d); ; time.Sleep(50 * time.Millisecond) {
		if err := exec.Command("ip", "link", "show", "dev", name).Run(); err != nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nshosts: the link %s is still there %v after its namespace was deleted", name, d)
		}
	}
}

// syncBuffer is a buffer safe for concurrent writes and reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
