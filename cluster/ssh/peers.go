package ssh

// peers.go holds what the nodes of a replicated topology share: the
// links between them (linknet.Network.LinkOn), cut and reset by nftables rules on
// their hosts, each host's table of the run's own, the wiring of etcd and
// ZooKeeper, and the RedisWiring of cluster.Replication.

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
)

// tablePrefix begins the name of a run's nftables table on a host:
// "jepsen_lite_ssh_<harness>_<pid>_<seq>".
const tablePrefix = "jepsen_lite_ssh_"

// tableName returns the run's table on its hosts, from its dir's name.
func tableName(run string) string {
	name := strings.TrimPrefix(run, runDirPrefix)
	return tablePrefix + strings.NewReplacer("-", "_", ".", "_").Replace(name)
}

// tableScript is the nft script of a run's table on a host: the sets of
// what its cuts drop as packets arrive at the host, from a peer's address
// to a server's port (drop_to: source, destination, destination port)
// and back from it (drop_from: source, source port, destination), and the
// sets of what its resets answer with a RST, keyed alike (reset_to,
// reset_from), before the drops. A reset's rule records the connection it
// answered in reset_seen, this host's end first (destination address and
// port, then source's), for the reset watcher to destroy that end
// (resets.go).
func tableScript(table string) string {
	return fmt.Sprintf(`table ip %s {
	set drop_to { type ipv4_addr . ipv4_addr . inet_service; }
	set drop_from { type ipv4_addr . inet_service . ipv4_addr; }
	set reset_to { type ipv4_addr . ipv4_addr . inet_service; }
	set reset_from { type ipv4_addr . inet_service . ipv4_addr; }
	set reset_seen { type ipv4_addr . inet_service . ipv4_addr . inet_service; flags dynamic; size 65535; }
	chain filter_in {
		type filter hook input priority 0; policy accept;
		ip saddr . ip daddr . tcp dport @reset_to tcp flags & rst == 0 add @reset_seen { ip daddr . tcp dport . ip saddr . tcp sport } reject with tcp reset
		ip saddr . tcp sport . ip daddr @reset_from tcp flags & rst == 0 add @reset_seen { ip daddr . tcp dport . ip saddr . tcp sport } reject with tcp reset
		ip saddr . ip daddr . tcp dport @drop_to drop
		ip saddr . tcp sport . ip daddr @drop_from drop
	}
}
`, table)
}

// makeTable creates the run's table on the connection's host.
func (c *Cluster) makeTable(ctx context.Context, conn *conn) error {
	if _, err := conn.run(ctx, "nft -f -", strings.NewReader(tableScript(tableName(c.run)))); err != nil {
		return fmt.Errorf("ssh: the run's nftables table on %s (needs nft and CAP_NET_ADMIN there): %w", conn.host.Name, err)
	}
	return nil
}

// peerLink is the Faulter and Resetter of the link from one node to
// another: a cut or reset of its forward direction drops or answers, at
// to's host, what from's host sends to the port; of its back direction,
// at from's host, what the port sends to from's host.
type peerLink struct {
	c        *Cluster
	from, to *node
	port     int // the port of to's that from dials
}

// Fault adds or removes the element of the cut in dir.
func (p peerLink) Fault(dir linknet.Direction, on bool) error { return p.change("drop_", dir, on) }

// Reset adds or removes the element of the reset in dir.
func (p peerLink) Reset(dir linknet.Direction, on bool) error { return p.change("reset_", dir, on) }

// change adds or removes the element of the cut (kind "drop_") or reset
// (kind "reset_") in dir.
func (p peerLink) change(kind string, dir linknet.Direction, on bool) error {
	from, to := p.from.conn.host.Address, p.to.conn.host.Address
	host, set, elem := p.to.conn, kind+"to", fmt.Sprintf("%s . %s . %d", from, to, p.port)
	if dir == linknet.DirectionBack {
		host, set, elem = p.from.conn, kind+"from", fmt.Sprintf("%s . %d . %s", to, p.port, from)
	}
	return p.c.changeElements(host, set, []string{elem}, on, p.from.name+"->"+p.to.name)
}

// peerLinkTo makes the link through which from replicates from (or
// watches) to (cluster.ReplicationLink's name), when missing, and returns
// the address from dials: to's own. The sentinel topology's link
// "peers->to" is every other node's (sharedLink).
func (c *Cluster) peerLinkTo(from, to *node) (string, error) {
	name := cluster.ReplicationLink(c.spec, from.name, to.name)
	if end, _, _ := linknet.SplitName(name); end == cluster.PeersLink {
		return c.linkWith(name, to, to.port, sharedLink{c: c, to: to, port: to.port})
	}
	return c.linkOn(name, from, to, to.port)
}

// linkOn makes the link named name from one node to the other's port,
// when missing, and returns the address from dials: to's host and port.
func (c *Cluster) linkOn(name string, from, to *node, port int) (string, error) {
	return c.linkWith(name, to, port, peerLink{c: c, from: from, to: to, port: port})
}

// linkWith makes the link named name to the node's port, cut by faults,
// when missing, and returns its address: the node's host and the port.
func (c *Cluster) linkWith(name string, to *node, port int, faults linknet.Faulter) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a := c.net.Addr(name); a != "" {
		return a, nil
	}
	upstream := net.JoinHostPort(to.conn.host.Address, strconv.Itoa(port))
	addr, err := c.net.LinkOn(name, upstream, faults)
	if err != nil {
		return "", fmt.Errorf("ssh: %w", err)
	}
	c.links = append(c.links, name)
	return addr, nil
}

// wiring is the cluster.RedisWiring of a cluster on hosts.
type wiring struct{ c *Cluster }

// PeerAddr returns the address from reaches to on, making their link.
func (w wiring) PeerAddr(_ context.Context, from, to string) (string, error) {
	f, err := w.c.node(from)
	if err != nil {
		return "", err
	}
	t, err := w.c.node(to)
	if err != nil {
		return "", err
	}
	return w.c.peerLinkTo(f, t)
}

// Running reports whether the node's server runs on its host.
func (w wiring) Running(ctx context.Context, name string) bool {
	n, err := w.c.node(name)
	if err != nil {
		return false
	}
	_, err = n.conn.run(ctx, aliveFunc+"cd "+quote(n.dir)+` && alive "$(cat pid)"`, nil)
	return err == nil
}

// etcdPeerOffset is added to a member's client port to make its peer port.
const etcdPeerOffset = 100

// wireEtcd makes the links between every two members of an etcd cluster
// ("nJ->nK", to nK's peer port) and gives each member its flags: its
// peer URL, its host's own address, is the one every member dials.
func (c *Cluster) wireEtcd() error {
	var initial []string
	for _, n := range c.nodes {
		for _, p := range c.nodes {
			if p == n {
				continue
			}
			if _, err := c.linkOn(linknet.Name(p.name, n.name), p, n, n.port+etcdPeerOffset); err != nil {
				return err
			}
		}
		initial = append(initial, n.name+"=http://"+net.JoinHostPort(n.conn.host.Address, strconv.Itoa(n.port+etcdPeerOffset)))
	}
	for _, n := range c.nodes {
		peer := "http://" + net.JoinHostPort(n.conn.host.Address, strconv.Itoa(n.port+etcdPeerOffset))
		args := append([]string{
			"--name", n.name, "--data-dir", quote(n.dir + "/data"),
			"--listen-client-urls", "http://" + n.addr, "--advertise-client-urls", "http://" + n.addr,
			"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
			"--initial-cluster", strings.Join(initial, ","),
		}, cluster.Settings(c.spec)...)
		n.command = quote(n.conn.host.binary("etcd")) + " " + strings.Join(args, " ")
	}
	return nil
}

// The offsets of a ZooKeeper server's quorum and election ports from its
// client port.
const (
	zkQuorumOffset   = 1000
	zkElectionOffset = 1100
)

// wireZooKeeper gives each ZooKeeper server its zoo.cfg and myid: a
// standalone server, or a member of an ensemble whose peers it dials on
// their hosts' own addresses, every pair's quorum link ("nJ->nK", to nK's
// quorum port) and election link ("nJ->nK/election") cut by the run's
// table on the hosts. A server dials back the address a lower-numbered
// one announces, its host's own, so every byte between two servers is on
// a link with no redirection.
func (c *Cluster) wireZooKeeper() error {
	for i, n := range c.nodes {
		conf := append(cluster.Settings(c.spec), "dataDir="+n.dir+"/data", "clientPort="+strconv.Itoa(n.port), "clientPortAddress="+n.conn.host.Address)
		if len(c.nodes) > 1 {
			for j, o := range c.nodes {
				q, e := o.port+zkQuorumOffset, o.port+zkElectionOffset
				if j != i {
					if _, err := c.linkOn(linknet.Name(n.name, o.name), n, o, q); err != nil {
						return err
					}
					if _, err := c.linkOn(linknet.Name(n.name, o.name+linknet.PurposeSeparator+cluster.ZooKeeperElection), n, o, e); err != nil {
						return err
					}
				}
				conf = append(conf, fmt.Sprintf("server.%d=%s:%d:%d", j+1, o.conn.host.Address, q, e))
			}
		}
		n.config, n.configText = "zoo.cfg", strings.Join(conf, "\n")+"\n"
		n.install = "mkdir -p data && echo " + strconv.Itoa(i+1) + " > data/myid"
		classpath := cluster.ZooKeeperJar + ":" + cluster.ZooKeeperLogJar
		n.command = prefixed(n.command, quote(n.conn.host.binary("java"))+" "+strings.Join(quoteAll(cluster.ZooKeeperJVM(classpath, n.dir+"/zoo.cfg")), " "))
	}
	return nil
}

// prefixed returns command with the prefix the node's command already has
// (the clock-skew library's environment), set before its server was known.
func prefixed(prefix, command string) string {
	if prefix == "" {
		return command
	}
	return prefix + " " + command
}

// quoteAll quotes each word for the host's shell.
func quoteAll(words []string) []string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = quote(w)
	}
	return out
}
