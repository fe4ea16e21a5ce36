package linknet

// link.go holds the links of a Network that are told apart by the address
// dialled: their creation, their upstream and their removal.

import (
	"errors"
	"fmt"
	"net"
	"strings"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
)

// link is one link: a reserved address that the kernel translates (DNAT) to
// the link's target, and the faults on it.
type link struct {
	name     string
	addr     string       // the reserved address clients dial: the Network's link address (127.0.0.1) and a port
	port     int          // its port, also the low half of the conntrack mark
	reserve  net.Listener // holds the port so no other socket takes it
	upstream string       // what the link reaches
	target   string       // what the kernel translates addr to: upstream, or the proxy
	proxy    *toxiproxy.Proxy

	kernel  map[Fault]int // the cuts and resets on the link (Kind and Direction), counted
	latency bool
	away    bool // target is on another host (not a loopback address): see nftSet

	// A per-source link (LinkFrom): addr is the shared address, port the
	// link's own reserved port, which only makes its mark unique.
	shared *sharedAddr
	gid    int // the primary group id of the processes whose connections it carries

	// A link between two other hosts (LinkOn): no address of its own, its
	// cuts made by remote.
	remote Faulter
}

// Link creates the link named name to upstream and returns the address it
// is reached on (the Network's link address, 127.0.0.1 unless
// WithLinkAddress says otherwise, and a port reserved for it). Names are unique; by
// convention they are Name(from, to).
func (n *Network) Link(name, upstream string) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return "", ErrClosed
	}
	if name == "" || upstream == "" {
		return "", fmt.Errorf("linknet: link needs a name and an upstream (got %q, %q)", name, upstream)
	}
	if _, ok := n.links[name]; ok {
		return "", fmt.Errorf("linknet: link %q already exists", name)
	}
	reserve, err := net.Listen("tcp4", net.JoinHostPort(n.host, "0"))
	if err != nil {
		return "", fmt.Errorf("linknet: reserve an address for link %q: %w", name, err)
	}
	l := &link{name: name, reserve: reserve, upstream: upstream, kernel: map[Fault]int{}}
	l.addr = reserve.Addr().String()
	l.port = reserve.Addr().(*net.TCPAddr).Port
	target := upstream
	if n.proxied {
		p := toxiproxy.NewProxy(n.server, name, "127.0.0.1:0", upstream)
		if err := n.server.Collection.Add(p, true); err != nil {
			reserve.Close()
			return "", fmt.Errorf("linknet: start the proxy of link %q: %w", name, err)
		}
		l.proxy = p
		target = p.Listen
	}
	l.target, l.away = target, away(target)
	to, err := ipv4(target)
	if err == nil {
		err = n.sh.run(fmt.Sprintf("add element ip %[1]s links { %[5]s . %[2]d : %[3]s }\nadd element ip %[1]s marks { %[5]s . %[2]d : %[4]s }\n",
			n.table, l.port, to, l.mark(), n.host))
	}
	if err != nil {
		reserve.Close()
		if l.proxy != nil {
			_ = n.server.Collection.Remove(name)
		}
		return "", fmt.Errorf("linknet: link %q: %w", name, err)
	}
	n.links[name] = l
	return l.addr, nil
}

// SetUpstream points the link at a new upstream, keeping its address and
// its faults. Existing connections are closed (as a client's connections
// to a moved service address break); new ones go to the new upstream.
func (n *Network) SetUpstream(name, upstream string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	l, err := n.link(name)
	if err != nil {
		return err
	}
	if l.shared != nil || l.remote != nil {
		return fmt.Errorf("linknet: set upstream of link %q: a per-source link (LinkFrom) or a link between hosts (LinkOn) keeps its upstream", name)
	}
	if l.proxy != nil {
		l.proxy.Lock()
		listen := l.proxy.Listen
		l.proxy.Unlock()
		in := &toxiproxy.Proxy{Name: name, Listen: listen, Upstream: upstream, Enabled: true}
		if err := l.proxy.Update(in); err != nil {
			return fmt.Errorf("linknet: set upstream of link %q to %s: %w", name, upstream, err)
		}
		l.upstream = upstream
		return nil
	}
	to, err := ipv4(upstream)
	if err != nil {
		return err
	}
	if err := n.sh.run(fmt.Sprintf("delete element ip %[1]s links { %[4]s . %[2]d }\nadd element ip %[1]s links { %[4]s . %[2]d : %[3]s }\n", n.table, l.port, to, n.host)); err != nil {
		return fmt.Errorf("linknet: set upstream of link %q to %s: %w", name, upstream, err)
	}
	if away(upstream) != l.away && l.resetting() {
		// The link's marks move to the reset sets of its new target.
		script := n.unfaultScript(l)
		l.away = !l.away
		script += n.faultScript(l)
		if err := n.sh.run(script); err != nil {
			return fmt.Errorf("linknet: set upstream of link %q to %s: %w", name, upstream, err)
		}
	}
	l.upstream, l.target, l.away = upstream, upstream, away(upstream)
	return killConns([]*link{l})
}

// away reports whether the address (host:port) is on another host: its
// IP is not a loopback address.
func away(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	ip := net.ParseIP(host)
	return err == nil && ip != nil && !ip.IsLoopback()
}

// nftSet returns the table's set that holds the link's mark for the
// kernel set named set: for a link whose target is away, its resets'
// sets of their own (reset_away_forward, reset_away_back), whose rules
// are in the output hook for the original direction and record what they
// answer for the reset watcher; else set itself.
func (l *link) nftSet(set string) string {
	if rest, ok := strings.CutPrefix(set, "reset_"); ok && l.away {
		return "reset_away_" + rest
	}
	return set
}

// Remove removes the named links, closing their connections: one nft
// transaction and one pass of ss for all of them, so that a cluster's
// dozens of links go in milliseconds. An unknown name is an error
// (ErrNoLink); the others are removed all the same.
func (n *Network) Remove(names ...string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.remove(names, true)
}

// RemoveExisting removes those of the named links that exist, as Remove
// does, and skips a name without a link: what a cluster's Close gives
// for the links it made. On a nil or closed Network, or without names,
// it does nothing (a cluster whose start failed before it had a network).
func (n *Network) RemoveExisting(names ...string) error {
	if n == nil || len(names) == 0 {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil
	}
	return n.remove(names, false)
}

// remove removes the named links; an unknown name is an error when
// strict, else skipped. The caller holds n.mu.
func (n *Network) remove(names []string, strict bool) error {
	var errs []error
	var ls, remote []*link
	var script strings.Builder
	for _, name := range names {
		l, err := n.link(name)
		if err != nil {
			if strict || !errors.Is(err, ErrNoLink) {
				errs = append(errs, err)
			}
			continue
		}
		delete(n.links, name)
		if l.remote != nil {
			remote = append(remote, l)
			continue
		}
		ls = append(ls, l)
		script.WriteString(n.removeScript(l))
	}
	errs = append(errs, unfaultRemote(remote...))
	if script.Len() > 0 {
		if err := n.sh.run(script.String()); err != nil {
			errs = append(errs, fmt.Errorf("linknet: remove links %s: %w", strings.Join(names, ", "), err))
		}
	}
	return errors.Join(append(errs, n.closeLinks(ls)...)...)
}

// removeScript returns the nft commands that take the link out of the
// table: its translation, its mark and its faults.
func (n *Network) removeScript(l *link) string {
	script := fmt.Sprintf("delete element ip %[1]s links { %[3]s . %[2]d }\ndelete element ip %[1]s marks { %[3]s . %[2]d }\n", n.table, l.port, n.host)
	if l.shared != nil {
		script = fmt.Sprintf("delete element ip %[1]s gid_links { %[2]s }\ndelete element ip %[1]s gid_marks { %[2]s }\n", n.table, l.gidKey())
	}
	return script + n.unfaultScript(l)
}

// closeLinks closes the connections, proxies and reserved ports of the
// removed links ls (one ss for those of their own address); the caller
// holds n.mu.
func (n *Network) closeLinks(ls []*link) []error {
	var own, shared []*link
	for _, l := range ls {
		if l.shared != nil {
			shared = append(shared, l)
		} else {
			own = append(own, l)
		}
	}
	errs := []error{killSourceConns(shared), killConns(own)}
	for _, l := range ls {
		if l.proxy != nil {
			if err := n.server.Collection.Remove(l.name); err != nil {
				errs = append(errs, fmt.Errorf("linknet: remove link %q: %w", l.name, err))
			}
		}
		errs = append(errs, l.reserve.Close())
		if l.shared != nil {
			l.shared.links--
			n.releaseShared(l.upstream, l.shared)
		}
	}
	return errs
}
