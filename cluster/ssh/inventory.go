package ssh

// inventory.go holds the inventory: the hosts a cluster's nodes run on,
// read from a YAML file and checked before anything connects.

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/jepsen-lite/jepsen-lite/cluster/ssh/nshosts"
)

// maxHosts bounds the hosts of an inventory.
const maxHosts = 64

// Inventory is the hosts a cluster's nodes run on, and the harness's own
// address on their network.
type Inventory struct {
	// Harness is an IPv4 address of the harness's own that the hosts
	// reach it on: the workers' links are ports on it
	// (linknet.WithLinkAddress), so that a connection to a node leaves the
	// harness from a routable source.
	Harness string `yaml:"harness"`
	// Hosts are the hosts, in order: node nK runs on the K-th (round
	// robin when there are more nodes than hosts).
	Hosts []Host `yaml:"hosts"`
}

// Host is one host of an inventory.
type Host struct {
	// Name names the host in messages and node logs.
	Name string `yaml:"name"`
	// Address is the host's IPv4 address: its servers listen there, and
	// the harness reaches its SSH server there.
	Address string `yaml:"address"`
	// Port is its SSH server's port; 22 when 0.
	Port int `yaml:"port,omitempty"`
	// User is the SSH user; the servers run as that user.
	User string `yaml:"user"`
	// Key is the file of the user's private key; empty, the keys of the
	// SSH agent at $SSH_AUTH_SOCK.
	Key string `yaml:"key,omitempty"`
	// KnownHosts is the known_hosts file that holds the host's key: the
	// harness connects to no host it cannot verify.
	KnownHosts string `yaml:"known-hosts"`
	// Dir is the directory on the host under which each run makes its own
	// (its nodes' data dirs and logs); /tmp when empty.
	Dir string `yaml:"dir,omitempty"`
	// Paths gives a server binary's path by its name (redis-server:
	// /usr/bin/redis-server); a name not given is found on the host's
	// PATH.
	Paths map[string]string `yaml:"paths,omitempty"`
}

// LoadInventory reads and checks the inventory file at file.
func LoadInventory(file string) (Inventory, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return Inventory{}, fmt.Errorf("ssh: inventory: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var inv Inventory
	if err := dec.Decode(&inv); err != nil {
		return Inventory{}, fmt.Errorf("ssh: inventory %s: %w", file, err)
	}
	if err := inv.Check(); err != nil {
		return Inventory{}, fmt.Errorf("ssh: inventory %s: %w", file, err)
	}
	return inv, nil
}

// NamespaceInventory returns the inventory of hosts made of network
// namespaces on this machine (nshosts.Create): the harness's address on
// their bridge, and each host as root with the harness's key.
func NamespaceInventory(h *nshosts.Hosts) Inventory {
	inv := Inventory{Harness: h.Harness()}
	for _, x := range h.List() {
		inv.Hosts = append(inv.Hosts, Host{Name: x.Name, Address: x.Address, User: x.User, Key: x.Key, KnownHosts: x.KnownHosts, Dir: x.Dir})
	}
	return inv
}

// Write writes the inventory to file as the YAML LoadInventory reads,
// after header's lines as comments: into a temp file beside it, renamed
// into place.
func (inv Inventory) Write(file, header string) error {
	var b bytes.Buffer
	for _, line := range strings.Split(strings.TrimSpace(header), "\n") {
		if line != "" {
			b.WriteString("# " + line + "\n")
		}
	}
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(inv); err != nil {
		return fmt.Errorf("ssh: inventory %s: %w", file, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".*")
	if err != nil {
		return fmt.Errorf("ssh: inventory %s: %w", file, err)
	}
	_, err = tmp.Write(b.Bytes())
	err = errors.Join(err, tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), file)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("ssh: inventory %s: %w", file, err)
	}
	return nil
}

// Check returns an error naming each field of the inventory that is
// missing or wrong.
func (inv Inventory) Check() error {
	var errs []error
	if !isIPv4(inv.Harness) {
		errs = append(errs, fmt.Errorf("harness: %q is not an IPv4 address", inv.Harness))
	}
	if len(inv.Hosts) == 0 || len(inv.Hosts) > maxHosts {
		errs = append(errs, fmt.Errorf("hosts: %d hosts, want 1 to %d", len(inv.Hosts), maxHosts))
	}
	seen := map[string]bool{}
	for i, h := range inv.Hosts {
		where := fmt.Sprintf("hosts[%d]", i)
		if h.Name == "" || strings.ContainsAny(h.Name, "/ \t") || seen[h.Name] {
			errs = append(errs, fmt.Errorf("%s.name: %q is empty, has a slash or a space, or names another host", where, h.Name))
		}
		seen[h.Name] = true
		if !isIPv4(h.Address) {
			errs = append(errs, fmt.Errorf("%s.address: %q is not an IPv4 address", where, h.Address))
		}
		if h.Port < 0 || h.Port > 65535 {
			errs = append(errs, fmt.Errorf("%s.port: %d is not a port", where, h.Port))
		}
		if h.User == "" {
			errs = append(errs, fmt.Errorf("%s.user: missing", where))
		}
		if h.KnownHosts == "" {
			errs = append(errs, fmt.Errorf("%s.known-hosts: missing (the harness connects to no host it cannot verify)", where))
		}
		if h.Dir != "" && !path.IsAbs(h.Dir) {
			errs = append(errs, fmt.Errorf("%s.dir: %q is not an absolute path", where, h.Dir))
		}
	}
	return errors.Join(errs...)
}

// sshAddr returns the address of the host's SSH server.
func (h Host) sshAddr() string {
	port := h.Port
	if port == 0 {
		port = 22
	}
	return net.JoinHostPort(h.Address, fmt.Sprint(port))
}

// dir returns the directory under which runs make theirs.
func (h Host) dir() string {
	if h.Dir == "" {
		return "/tmp"
	}
	return h.Dir
}

// binary returns the path (or the name, found on PATH) of a server binary.
func (h Host) binary(name string) string {
	if p, ok := h.Paths[name]; ok && p != "" {
		return p
	}
	return name
}

// isIPv4 reports whether s is an IPv4 address.
func isIPv4(s string) bool {
	ip := net.ParseIP(s)
	return ip != nil && ip.To4() != nil
}
