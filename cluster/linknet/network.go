// Package linknet owns the network of links a cluster's connections go
// through: every client-to-node and node-to-node connection is a link, an
// address of its own on 127.0.0.1 that the kernel translates to the link's
// upstream, on which faults (cuts, resets, latency) are applied and healed.
// It holds the nftables rules of the links, the per-source links of servers
// that must all dial one address, the conntrack look-ups that tell their
// connections apart, the watcher that completes resets, and the latency
// proxies. It knows nothing of the systems under test: package cluster and
// its backends create the links, the nemesis faults them.
package linknet

// network.go holds the Network: its creation, its links by name, and its
// teardown.

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sort"
	"sync"
	"sync/atomic"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// ErrNoLink reports that a link name is not known to the Network.
var ErrNoLink = errors.New("linknet: no such link")

// ErrClosed reports a use of a Network after Close.
var ErrClosed = errors.New("linknet: network closed")

// ErrUnavailable reports that a Network cannot apply a fault (latency
// without proxies, a reset of a per-source link without conntrack). It is
// the error package cluster declares as cluster.ErrUnavailable, so the
// faults test one error with errors.Is whichever package reported it.
var ErrUnavailable = errors.New("cluster: not available")

// Option configures New.
type Option func(*Network)

// WithProxies makes every link go through a TCP proxy (toxiproxy) embedded
// in the harness, which the latency fault needs. It costs about three times
// a direct round trip; cuts and resets stay in the kernel either way.
func WithProxies() Option { return func(n *Network) { n.proxied = true } }

// WithLinkAddress makes the links' addresses ports on ip, an IPv4 address
// of the harness's own, in place of 127.0.0.1: the address the harness
// reaches servers on other hosts from (the ssh backend's). The kernel
// routes a connection translated to another host only from a source that
// is not a loopback address, so a link to a remote upstream must be dialled
// there. Per-source links (LinkFrom) stay on 127.0.0.1.
func WithLinkAddress(ip string) Option { return func(n *Network) { n.host = ip } }

// Network is the network of a cluster: every client-to-node and
// node-to-node connection goes through a link, an address of its own on
// 127.0.0.1 that the kernel translates to the link's upstream (nftables
// DNAT in a table of this Network's own), so an unfaulted link costs
// nothing in the data path. Faults are kernel rules on the link's
// connections (identified by a conntrack mark set when they open): cuts
// drop packets, resets answer with RST. With WithProxies every link also
// passes through an embedded toxiproxy proxy, for latency. A per-source
// link (LinkFrom) is told apart by the process that dials: servers that
// must all dial one address still get a link per pair. Its methods are
// safe for concurrent use.
type Network struct {
	mu      sync.Mutex
	table   string
	host    string // the links' address (WithLinkAddress), 127.0.0.1 by default
	proxied bool
	server  *toxiproxy.ApiServer
	links   map[string]*link
	shared  map[string]*sharedAddr // upstream -> the address its per-source links share
	closed  bool

	watching  bool          // a resetWatch runs
	stop      chan struct{} // closed by Close: resetWatch ends
	watchDone chan struct{}

	sh *nftShell // the Network's nft -i

	pmu   sync.Mutex      // held while the ends of reset links' connections are looked at
	pairs map[string]bool // the dialling addresses of reset links' connections seen with both ends

	closer EndCloser // destroys the ends on other hosts of reset links' connections (SetEndCloser)
}

var tableSeq atomic.Int64

// New creates the Network's nftables table (deleting first what dead
// harnesses left behind: DeleteStaleTables) and returns the Network with no
// link. It needs nft and CAP_NET_ADMIN.
func New(opts ...Option) (*Network, error) {
	n := &Network{host: "127.0.0.1", links: map[string]*link{}, shared: map[string]*sharedAddr{}, stop: make(chan struct{})}
	for _, o := range opts {
		o(n)
	}
	if ip := net.ParseIP(n.host); ip == nil || ip.To4() == nil {
		return nil, fmt.Errorf("linknet: link address %q is not an IPv4 address", n.host)
	}
	if n.proxied {
		n.server = toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	}
	if err := DeleteStaleTables(); err != nil {
		return nil, err
	}
	n.table = fmt.Sprintf("%s%d_%d", TablePrefix, os.Getpid(), tableSeq.Add(1))
	if err := nft(tableScript(n.table)); err != nil {
		return nil, fmt.Errorf("linknet: create the network's nftables table (needs nft and CAP_NET_ADMIN): %w", err)
	}
	sh, err := startNftShell(n.table)
	if err != nil {
		_ = nft("delete table ip " + n.table + "\n")
		return nil, fmt.Errorf("linknet: %w", err)
	}
	n.sh = sh
	return n, nil
}

// Table returns the name of the Network's nftables table (family ip).
func (n *Network) Table() string { return n.table }

// Addr returns the address the link is reached on, or "" for an unknown link.
func (n *Network) Addr(name string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if l, ok := n.links[name]; ok {
		return l.addr
	}
	return ""
}

// Upstream returns the address the link reaches, or "" for an unknown link.
func (n *Network) Upstream(name string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if l, ok := n.links[name]; ok {
		return l.upstream
	}
	return ""
}

// Links returns the names of all links, sorted.
func (n *Network) Links() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]string, 0, len(n.links))
	for name := range n.links {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// LinksFrom returns the sorted names of the links whose "from" end is from
// (LinksFrom("w3") gives "w3->n1", "w3->n2", ...).
func (n *Network) LinksFrom(from string) []string {
	var out []string
	for _, name := range n.Links() {
		if f, _, ok := SplitName(name); ok && f == from {
			out = append(out, name)
		}
	}
	return out
}

// LinksTo returns the sorted names of the links whose "to" end is node
// (LinksTo("n1") gives "n2->n1", "w1->n1", ...).
func (n *Network) LinksTo(node string) []string {
	var out []string
	for _, name := range n.Links() {
		if _, t, ok := SplitName(name); ok && t == node {
			out = append(out, name)
		}
	}
	return out
}

// link returns the named link; the caller holds n.mu.
func (n *Network) link(name string) (*link, error) {
	if n.closed {
		return nil, ErrClosed
	}
	l, ok := n.links[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrNoLink, name)
	}
	return l, nil
}

// Close removes every link, closing their connections, and deletes the
// Network's nftables table; nothing of it remains in the kernel. It is safe
// to call more than once.
func (n *Network) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil
	}
	n.closed = true
	close(n.stop)
	if n.watching {
		// resetWatch takes n.mu; let it see the stop.
		done := n.watchDone
		n.mu.Unlock()
		<-done
		n.mu.Lock()
	}
	var errs []error
	n.sh.close()
	if err := nft("delete table ip " + n.table + "\n"); err != nil {
		errs = append(errs, fmt.Errorf("linknet: close network: %w", err))
	}
	ls := make([]*link, 0, len(n.links))
	for _, l := range n.links {
		ls = append(ls, l)
		if l.reserve != nil {
			errs = append(errs, l.reserve.Close())
		}
	}
	errs = append(errs, killConns(ls))
	n.links = map[string]*link{}
	for _, sa := range n.shared {
		errs = append(errs, sa.reserve.Close())
	}
	clear(n.shared)
	if n.server != nil {
		if err := n.server.Collection.Clear(); err != nil {
			errs = append(errs, fmt.Errorf("linknet: close network: %w", err))
		}
	}
	return errors.Join(errs...)
}
