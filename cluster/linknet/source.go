package linknet

// source.go holds the per-source links (LinkFrom): links that share one
// address and are told apart by the group id of the process that dials.

import (
	"fmt"
	"net"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
)

// sharedAddr is the address the per-source links to one upstream share: a
// port reserved like a link's, which the kernel translates only for the
// processes of a per-source link.
type sharedAddr struct {
	addr    string
	port    int
	reserve net.Listener
	links   int // the per-source links on it
}

// gidKey returns the per-source link's key in the maps gid_links and
// gid_marks: its group id and the shared address.
func (l *link) gidKey() string { return fmt.Sprintf("%d . 127.0.0.1 . %d", l.gid, l.shared.port) }

// LinkFrom creates the per-source link named name: it carries the
// connections that processes whose primary group id is gid open to the
// address that every per-source link to upstream shares, and it returns
// that address. Servers that must all dial one advertised address of a
// peer (etcd derives member ids from the advertised peer URLs) then still
// get a link per pair, when each runs with a group id of its own: the
// kernel sets the conntrack mark of a new connection from the dialling
// socket's group id (nftables meta skgid) and the address it dials, so a
// cut or reset of the link hits that server's connections only, in both
// directions. The link reserves a port of its own only for the uniqueness
// of its mark. A connection to the shared address from a process of any
// other group id is not translated: it reaches no server (it waits in the
// backlog of the socket that reserves the address). gid must be positive
// (0 is root's group, the harness's own), and one group id has one link
// to an upstream. The shared address is released with its last link.
func (n *Network) LinkFrom(name string, gid int, upstream string) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return "", ErrClosed
	}
	if name == "" || upstream == "" {
		return "", fmt.Errorf("linknet: link needs a name and an upstream (got %q, %q)", name, upstream)
	}
	if gid <= 0 || gid >= 1<<32-1 {
		return "", fmt.Errorf("linknet: per-source link %q: group id %d is out of range (1 to 4294967294)", name, gid)
	}
	if _, ok := n.links[name]; ok {
		return "", fmt.Errorf("linknet: link %q already exists", name)
	}
	to, err := ipv4(upstream)
	if err != nil {
		return "", err
	}
	s := n.shared[upstream]
	if s == nil {
		reserve, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			return "", fmt.Errorf("linknet: reserve the shared address of %s: %w", upstream, err)
		}
		s = &sharedAddr{addr: reserve.Addr().String(), port: reserve.Addr().(*net.TCPAddr).Port, reserve: reserve}
		n.shared[upstream] = s
	}
	for _, o := range n.links {
		if o.shared == s && o.gid == gid {
			n.releaseShared(upstream, s)
			return "", fmt.Errorf("linknet: per-source link %q: group id %d already has the link %q to %s", name, gid, o.name, upstream)
		}
	}
	reserve, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		n.releaseShared(upstream, s)
		return "", fmt.Errorf("linknet: reserve a mark for link %q: %w", name, err)
	}
	l := &link{name: name, addr: s.addr, reserve: reserve, upstream: upstream, target: upstream, kernel: map[Fault]int{}, shared: s, gid: gid}
	l.port = reserve.Addr().(*net.TCPAddr).Port
	if n.proxied {
		p := toxiproxy.NewProxy(n.server, name, "127.0.0.1:0", upstream)
		if err := n.server.Collection.Add(p, true); err != nil {
			reserve.Close()
			n.releaseShared(upstream, s)
			return "", fmt.Errorf("linknet: start the proxy of link %q: %w", name, err)
		}
		l.proxy = p
		l.target = p.Listen
		if to, err = ipv4(p.Listen); err != nil {
			_ = n.server.Collection.Remove(name)
			reserve.Close()
			n.releaseShared(upstream, s)
			return "", err
		}
	}
	if err := n.sh.run(fmt.Sprintf("add element ip %[1]s gid_links { %[2]s : %[3]s }\nadd element ip %[1]s gid_marks { %[2]s : %[4]s }\n",
		n.table, l.gidKey(), to, l.mark())); err != nil {
		reserve.Close()
		if l.proxy != nil {
			_ = n.server.Collection.Remove(name)
		}
		n.releaseShared(upstream, s)
		return "", fmt.Errorf("linknet: link %q: %w", name, err)
	}
	s.links++
	n.links[name] = l
	return l.addr, nil
}

// releaseShared releases the shared address of upstream when no link is on
// it; the caller holds n.mu.
func (n *Network) releaseShared(upstream string, s *sharedAddr) {
	if s.links > 0 {
		return
	}
	s.reserve.Close()
	if n.shared[upstream] == s {
		delete(n.shared, upstream)
	}
}
