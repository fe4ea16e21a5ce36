// Package ssh runs a cluster's servers on real hosts reached over SSH
// (golang.org/x/crypto/ssh): the hosts of an inventory (Inventory), each
// node on one of them, listening on the host's own address. It owns the
// SSH connections, the nodes' dirs, configs and logs on the hosts, their
// process lifetimes (start, kill, restart, pause) and what a run leaves on
// a host: a dir and an nftables table of the run's own, named with the
// harness's host name and pid, which the next run from that harness
// removes, with the processes, when the harness that made them is gone.
//
// It runs what Declared declares: every system in every topology,
// Redis's sentinel and cluster topologies too, each node of a topology
// whose nodes dial one another on a host of its own. The workers' links
// are the harness's own (linknet.WithLinkAddress on Inventory.Harness),
// cut and reset by the harness's kernel rules (the node's end of a reset
// connection destroyed on its host: CloseEnds); the links between nodes
// (a Redis Cluster's bus too) are cut and reset by rules on their hosts,
// by peer address (docs/network.md, "On other hosts"). A node's clock is skewed by the
// clock-skew preload library, copied to its host (WithClockSkewLibrary);
// the host's own clock is never touched.
package ssh

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
)

// Compile-time checks of the abilities a cluster on hosts has.
var (
	_ cluster.Cluster     = (*Cluster)(nil)
	_ cluster.Killer      = (*Cluster)(nil)
	_ cluster.Pauser      = (*Cluster)(nil)
	_ cluster.Failoverer  = (*Cluster)(nil)
	_ cluster.ClockSkewer = (*Cluster)(nil)
	_ cluster.Router      = (*Cluster)(nil)
	_ interface {
		Follow(ctx context.Context, node, primary string) error
	} = (*Cluster)(nil)
)

// Declared is the ssh backend's declaration without a start: the systems
// it runs, each in all its topologies. NewBackend gives it the start of an
// inventory.
var Declared = cluster.Backend{
	Name:    "ssh",
	Systems: cluster.SystemNames(),
}

// Packages are the Debian packages a host needs beyond its servers': the
// SSH server (scripts/deps.sh installs it on the harness's host, whose
// network namespaces are the tests' hosts).
var Packages = []string{"openssh-server"}

// readyTimeout bounds the wait for a node to answer after its start.
const readyTimeout = 30 * time.Second

// clockTimeout bounds a change of a node's clock offset.
const clockTimeout = 10 * time.Second

// closeTimeout bounds the teardown of a cluster on its hosts.
const closeTimeout = 30 * time.Second

// ErrUnknownNode reports a node name the cluster does not have.
var ErrUnknownNode = errors.New("ssh: unknown node")

// ErrClosed reports a use of a cluster after Close.
var ErrClosed = errors.New("ssh: cluster closed")

// Option configures Start.
type Option func(*options)

type options struct {
	skewLib string
}

// WithClockSkewLibrary gives the path, on the harness, of the clock-skew
// preload library (libclockskew.so, built for the hosts' architecture and
// libc): Start copies it into the run's dir on each host and preloads it
// into every node whose system can be skewed. Without it the cluster's
// clocks cannot be skewed, and a spec that skews them is refused.
func WithClockSkewLibrary(path string) Option { return func(o *options) { o.skewLib = path } }

// NewBackend returns the ssh backend that runs its clusters on the
// inventory's hosts, whose workers' links listen on the inventory's
// harness address (cluster.Backend.LinkAddress).
func NewBackend(inv Inventory, opts ...Option) cluster.Backend {
	b := Declared
	b.LinkAddress = inv.Harness
	b.Start = func(ctx context.Context, spec cluster.Spec, net *linknet.Network) (cluster.Cluster, error) {
		c, err := Start(ctx, inv, spec, net, opts...)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
	return b
}

// Cluster is a running cluster on the inventory's hosts. Its methods are
// safe for concurrent use.
type Cluster struct {
	spec  cluster.Spec
	inv   Inventory
	net   *linknet.Network
	hosts []*conn // by the inventory's order; nil for a host no node runs on
	run   string  // the run's dir name on every host (runDirName)
	nodes []*node
	opts  options
	lib   []byte // the clock-skew library, copied to each host; nil for none
	peers bool   // its nodes dial one another: each host has the run's nftables table

	links     []string             // the node-to-node links this cluster made
	resets    hostResets           // the resets on the hosts and their watcher
	repl      *cluster.Replication // Redis: the roles and failovers
	stopRoles func()               // a Redis Cluster's: stops the watch of its roles

	mu     sync.Mutex
	closed bool
}

var runSeq atomic.Int64

// Start starts the cluster of spec on the inventory's hosts, waits until
// every node answers, and returns it. A spec the backend does not declare,
// or one that skews clocks without the clock-skew library, is refused
// (cluster.ErrUnavailable) before any host is reached. On error
// everything started so far is torn down.
func Start(ctx context.Context, inv Inventory, spec cluster.Spec, net *linknet.Network, opts ...Option) (*Cluster, error) {
	if err := Declared.Check(spec); err != nil {
		return nil, err
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if spec.ClockSkew && o.skewLib == "" {
		return nil, fmt.Errorf("%w: the ssh backend skews clocks only with the clock-skew library (WithClockSkewLibrary)", cluster.ErrUnavailable)
	}
	var lib []byte
	if o.skewLib != "" {
		var err error
		if lib, err = os.ReadFile(o.skewLib); err != nil {
			return nil, fmt.Errorf("ssh: clock-skew library: %w", err)
		}
	}
	if err := inv.Check(); err != nil {
		return nil, fmt.Errorf("ssh: inventory: %w", err)
	}
	layout, err := cluster.Layout(spec)
	if err != nil {
		return nil, fmt.Errorf("ssh: %w", err)
	}
	if top, _ := cluster.TopologyOf(spec); top.PeerLinks && len(layout) > len(inv.Hosts) {
		// The cuts between nodes tell them apart by their hosts' addresses.
		return nil, fmt.Errorf("%w: %s/%s has %d nodes that dial one another, and the inventory %d hosts: the ssh backend needs a host per node", cluster.ErrUnavailable, spec.System, spec.Topology, len(layout), len(inv.Hosts))
	}
	top, err := cluster.TopologyOf(spec)
	if err != nil {
		return nil, fmt.Errorf("ssh: %w", err)
	}
	c := &Cluster{spec: spec, inv: inv, net: net, hosts: make([]*conn, len(inv.Hosts)), opts: o, lib: lib, peers: top.PeerLinks}
	c.run = runDirName(harnessName(), os.Getpid(), runSeq.Add(1))
	c.resets.stop = make(chan struct{})
	// The ends on the hosts of the workers' connections a reset answered
	// on the harness.
	net.SetEndCloser(c)
	if err := c.connect(ctx, len(layout)); err != nil {
		c.Close()
		return nil, err
	}
	for i, l := range layout {
		if err := c.addNode(i, l); err != nil {
			c.Close()
			return nil, err
		}
	}
	wire := map[string]func() error{cluster.Etcd: c.wireEtcd, cluster.ZooKeeper: c.wireZooKeeper}[spec.System]
	if wire == nil {
		wire = c.wireRedis
	}
	if err := wire(); err != nil {
		c.Close()
		return nil, err
	}
	if err := c.startAll(ctx); err != nil {
		c.Close()
		return nil, err
	}
	if err := c.formRedisCluster(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// connect dials, in parallel, the hosts that nodes nodes run on, removes
// what dead harnesses left there (sweep) and makes the run's dir on each.
func (c *Cluster) connect(ctx context.Context, nodes int) error {
	var wg sync.WaitGroup
	errs := make([]error, len(c.hosts))
	for i := range min(nodes, len(c.hosts)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := dial(ctx, c.inv.Hosts[i])
			if err != nil {
				errs[i] = err
				return
			}
			c.hosts[i] = conn
			if errs[i] = sweep(ctx, conn); errs[i] != nil {
				return
			}
			if _, errs[i] = conn.run(ctx, "mkdir -p "+quote(c.runDir(conn)), nil); errs[i] != nil {
				return
			}
			if c.peers {
				if errs[i] = c.makeTable(ctx, conn); errs[i] != nil {
					return
				}
			}
			if c.lib == nil {
				return
			}
			lib := quote(c.libPath(conn))
			_, errs[i] = conn.run(ctx, "cat > "+lib+" && chmod 755 "+lib, bytes.NewReader(c.lib))
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// startAll starts every node and waits until each answers: every data
// node in parallel, then, once the replicas replicate, the sentinels in
// parallel, which so find the replicas in their first INFO of the primary.
func (c *Cluster) startAll(ctx context.Context) error {
	var data, sentinels []*node
	for _, n := range c.nodes {
		if n.role == cluster.RoleSentinel {
			sentinels = append(sentinels, n)
		} else {
			data = append(data, n)
		}
	}
	if err := startNodes(ctx, data); err != nil || len(sentinels) == 0 {
		return err
	}
	if err := c.waitReplicating(ctx); err != nil {
		return err
	}
	return startNodes(ctx, sentinels)
}

// startNodes sets up and starts the nodes and waits, in parallel, until
// each answers, then fetches its log: a node's log is in the spec's log
// dir from the cluster's start, and whole after Close; a restart (Start)
// does not fetch it, which would lengthen the fault.
func startNodes(ctx context.Context, nodes []*node) error {
	var wg sync.WaitGroup
	errs := make([]error, len(nodes))
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = n.setup(ctx); errs[i] == nil {
				errs[i] = n.start(ctx)
			}
			if errs[i] == nil {
				errs[i] = n.fetchLog(ctx)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// runDir returns the run's dir on the connection's host.
func (c *Cluster) runDir(conn *conn) string { return conn.host.dir() + "/" + c.run }

// libPath returns the clock-skew library's path on the connection's host.
func (c *Cluster) libPath(conn *conn) string { return c.runDir(conn) + "/libclockskew.so" }

// System returns the system the cluster runs.
func (c *Cluster) System() string { return c.spec.System }

// Nodes returns the nodes, each at its host's address, with their current
// roles.
func (c *Cluster) Nodes() []cluster.Node {
	if c.repl != nil {
		return c.repl.Nodes()
	}
	out := make([]cluster.Node, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = cluster.Node{Name: n.name, Role: n.role, Addr: n.addr}
	}
	return out
}

// Host returns the name of the inventory's host the node runs on, or "".
func (c *Cluster) Host(node string) string {
	for _, n := range c.nodes {
		if n.name == node {
			return n.conn.host.Name
		}
	}
	return ""
}

// Kill kills the node's server (SIGKILL) and waits until it is gone.
func (c *Cluster) Kill(ctx context.Context, node string) error {
	n, err := c.node(node)
	if err != nil {
		return err
	}
	return n.kill(ctx)
}

// Start starts the node's server again with its dir and waits until it
// answers.
func (c *Cluster) Start(ctx context.Context, node string) error {
	n, err := c.node(node)
	if err != nil {
		return err
	}
	return n.start(ctx)
}

// Pause stops the node's server (SIGSTOP).
func (c *Cluster) Pause(ctx context.Context, node string) error {
	n, err := c.node(node)
	if err != nil {
		return err
	}
	return n.signal(ctx, "STOP")
}

// Resume continues the node's server (SIGCONT).
func (c *Cluster) Resume(ctx context.Context, node string) error {
	n, err := c.node(node)
	if err != nil {
		return err
	}
	return n.signal(ctx, "CONT")
}

// SetClockOffset offsets the node's wall clock by offset (zero restores
// the true time) by rewriting its clock file on its host in place; the
// host's own clock is never touched. It reports cluster.ErrUnavailable for
// a system whose clocks cannot be skewed and for a cluster started without
// the clock-skew library.
func (c *Cluster) SetClockOffset(node string, offset time.Duration) error {
	n, err := c.node(node)
	if err != nil {
		return err
	}
	if err := cluster.ClockSkewError(c.spec.System, node); err != nil {
		return err
	}
	if n.clock == "" {
		return fmt.Errorf("%w: clock of %s: the cluster was started without the clock-skew library", cluster.ErrUnavailable, node)
	}
	ctx, cancel := context.WithTimeout(context.Background(), clockTimeout)
	defer cancel()
	return n.writeClock(ctx, offset)
}

// Primary returns the node that serves as primary (cluster.Replication);
// cluster.ErrUnavailable on a topology without replicas.
func (c *Cluster) Primary(ctx context.Context) (string, error) {
	if c.repl == nil {
		return "", fmt.Errorf("%w: %s has no replicas to fail over to", cluster.ErrUnavailable, c.spec.System)
	}
	return c.repl.Primary(ctx)
}

// Promote makes node the primary (cluster.Replication): REPLICAOF NO ONE
// to it, and the other running replicas follow it through their links; in
// the sentinel topology the sentinels' failover to it; in a Redis Cluster
// CLUSTER FAILOVER FORCE to it, after which its old master follows it.
func (c *Cluster) Promote(ctx context.Context, node string) error {
	if _, err := c.node(node); err != nil {
		return err
	}
	if c.repl == nil {
		return fmt.Errorf("%w: %s has no replicas to fail over to", cluster.ErrUnavailable, c.spec.System)
	}
	return c.repl.Promote(ctx, node)
}

// Follow makes node a replica of primary through the link
// "node->primary", made when missing (cluster.Replication).
func (c *Cluster) Follow(ctx context.Context, node, primary string) error {
	if _, err := c.node(node); err != nil {
		return err
	}
	if c.repl == nil {
		return fmt.Errorf("%w: %s has no replicas", cluster.ErrUnavailable, c.spec.System)
	}
	return c.repl.Follow(ctx, node, primary)
}

// Close kills every node, fetches its log into the spec's log dir, removes
// the run's dir on every host and closes the connections. It is safe to
// call more than once; it does not read a caller's context, so an
// interrupted run still tears down, within closeTimeout.
func (c *Cluster) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	stop := c.stopRoles
	c.mu.Unlock()
	if stop != nil {
		stop()
	}
	c.net.SetEndCloser(nil)
	c.stopResets()
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, len(c.nodes)+len(c.hosts))
	for i, n := range c.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = n.close(ctx)
		}()
	}
	wg.Wait()
	if err := c.net.RemoveExisting(c.links...); err != nil {
		errs = append(errs, err)
	}
	for i, conn := range c.hosts {
		if conn == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			script := "rm -rf " + quote(c.runDir(conn)) + "\nnft delete table ip " + tableName(c.run) + " 2>/dev/null; true"
			if _, err := conn.run(ctx, script, nil); err != nil {
				errs[len(c.nodes)+i] = err
			}
			conn.close()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// node returns the named node.
func (c *Cluster) node(name string) (*node, error) {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	for _, n := range c.nodes {
		if n.name == name {
			return n, nil
		}
	}
	return nil, fmt.Errorf("%w: %q", ErrUnknownNode, name)
}
