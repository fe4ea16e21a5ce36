// Package local runs a cluster's servers (redis-server, redis-sentinel,
// postgres, ZooKeeper, etcd, mariadbd) as child processes on free 127.0.0.1 ports. It
// owns their temp dirs, configs, logs, process lifetimes (start, kill,
// restart, pause) and wall-clock offsets, and it routes node-to-node traffic
// (replication, quorum, peers) through the linknet.Network so the nemesis can
// cut it.
//
// Every node runs in its own process group and gets SIGKILL if the harness
// dies (Pdeathsig, through package spawn); Close kills every group, resets clock offsets, removes the
// node-to-node links and deletes the temp dirs.
package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
)

// Compile-time checks of the abilities a local cluster has.
var (
	_ cluster.Cluster     = (*Cluster)(nil)
	_ cluster.Killer      = (*Cluster)(nil)
	_ cluster.Pauser      = (*Cluster)(nil)
	_ cluster.ClockSkewer = (*Cluster)(nil)
	_ cluster.Failoverer  = (*Cluster)(nil)
	_ interface {
		Follow(ctx context.Context, node, primary string) error
	} = (*Cluster)(nil)
)

// Backend declares the local backend: it runs every system.
var Backend = cluster.Backend{Name: "local", Systems: cluster.SystemNames(), Start: startBackend}

// startBackend is Start with the default options, returning the
// cluster.Cluster interface (nil on error).
func startBackend(ctx context.Context, spec cluster.Spec, net *linknet.Network) (cluster.Cluster, error) {
	c, err := Start(ctx, spec, net)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// ErrUnknownNode reports a node name the cluster does not have.
var ErrUnknownNode = errors.New("local: unknown node")

// ErrClosed reports a use of a cluster after Close.
var ErrClosed = errors.New("local: cluster closed")

// Option configures Start.
type Option func(*options)

type options struct {
	readyTimeout time.Duration
	skewLib      string
	noSkew       bool
	pgBinDir     string
}

// WithReadyTimeout sets how long Start (and a node restart) waits for a node
// to answer; the default is 30s. The context's deadline also applies.
func WithReadyTimeout(d time.Duration) Option { return func(o *options) { o.readyTimeout = d } }

// WithClockSkewLibrary sets the path of libclockskew.so; by default it is
// found as described at FindClockSkewLibrary.
func WithClockSkewLibrary(path string) Option { return func(o *options) { o.skewLib = path } }

// WithoutClockSkew runs the nodes without the clock-skew library; their
// SetClockOffset then reports cluster.ErrUnavailable. By default the library
// is preloaded into every node that can use it.
func WithoutClockSkew() Option { return func(o *options) { o.noSkew = true } }

// WithPostgresBinDir sets the directory of initdb and postgres; by default it
// is the newest /usr/lib/postgresql/<version>/bin, else the directory of
// initdb on PATH.
func WithPostgresBinDir(dir string) Option { return func(o *options) { o.pgBinDir = dir } }

// Cluster is a running local cluster. Its methods are safe for concurrent use.
type Cluster struct {
	spec  cluster.Spec
	net   *linknet.Network
	opts  options
	root  string // temp dir holding every node's dir
	nodes []*node

	skewLib string // "" when clocks cannot be skewed
	skewErr error  // why not
	noSkew  string // why the system's clocks cannot be skewed (cluster.SystemInfo.NoClockSkew)

	links []string // node-to-node links this cluster created

	repl *cluster.Replication // Redis: the roles and failovers; nil otherwise

	clusterPorts map[string]*clusterPorts // Redis Cluster: each node's bus and announced addresses
	stopRoles    func()                   // Redis Cluster: stops the watch of the roles

	mu     sync.Mutex
	closed bool
}

// Start starts the cluster described by spec, waits until every node answers,
// and returns it. Node-to-node links go through net. On error everything
// started so far is torn down.
func Start(ctx context.Context, spec cluster.Spec, net *linknet.Network, opts ...Option) (*Cluster, error) {
	o := options{readyTimeout: 30 * time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	if net == nil {
		return nil, errors.New("local: Start needs a network")
	}
	root, err := cluster.TempDir(spec.System)
	if err != nil {
		return nil, fmt.Errorf("local: temp dir: %w", err)
	}
	// Nodes that run as an unprivileged user must be able to reach their dir.
	if err := os.Chmod(root, 0o755); err != nil {
		os.RemoveAll(root)
		return nil, fmt.Errorf("local: temp dir: %w", err)
	}
	c := &Cluster{spec: spec, net: net, opts: o, root: root}
	if spec.LogDir != "" {
		if err := os.MkdirAll(spec.LogDir, 0o755); err != nil {
			os.RemoveAll(root)
			return nil, fmt.Errorf("local: log dir: %w", err)
		}
	}
	if o.noSkew {
		c.skewErr = errors.New("clock skew disabled by WithoutClockSkew")
	} else if o.skewLib != "" {
		c.skewLib = o.skewLib
	} else {
		c.skewLib, c.skewErr = FindClockSkewLibrary(root)
	}
	info, err := cluster.LookupSystem(spec.System)
	if err != nil {
		os.RemoveAll(root)
		return nil, fmt.Errorf("local: %w", err)
	}
	c.noSkew = info.NoClockSkew
	if spec.ClockSkew && c.skewLib == "" && c.noSkew == "" {
		os.RemoveAll(root)
		return nil, fmt.Errorf("local: the scenario skews node clocks, which needs the clock-skew library: %w", c.skewErr)
	}

	var setup error
	switch spec.System {
	case cluster.Redis:
		if spec.Topology == cluster.TopologyCluster {
			setup = c.setupRedisCluster()
		} else {
			setup = c.setupRedis()
		}
	case cluster.Postgres:
		setup = c.setupPostgres()
	case cluster.ZooKeeper:
		setup = c.setupZooKeeper()
	case cluster.Etcd:
		setup = c.setupEtcd()
	case cluster.MariaDB:
		setup = c.setupMariaDB()
	default:
		setup = fmt.Errorf("local: unknown system %q", spec.System)
	}
	if setup == nil {
		setup = c.launchAll(ctx)
	}
	if setup == nil && c.clusterPorts != nil {
		setup = c.formRedisCluster(ctx)
	}
	if setup != nil {
		if cerr := c.Close(); cerr != nil {
			setup = errors.Join(setup, cerr)
		}
		return nil, setup
	}
	return c, nil
}

// System returns the system the cluster runs.
func (c *Cluster) System() string { return c.spec.System }

// Nodes returns the nodes in cluster.Layout order: n1, n2, ... (then
// sentinels s1, s2, ...). A Redis node's Role is its current one
// (cluster.Replication: a promoted replica is a primary); "" for ZooKeeper
// and etcd peers; "primary" for PostgreSQL and MariaDB.
func (c *Cluster) Nodes() []cluster.Node {
	if c.repl != nil {
		return c.repl.Nodes()
	}
	return c.infos()
}

// infos returns the nodes as package cluster describes them, with the
// roles they started with.
func (c *Cluster) infos() []cluster.Node {
	out := make([]cluster.Node, 0, len(c.nodes))
	for _, n := range c.nodes {
		out = append(out, n.info())
	}
	return out
}

// Dir returns the temp dir of the node (its data and config), "" for an
// unknown node.
func (c *Cluster) Dir(node string) string {
	if n, err := c.node(node); err == nil {
		return n.dir
	}
	return ""
}

// LogPath returns the path of the node's log file, "" for an unknown node.
func (c *Cluster) LogPath(node string) string {
	if n, err := c.node(node); err == nil {
		return n.logPath
	}
	return ""
}

// Pids returns the process id of every running node (each is also the id of
// the node's process group).
func (c *Cluster) Pids() map[string]int {
	out := map[string]int{}
	for _, n := range c.nodes {
		if pid := n.pid(); pid > 0 {
			out[n.name] = pid
		}
	}
	return out
}

// Kill kills the node's processes with SIGKILL and waits until they are gone.
func (c *Cluster) Kill(ctx context.Context, node string) error {
	n, err := c.node(node)
	if err != nil {
		return err
	}
	return n.kill(ctx)
}

// Start restarts a killed node with its data dir, port and config, and waits
// until it answers. Starting a running node does nothing.
func (c *Cluster) Start(ctx context.Context, node string) error {
	n, err := c.node(node)
	if err != nil {
		return err
	}
	if n.running() {
		return nil
	}
	if err := n.launch(); err != nil {
		return err
	}
	return n.waitReady(ctx, c.opts.readyTimeout)
}

// Pause stops the node's processes with SIGSTOP. A paused node is resumed
// before it is killed or closed.
func (c *Cluster) Pause(ctx context.Context, node string) error {
	n, err := c.node(node)
	if err != nil {
		return err
	}
	return n.pause()
}

// Resume continues the node's processes with SIGCONT.
func (c *Cluster) Resume(ctx context.Context, node string) error {
	n, err := c.node(node)
	if err != nil {
		return err
	}
	return n.resume()
}

// SetClockOffset offsets the node's wall clock by offset (zero restores the
// true time) by rewriting the node's clock file in place. It reports
// cluster.ErrUnavailable for a system whose clocks cannot be skewed
// (cluster.SystemInfo.NoClockSkew) and when the clock-skew library was not
// found.
func (c *Cluster) SetClockOffset(node string, offset time.Duration) error {
	n, err := c.node(node)
	if err != nil {
		return err
	}
	if err := cluster.ClockSkewError(c.spec.System, node); err != nil {
		return err
	}
	if c.skewLib == "" {
		return fmt.Errorf("%w: clock of %s: %v", cluster.ErrUnavailable, node, c.skewErr)
	}
	return cluster.WriteClockOffset(n.clockPath, offset)
}

// Close kills every node, resets the clock offsets, removes the node-to-node
// links and the temp dirs. It is safe to call more than once.
func (c *Cluster) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	stopRoles := c.stopRoles
	c.mu.Unlock()
	if stopRoles != nil {
		stopRoles()
	}

	var errs []error
	var wg sync.WaitGroup
	var emu sync.Mutex
	for _, n := range c.nodes {
		n.mu.Lock()
		n.closed = true
		n.mu.Unlock()
		if n.clockPath != "" {
			if _, err := os.Stat(n.clockPath); err == nil {
				if err := cluster.WriteClockOffset(n.clockPath, 0); err != nil {
					errs = append(errs, err)
				}
			}
		}
		wg.Add(1)
		go func(n *node) {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := n.kill(ctx); err != nil {
				emu.Lock()
				errs = append(errs, err)
				emu.Unlock()
			}
		}(n)
	}
	wg.Wait()
	if err := c.net.RemoveExisting(c.links...); err != nil {
		errs = append(errs, err)
	}
	if err := os.RemoveAll(c.root); err != nil {
		errs = append(errs, fmt.Errorf("local: remove %s: %w", c.root, err))
	}
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

// addNode creates a node with its dir, log path, port and clock file.
func (c *Cluster) addNode(name, role string) (*node, error) {
	dir := filepath.Join(c.root, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("local: node dir: %w", err)
	}
	port, err := cluster.FreePort()
	if err != nil {
		return nil, err
	}
	logDir := c.spec.LogDir
	if logDir == "" {
		logDir = dir
	}
	n := &node{
		name: name, role: role, port: port, dir: dir,
		logPath: filepath.Join(logDir, name+".log"),
	}
	if c.skewLib != "" && c.noSkew == "" {
		n.clockPath = filepath.Join(dir, "clock")
		if err := cluster.CreateClockFile(n.clockPath); err != nil {
			return nil, err
		}
		n.skewLib = c.skewLib
	}
	c.nodes = append(c.nodes, n)
	return n, nil
}

// link creates the node-to-node link from -> to, forwarding to upstream.
func (c *Cluster) link(from, to, upstream string) (string, error) {
	name := linknet.Name(from, to)
	addr, err := c.net.Link(name, upstream)
	if err != nil {
		return "", fmt.Errorf("local: %w", err)
	}
	c.links = append(c.links, name)
	return addr, nil
}

// peerLink creates the node-to-node link from -> to of a topology: one per
// source, carrying the connections of group gid, where its peers all dial
// one advertised address (cluster.Topology.OneAdvertisedAddress), and one
// per pair, an address of its own, otherwise.
func (c *Cluster) peerLink(top cluster.Topology, from, to string, gid int, upstream string) (string, error) {
	if top.OneAdvertisedAddress {
		return c.linkFrom(from, to, gid, upstream)
	}
	return c.link(from, to, upstream)
}

// linkFrom creates the per-source node-to-node link from -> to, carrying
// the connections that the processes of group gid open to the address it
// shares with the other links to upstream (linknet.Network.LinkFrom).
func (c *Cluster) linkFrom(from, to string, gid int, upstream string) (string, error) {
	name := linknet.Name(from, to)
	addr, err := c.net.LinkFrom(name, gid, upstream)
	if err != nil {
		return "", fmt.Errorf("local: %w", err)
	}
	c.links = append(c.links, name)
	return addr, nil
}

// launchAll starts every node's process and waits, in parallel, until all
// of them answer.
func (c *Cluster) launchAll(ctx context.Context) error {
	// Sentinels start once the data nodes serve and replicate: they find
	// the replicas in their first INFO of the primary, not 10s later.
	var first, second []*node
	for _, n := range c.nodes {
		if n.role == cluster.RoleSentinel {
			second = append(second, n)
		} else {
			first = append(first, n)
		}
	}
	if err := c.launch(ctx, first); err != nil {
		return err
	}
	if len(second) == 0 {
		return nil
	}
	if err := c.waitReplicating(ctx); err != nil {
		return err
	}
	return c.launch(ctx, second)
}

// launch starts the nodes and waits, in parallel, until all of them answer.
func (c *Cluster) launch(ctx context.Context, nodes []*node) error {
	for _, n := range nodes {
		if err := n.launch(); err != nil {
			return err
		}
	}
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = n.waitReady(ctx, c.opts.readyTimeout)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
