package nshosts

// sshd.go holds each host's sshd (its config, host key and authorized
// key), the harness's key, the choice of a free subnet and the removal of
// what creations of dead processes left behind.

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/jepsen-lite/jepsen-lite/spawn"
)

// startSSHD writes the host's sshd config, host key and authorized keys
// into dir and starts its sshd in the namespace ns, listening on addr:22
// only. It returns the host's known_hosts line.
func (h *Hosts) startSSHD(name, ns, addr, dir, authorized string) (string, error) {
	hostKey, pub, err := newKey(filepath.Join(dir, "ssh_host_ed25519_key"))
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), []byte(authorized), 0o600); err != nil {
		return "", fmt.Errorf("nshosts: %w", err)
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
		return "", fmt.Errorf("nshosts: %w", err)
	}
	cmd := exec.Command("ip", "netns", "exec", ns, sshdPath, "-D", "-e", "-f", cfg)
	log := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := spawn.Start(cmd); err != nil {
		return "", fmt.Errorf("nshosts: sshd of %s: %w", name, err)
	}
	h.sshd = append(h.sshd, &sshd{host: name, cmd: cmd, log: log})
	return knownhosts.Line([]string{addr}, pub), nil
}

// waitReady waits, within readyTimeout and ctx, until every host's sshd
// accepts connections.
func (h *Hosts) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	for _, host := range h.hosts {
		addr := net.JoinHostPort(host.Address, "22")
		for {
			c, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", addr)
			if err == nil {
				c.Close()
				break
			}
			if ctx.Err() != nil {
				return fmt.Errorf("nshosts: the sshd of %s does not accept connections on %s: %w", host.Name, addr, errors.Join(err, ctx.Err()))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

// clientKey writes the harness's private key into dir and returns its
// path and the authorized_keys line of its public key.
func clientKey(dir string) (string, string, error) {
	path, pub, err := newKey(filepath.Join(dir, "id_ed25519"))
	if err != nil {
		return "", "", err
	}
	return path, string(gossh.MarshalAuthorizedKey(pub)), nil
}

// newKey writes a new ed25519 private key in OpenSSH's format to path and
// returns the path and its public key.
func newKey(path string) (string, gossh.PublicKey, error) {
	pubRaw, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", nil, fmt.Errorf("nshosts: key: %w", err)
	}
	block, err := gossh.MarshalPrivateKey(priv, "")
	if err != nil {
		return "", nil, fmt.Errorf("nshosts: key: %w", err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		return "", nil, fmt.Errorf("nshosts: key: %w", err)
	}
	pub, err := gossh.NewPublicKey(pubRaw)
	if err != nil {
		return "", nil, fmt.Errorf("nshosts: key: %w", err)
	}
	return path, pub, nil
}

// FreeSubnet returns the first three octets of a /24 of 10.231.0.0/16
// that no address or route of the machine is in.
func FreeSubnet() (string, error) {
	addrs, err := exec.Command("ip", "-4", "-o", "addr").Output()
	if err != nil {
		return "", fmt.Errorf("nshosts: ip addr: %w", err)
	}
	routes, err := exec.Command("ip", "-4", "route", "show", "table", "all").Output()
	if err != nil {
		return "", fmt.Errorf("nshosts: ip route: %w", err)
	}
	for range 50 {
		s := fmt.Sprintf("10.231.%d", 1+mrand.IntN(254))
		if !strings.Contains(string(addrs)+string(routes), s+".") {
			return s, nil
		}
	}
	return "", errors.New("nshosts: no free /24 in 10.231.0.0/16")
}

// privsep counts this process's Hosts that need privsepDir; made is
// whether this process made it.
var privsep struct {
	mu    sync.Mutex
	users int
	made  bool
}

// acquirePrivsep makes privsepDir when it is missing, and counts a user.
func acquirePrivsep() error {
	privsep.mu.Lock()
	defer privsep.mu.Unlock()
	if _, err := os.Stat(privsepDir); os.IsNotExist(err) {
		if err := os.Mkdir(privsepDir, 0o755); err != nil {
			return fmt.Errorf("nshosts: %w", err)
		}
		privsep.made = true
	}
	privsep.users++
	return nil
}

// releasePrivsep uncounts a user and, when this process made privsepDir,
// its last user is gone and no other sshd runs on the machine, removes it.
func releasePrivsep() error {
	privsep.mu.Lock()
	defer privsep.mu.Unlock()
	privsep.users--
	if privsep.users > 0 || !privsep.made || sshdRunning() {
		return nil
	}
	privsep.made = false
	if err := os.Remove(privsepDir); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("nshosts: %w", err)
	}
	return nil
}

// sshdRunning reports whether any sshd runs on the machine.
func sshdRunning() bool {
	comms, _ := filepath.Glob("/proc/[0-9]*/comm")
	for _, c := range comms {
		if b, err := os.ReadFile(c); err == nil && strings.TrimSpace(string(b)) == "sshd" {
			return true
		}
	}
	return false
}

// leftoverName matches a name this package gives ("jlh<pid>-<seq>",
// optionally followed by "-<host>") and its pid.
var leftoverName = regexp.MustCompile(`^` + prefix + `(\d+)-\d+(-[A-Za-z0-9]+)?$`)

// DeleteLeftovers removes what creations of processes that are gone left:
// their namespaces (killing every process in them), their harness's veth
// and their dirs in os.TempDir(). Those of live processes are left alone.
func DeleteLeftovers() error {
	var errs []error
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return fmt.Errorf("nshosts: ip netns list: %w", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && deadOwner(f[0]) {
			errs = append(errs, deleteNetns(f[0]))
		}
	}
	if out, err := exec.Command("ip", "-o", "link", "show").Output(); err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Fields(line)
			if len(f) > 1 {
				name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
				if deadOwner(name) {
					errs = append(errs, ip("link", "del", name))
				}
			}
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, d := range dirs {
		rest := strings.TrimPrefix(filepath.Base(d), dirPrefix)
		pid, err := strconv.Atoi(strings.SplitN(rest, "-", 2)[0])
		if err == nil && pid > 0 && !alive(pid) {
			errs = append(errs, os.RemoveAll(d))
		}
	}
	return errors.Join(errs...)
}

// deadOwner reports whether name is one this package gives and the
// process that gave it is gone.
func deadOwner(name string) bool {
	m := leftoverName.FindStringSubmatch(name)
	if m == nil {
		return false
	}
	pid, err := strconv.Atoi(m[1])
	return err == nil && pid > 0 && pid != os.Getpid() && !alive(pid)
}

// alive reports whether a process has the pid.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
