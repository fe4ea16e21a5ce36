// Package docker is the container backend of cluster: it runs every node of a
// cluster as a container of the jepsen-lite node image (built locally by
// images/build.sh, see `make images`) through testcontainers-go, on a private
// Docker network per run, with each node's port published on 127.0.0.1 only,
// so that the harness's proxies stay the only way clients reach the nodes.
//
// It owns the containers and networks it creates: everything carries the
// label RunLabel=<run id>, and Close removes all of it, also when Start fails
// halfway. Nodes can be killed and started again (the container keeps its
// data), paused (docker pause), and have their wall clock skewed through the
// clock-skew preload library installed in the image, whose offset file lives
// in a host directory bind-mounted into every container.
//
// Node-to-node traffic goes through the harness's cluster.Network like every
// other link, although the proxies listen on the host's loopback only: a node
// reaches data node nK at 127.0.0.1:16000+K inside its own container, where
// the harness listens (in the container's network namespace, which needs
// CAP_SYS_ADMIN) and pipes to the link's proxy; see relay.go. In the
// "primary-replica" topology replica nJ uses the link "nJ->nK"; in the
// "sentinel" topology every replica and sentinel uses the shared link
// "peers->nK", as cluster/local does. Sentinels talk to each other directly
// over the run's Docker network, as local sentinels do over loopback.
package docker

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	mobynet "github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	tcnetwork "github.com/testcontainers/testcontainers-go/network"

	"github.com/jepsen-lite/jepsen-lite/cluster"
)

// DefaultImage is the node image used when neither WithImage nor the
// ImageEnv environment variable names another.
const DefaultImage = "jepsen-lite/node:latest"

// ImageEnv is the environment variable that names the node image (for
// instance a published one) when WithImage is not given.
const ImageEnv = "JEPSEN_LITE_NODE_IMAGE"

// Labels put on every container and network this package creates.
const (
	RunLabel  = "jepsen-lite.run"  // the run id
	NodeLabel = "jepsen-lite.node" // the node name, on containers
)

// ryukEnv disables testcontainers' reaper container, which would need an
// image from a registry. Only the exact value "true" disables it.
const ryukEnv = "TESTCONTAINERS_RYUK_DISABLED"

// Paths inside the node image.
const (
	clockSkewLibrary = "/usr/local/lib/libclockskew.so"
	clockDir         = "/jepsen/clock"
	logDir           = "/jepsen/log"
	dataDir          = "/data"
	confDir          = "/jepsen/conf"
	redisPort        = "6379/tcp"
	sentinelPort     = "26379/tcp"
	// relayPortBase + i is the port, on a container's loopback, of the relay
	// to node n<i>.
	relayPortBase = 16000
)

// Roles of Redis nodes.
const (
	RolePrimary  = "primary"
	RoleReplica  = "replica"
	RoleSentinel = "sentinel"
)

// SentinelMaster is the name the sentinels monitor the primary under.
const SentinelMaster = "mymaster"

// PeersLink is the "from" end of the shared links through which, in the
// sentinel topology, every container reaches a data node ("peers->n1"):
// replicas and sentinels learn each other's addresses from the servers, so
// per-pair links cannot be kept there.
const PeersLink = "peers"

// The sentinel topology: three sentinels, with short timings so a failover
// happens within a test run.
const (
	sentinels               = 3
	sentinelDownAfter       = time.Second
	sentinelFailoverTimeout = 3 * time.Second
)

// Topologies of Redis this backend runs.
const (
	TopologyMasters        = "masters"
	TopologyPrimaryReplica = "primary-replica"
	TopologySentinel       = "sentinel"
)

// Errors of this package, to be tested with errors.Is.
var (
	// ErrNoEngine reports that no Docker engine answers.
	ErrNoEngine = errors.New("docker: no working Docker engine")
	// ErrNoImage reports that the node image is not present in the local
	// engine (it is never pulled: build it with `make images`).
	ErrNoImage = errors.New("docker: node image not found locally")
	// ErrUnknownNode reports a node name the cluster does not have.
	ErrUnknownNode = errors.New("docker: no such node")
	// ErrClosed reports a use of a cluster after Close.
	ErrClosed = errors.New("docker: cluster closed")
)

// Option configures Start.
type Option func(*options)

type options struct {
	image        string
	runID        string
	startTimeout time.Duration
	redisArgs    []string
}

// WithImage sets the node image. The default is $JEPSEN_LITE_NODE_IMAGE, or
// DefaultImage when that is unset. The image must exist in the local engine.
func WithImage(image string) Option { return func(o *options) { o.image = image } }

// WithRunID sets the id that labels and names everything the cluster creates.
// The default is a fresh random id.
func WithRunID(id string) Option { return func(o *options) { o.runID = id } }

// WithStartTimeout bounds how long a node may take to answer PING after its
// container starts. The default is 30 seconds.
func WithStartTimeout(d time.Duration) Option { return func(o *options) { o.startTimeout = d } }

// WithRedisArgs appends arguments to every node's redis-server command line
// (for instance "--maxmemory", "64mb"). The default is none.
func WithRedisArgs(args ...string) Option {
	return func(o *options) { o.redisArgs = append(o.redisArgs, args...) }
}

// Cluster is a running set of node containers. Its methods are safe for
// concurrent use.
type Cluster struct {
	spec    cluster.Spec
	image   string
	runID   string
	timeout time.Duration
	extra   []string // appended to redis-server's arguments
	docker  *testcontainers.DockerClient
	network *testcontainers.DockerNetwork
	dir     string // host temp dir: clock files, and logs when spec.LogDir is empty
	logDir  string
	nodes   []*node
	net     *cluster.Network

	mu      sync.Mutex
	closed  bool
	links   []string // node-to-node links this cluster created
	primary string   // replicated topologies: the node last made primary
}

// node is one container of the cluster.
type node struct {
	cluster.Node
	container *testcontainers.DockerContainer
	index     int // n<index>
	hostPort  int
	clock     *os.File          // the offset file, mapped by the node's processes
	relays    map[string]*relay // by target node; guarded by Cluster.mu
	// killedRelays are the targets of the relays closed by Kill, reopened
	// by Start in the container's new network namespace; guarded by
	// Cluster.mu.
	killedRelays []string
}

var (
	_ cluster.Cluster     = (*Cluster)(nil)
	_ cluster.Killer      = (*Cluster)(nil)
	_ cluster.Pauser      = (*Cluster)(nil)
	_ cluster.ClockSkewer = (*Cluster)(nil)
	_ cluster.Failoverer  = (*Cluster)(nil)
)

// Start starts the cluster described by spec as containers and waits until
// every node answers. It runs Redis in three topologies, as cluster/local
// does: "masters" (spec.Nodes independent redis-server nodes, each a
// primary), "primary-replica" (n1 the primary, n2..nN its replicas, at least
// one, replicating through the links "nJ->n1" of network) and "sentinel"
// (primary-replica watched by three sentinels s1..s3; replicas and sentinels
// reach data node nK through the shared link "peers->nK"). Other systems and
// topologies return an error wrapping cluster.ErrUnavailable. Masters make
// no links, so network may be nil for them. On error, everything Start
// created is removed.
func Start(ctx context.Context, spec cluster.Spec, network *cluster.Network, opts ...Option) (*Cluster, error) {
	o := options{image: os.Getenv(ImageEnv), startTimeout: 30 * time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	if o.image == "" {
		o.image = DefaultImage
	}
	if o.runID == "" {
		o.runID = strings.ToLower(rand.Text()[:12])
	}
	if err := checkSpec(spec); err != nil {
		return nil, err
	}
	if (spec.Topology == TopologyPrimaryReplica || spec.Topology == TopologySentinel) && network == nil {
		return nil, fmt.Errorf("docker: the %s topology needs a network for its node-to-node links", spec.Topology)
	}
	disableReaper()

	cli, err := Engine(ctx)
	if err != nil {
		return nil, err
	}
	if err := checkImage(ctx, cli, o.image); err != nil {
		_ = cli.Close()
		return nil, err
	}

	c := &Cluster{spec: spec, image: o.image, runID: o.runID, timeout: o.startTimeout, extra: o.redisArgs, docker: cli, net: network}
	if err := c.create(ctx); err != nil {
		return nil, errors.Join(err, c.Close())
	}
	return c, nil
}

// Backend is Start with the default options, returning the cluster.Cluster
// interface (nil on error), as a runner's backend function.
func Backend(ctx context.Context, spec cluster.Spec, network *cluster.Network) (cluster.Cluster, error) {
	c, err := Start(ctx, spec, network)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Engine returns a client of the local Docker engine, or an error wrapping
// ErrNoEngine when none answers.
func Engine(ctx context.Context) (*testcontainers.DockerClient, error) {
	disableReaper()
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoEngine, err)
	}
	if _, err := cli.Ping(ctx, client.PingOptions{}); err != nil {
		_ = cli.Close()
		return nil, fmt.Errorf("%w: %w", ErrNoEngine, err)
	}
	return cli, nil
}

// ImageName returns the node image Start uses without WithImage.
func ImageName() string {
	if img := os.Getenv(ImageEnv); img != "" {
		return img
	}
	return DefaultImage
}

// CheckImage returns nil when the image exists in the local engine, and an
// error wrapping ErrNoImage when it does not.
func CheckImage(ctx context.Context, cli *testcontainers.DockerClient, image string) error {
	return checkImage(ctx, cli, image)
}

func checkImage(ctx context.Context, cli *testcontainers.DockerClient, image string) error {
	if _, err := cli.ImageInspect(ctx, image); err != nil {
		return fmt.Errorf("%w: %s (build it with `make images`): %w", ErrNoImage, image, err)
	}
	return nil
}

var quietOnce sync.Once

// disableReaper turns testcontainers' reaper off unless the user chose, and
// silences testcontainers' process-wide default logger (its banner and
// network messages); this package reports through its errors.
func disableReaper() {
	if _, set := os.LookupEnv(ryukEnv); !set {
		_ = os.Setenv(ryukEnv, "true")
	}
	quietOnce.Do(func() { tclog.SetDefault(tclog.NewNoopLogger()) })
}

func checkSpec(spec cluster.Spec) error {
	if spec.System != cluster.Redis {
		return fmt.Errorf("docker: system %q: %w (the docker backend runs redis)", spec.System, cluster.ErrUnavailable)
	}
	switch spec.Topology {
	case "", TopologyMasters, TopologyPrimaryReplica, TopologySentinel:
	default:
		return fmt.Errorf("docker: redis topology %q: %w (the docker backend runs %s, %s and %s)", spec.Topology, cluster.ErrUnavailable, TopologyMasters, TopologyPrimaryReplica, TopologySentinel)
	}
	if spec.Nodes < 1 {
		return fmt.Errorf("docker: a cluster needs at least one node, got %d", spec.Nodes)
	}
	return nil
}

// labels returns the labels of everything the run creates.
func (c *Cluster) labels() map[string]string { return map[string]string{RunLabel: c.runID} }

// create makes the run's directory, network and containers.
func (c *Cluster) create(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "jepsen-lite-docker-")
	if err != nil {
		return fmt.Errorf("docker: %w", err)
	}
	c.dir = dir
	if err := os.Mkdir(filepath.Join(dir, "clock"), 0o755); err != nil {
		return fmt.Errorf("docker: %w", err)
	}
	c.logDir = c.spec.LogDir
	if c.logDir == "" {
		c.logDir = filepath.Join(dir, "log")
	}
	if c.logDir, err = filepath.Abs(c.logDir); err != nil {
		return fmt.Errorf("docker: %w", err)
	}
	if err := os.MkdirAll(c.logDir, 0o755); err != nil {
		return fmt.Errorf("docker: %w", err)
	}

	nw, err := tcnetwork.New(ctx, tcnetwork.WithLabels(c.labels()))
	if err != nil {
		return fmt.Errorf("docker: create network: %w", err)
	}
	c.network = nw

	data := c.dataNodes()
	for i := range data {
		if err := c.addNode("n"+strconv.Itoa(i+1), c.initialRole(i), i+1); err != nil {
			return err
		}
	}
	if c.spec.Topology == TopologySentinel {
		for i := range sentinels {
			if err := c.addNode("s"+strconv.Itoa(i+1), RoleSentinel, 0); err != nil {
				return err
			}
		}
	}
	if c.replicated() {
		c.primary = c.nodes[0].Name
	}

	// Containers start concurrently: most of the time is the engine's. The
	// sentinels start once the servers they watch answer.
	if err := c.runAll(ctx, c.nodes[:data]); err != nil {
		return err
	}
	if err := c.runAll(ctx, c.nodes[data:]); err != nil {
		return err
	}
	for _, n := range c.nodes[data:] {
		if err := c.waitSentinel(ctx, n, data-1, sentinels-1); err != nil {
			return err
		}
	}
	return nil
}

// addNode adds a node with its clock file and host port; index is k for a
// data node nk, 0 for a sentinel.
func (c *Cluster) addNode(name, role string, index int) error {
	clock, err := newClockFile(filepath.Join(c.dir, "clock", name))
	if err != nil {
		return err
	}
	port, err := pickPort()
	if err != nil {
		_ = clock.Close()
		return err
	}
	c.nodes = append(c.nodes, &node{
		Node:     cluster.Node{Name: name, Role: role, Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))},
		index:    index,
		hostPort: port,
		clock:    clock,
		relays:   map[string]*relay{},
	})
	if role == RoleSentinel {
		confDir := filepath.Join(c.dir, "conf", name)
		if err := os.MkdirAll(confDir, 0o755); err != nil {
			return fmt.Errorf("docker: %w", err)
		}
		if err := os.WriteFile(filepath.Join(confDir, "sentinel.conf"), []byte(c.sentinelConf(name)), 0o644); err != nil {
			return fmt.Errorf("docker: sentinel config: %w", err)
		}
	}
	return nil
}

// runAll runs the nodes' containers concurrently.
// runAll starts the nodes' containers concurrently, then opens their relays
// (every node's address is final by then), then waits until they answer.
func (c *Cluster) runAll(ctx context.Context, nodes []*node) error {
	each := func(fn func(n *node) error) error {
		errs := make([]error, len(nodes))
		var wg sync.WaitGroup
		for i, n := range nodes {
			wg.Go(func() { errs[i] = fn(n) })
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	if err := each(func(n *node) error { return c.runRetrying(ctx, n) }); err != nil {
		return err
	}
	for _, n := range nodes {
		for _, target := range c.initialRelays(n) {
			if err := c.openRelay(ctx, n, target); err != nil {
				return err
			}
		}
	}
	return each(func(n *node) error { return c.waitReady(ctx, n) })
}

// portAttempts is how many host ports a node tries: a free port found by
// freePort may be taken by another process before the engine binds it.
const portAttempts = 3

// runRetrying runs the node's container, on another host port when its port
// was taken meanwhile.
func (c *Cluster) runRetrying(ctx context.Context, n *node) error {
	for attempt := 1; ; attempt++ {
		err := c.run(ctx, n)
		if err == nil || attempt == portAttempts || !portTaken(err) {
			return err
		}
		c.mu.Lock()
		ctr := n.container
		n.container = nil
		c.mu.Unlock()
		if ctr != nil {
			if _, rerr := c.docker.ContainerRemove(ctx, ctr.ID, client.ContainerRemoveOptions{Force: true}); rerr != nil {
				return errors.Join(err, fmt.Errorf("docker: remove node %s: %w", n.Name, rerr))
			}
		}
		port, perr := pickPort()
		if perr != nil {
			return errors.Join(err, perr)
		}
		c.mu.Lock()
		n.hostPort = port
		n.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		c.mu.Unlock()
	}
}

// portTaken reports whether the engine failed to bind a published port.
func portTaken(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "port is already allocated") || strings.Contains(msg, "address already in use")
}

// run creates and starts the node's container.
func (c *Cluster) run(ctx context.Context, n *node) error {
	hostIP := netip.MustParseAddr("127.0.0.1")
	exposed, cmd := redisPort, c.redisArgs(n.Name, n.index-1)
	binds := []string{filepath.Join(c.dir, "clock") + ":" + clockDir, c.logDir + ":" + logDir}
	if n.Role == RoleSentinel {
		exposed, cmd = sentinelPort, []string{"redis-sentinel", confDir + "/sentinel.conf"}
		binds = append(binds, filepath.Join(c.dir, "conf", n.Name)+":"+confDir)
	}
	port := mobynet.MustParsePort(exposed)
	labels := c.labels()
	labels[NodeLabel] = n.Name
	ctr, err := testcontainers.Run(ctx, c.image,
		testcontainers.WithLogger(tclog.NewNoopLogger()),
		testcontainers.WithName("jepsen-lite-"+c.runID+"-"+n.Name),
		testcontainers.WithLabels(labels),
		testcontainers.WithEnv(map[string]string{
			"LD_PRELOAD":             clockSkewLibrary,
			"JEPSEN_LITE_CLOCK_FILE": clockDir + "/" + n.Name,
		}),
		testcontainers.WithCmd(cmd...),
		testcontainers.WithExposedPorts(exposed),
		testcontainers.WithConfigModifier(func(cfg *container.Config) { cfg.Hostname = n.Name }),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.PortBindings = mobynet.PortMap{port: {{HostIP: hostIP, HostPort: strconv.Itoa(n.hostPort)}}}
			hc.Binds = append(hc.Binds, binds...)
		}),
		tcnetwork.WithNetwork([]string{n.Name}, c.network),
	)
	if ctr != nil {
		c.mu.Lock()
		n.container = ctr
		c.mu.Unlock()
	}
	if err != nil {
		return fmt.Errorf("docker: start node %s: %w", n.Name, err)
	}
	return nil
}

// initialRelays returns the nodes n reaches through relays at start: in
// primary-replica a replica reaches the primary; in sentinel every node
// reaches every data node (replicas and sentinels learn the addresses of
// the others from the servers and the sentinels).
func (c *Cluster) initialRelays(n *node) []*node {
	switch {
	case c.spec.Topology == TopologySentinel:
		return c.nodes[:c.dataNodes()]
	case c.spec.Topology == TopologyPrimaryReplica && n.Role == RoleReplica:
		return c.nodes[:1]
	}
	return nil
}

// replicated reports whether the topology has replicas.
func (c *Cluster) replicated() bool {
	return c.spec.Topology == TopologyPrimaryReplica || c.spec.Topology == TopologySentinel
}

// linkName returns the name of the link node from uses to reach data node
// to: "from->to", or in the sentinel topology the shared "peers->to".
func (c *Cluster) linkName(from, to string) string {
	if c.spec.Topology == TopologySentinel {
		return cluster.LinkName(PeersLink, to)
	}
	return cluster.LinkName(from, to)
}

// sentinelConf returns a sentinel's config: it watches n1 through its relay,
// announces itself by its host name on the run's network (sentinels talk to
// each other directly, as on one host), and fails over fast.
func (c *Cluster) sentinelConf(name string) string {
	host, port, _ := net.SplitHostPort(relayAddr(c.nodes[0]))
	return strings.Join([]string{
		"port 26379",
		"bind 0.0.0.0",
		"protected-mode no",
		"daemonize no",
		"logfile " + logDir + "/" + name + ".log",
		"dir " + dataDir,
		"sentinel resolve-hostnames yes",
		"sentinel announce-ip " + name,
		"sentinel announce-port 26379",
		fmt.Sprintf("sentinel monitor %s %s %s 2", SentinelMaster, host, port),
		fmt.Sprintf("sentinel down-after-milliseconds %s %d", SentinelMaster, sentinelDownAfter.Milliseconds()),
		fmt.Sprintf("sentinel failover-timeout %s %d", SentinelMaster, sentinelFailoverTimeout.Milliseconds()),
		fmt.Sprintf("sentinel parallel-syncs %s 1", SentinelMaster),
	}, "\n") + "\n"
}

// dataNodes returns the number of redis-server nodes: spec.Nodes, and at
// least two (a primary and a replica) in the replicated topologies.
func (c *Cluster) dataNodes() int {
	if c.replicated() {
		return max(c.spec.Nodes, 2)
	}
	return c.spec.Nodes
}

// initialRole returns the role of the i-th data node (from 0) at start:
// every master is a primary; in the replicated topologies n1 is the primary.
func (c *Cluster) initialRole(i int) string {
	if c.replicated() && i > 0 {
		return RoleReplica
	}
	return RolePrimary
}

// relayAddr is where, inside a container, the relay to target listens.
func relayAddr(target *node) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(relayPortBase+target.index))
}

// openRelay makes the link from n to target (if new) and a relay to it
// inside n's container, replacing an older relay.
func (c *Cluster) openRelay(ctx context.Context, n, target *node) error {
	link := c.linkName(n.Name, target.Name)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.net.Addr(link) == "" {
		if _, err := c.net.Link(link, target.Addr); err != nil {
			return fmt.Errorf("docker: %w", err)
		}
		c.links = append(c.links, link)
	}
	inspect, err := c.docker.ContainerInspect(ctx, n.container.ID, client.ContainerInspectOptions{})
	if err != nil {
		return fmt.Errorf("docker: inspect node %s: %w", n.Name, err)
	}
	if inspect.Container.State == nil || inspect.Container.State.Pid == 0 {
		return fmt.Errorf("docker: node %s is not running", n.Name)
	}
	if old := n.relays[target.Name]; old != nil {
		_ = old.close()
		delete(n.relays, target.Name)
	}
	r, err := startRelay(inspect.Container.State.Pid, relayAddr(target), link, c.net)
	if err != nil {
		return fmt.Errorf("docker: link %s: %w", link, err)
	}
	n.relays[target.Name] = r
	return nil
}

// closeRelays closes the relays inside n's container and returns their
// targets.
func (c *Cluster) closeRelays(n *node) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var targets []string
	for t, r := range n.relays {
		_ = r.close()
		targets = append(targets, t)
	}
	clear(n.relays)
	return targets
}

// redisArgs returns the node's redis-server command line.
func (c *Cluster) redisArgs(name string, idx int) []string {
	args := []string{"redis-server",
		"--bind", "0.0.0.0", "--port", "6379", "--protected-mode", "no",
		"--dir", dataDir, "--logfile", logDir + "/" + name + ".log",
		"--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0", "--repl-ping-replica-period", "1",
	}
	if c.spec.Persistence {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		args = append(args, "--save", "", "--appendonly", "no")
	}
	if c.initialRole(idx) == RoleReplica {
		args = append(args, "--replicaof", "127.0.0.1", strconv.Itoa(relayPortBase+1))
	}
	if c.spec.Topology == TopologySentinel {
		// Sentinels reach a replica through their relay to it.
		args = append(args, "--replica-announce-ip", "127.0.0.1", "--replica-announce-port", strconv.Itoa(relayPortBase+idx+1))
	}
	return append(args, c.extra...)
}

// waitReady waits until the node answers PING on its published port.
func (c *Cluster) waitReady(ctx context.Context, n *node) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var last error
	for {
		if last = ping(ctx, n.Addr); last == nil {
			return nil
		}
		inspect, err := c.docker.ContainerInspect(ctx, n.container.ID, client.ContainerInspectOptions{})
		if err == nil && inspect.Container.State != nil && !inspect.Container.State.Running {
			return fmt.Errorf("docker: node %s exited with code %d before answering: %s",
				n.Name, inspect.Container.State.ExitCode, c.logTail(ctx, n))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("docker: node %s did not answer PING within %v: %w", n.Name, c.timeout, errors.Join(ctx.Err(), last))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// logTail returns the last lines the node's container wrote to its output,
// or where its log file is.
func (c *Cluster) logTail(ctx context.Context, n *node) string {
	logs, err := c.docker.ContainerLogs(ctx, n.container.ID, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Tail: "5"})
	if err == nil {
		defer logs.Close()
		var out strings.Builder
		if _, err := stdcopy.StdCopy(&out, &out, logs); err == nil && strings.TrimSpace(out.String()) != "" {
			return strings.Join(strings.Fields(out.String()), " ")
		}
	}
	return "see " + filepath.Join(c.logDir, n.Name+".log")
}

// ping sends one inline PING to a Redis server and expects +PONG. The Docker
// port forwarder accepts connections before the server listens, so a
// successful dial alone proves nothing.
func ping(ctx context.Context, addr string) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	deadline := time.Now().Add(time.Second)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = conn.SetDeadline(deadline)
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	buf := make([]byte, 7)
	n, err := conn.Read(buf)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(string(buf[:n]), "+PONG") {
		return fmt.Errorf("docker: unexpected reply %q to PING", buf[:n])
	}
	return nil
}

// pickPort is how a node's host port is chosen (freePort; tests replace it).
var pickPort = freePort

// freePort returns a port that was free on 127.0.0.1. The node keeps it for
// its whole life, so its address survives kill and start.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("docker: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// newClockFile creates a node's clock offset file holding a zero offset.
func newClockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("docker: create clock file: %w", err)
	}
	if _, err := f.WriteAt(make([]byte, 8), 0); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("docker: write clock file: %w", err)
	}
	return f, nil
}

// System returns cluster.Redis.
func (c *Cluster) System() string { return c.spec.System }

// RunID returns the id that labels everything the cluster created.
func (c *Cluster) RunID() string { return c.runID }

// Image returns the node image the cluster runs.
func (c *Cluster) Image() string { return c.image }

// Nodes returns the cluster's nodes; Addr is 127.0.0.1 and the node's
// published port, stable across Kill and Start.
func (c *Cluster) Nodes() []cluster.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]cluster.Node, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.Node
	}
	return out
}

// ContainerID returns the Docker id of the node's container.
func (c *Cluster) ContainerID(name string) (string, error) {
	n, err := c.node(name)
	if err != nil {
		return "", err
	}
	return n.container.ID, nil
}

func (c *Cluster) node(name string) (*node, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	for _, n := range c.nodes {
		if n.Name == name && n.container != nil {
			return n, nil
		}
	}
	return nil, fmt.Errorf("%w: %q", ErrUnknownNode, name)
}

// Kill kills the node's container with SIGKILL. A paused node is killed too.
func (c *Cluster) Kill(ctx context.Context, name string) error {
	n, err := c.node(name)
	if err != nil {
		return err
	}
	if _, err := c.docker.ContainerKill(ctx, n.container.ID, client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		return fmt.Errorf("docker: kill node %s: %w", name, err)
	}
	targets := c.closeRelays(n)
	c.mu.Lock()
	n.killedRelays = append(n.killedRelays, targets...)
	c.mu.Unlock()
	return nil
}

// Start starts a killed node's container again, with the data it kept, and
// waits until it answers on its old address.
func (c *Cluster) Start(ctx context.Context, name string) error {
	n, err := c.node(name)
	if err != nil {
		return err
	}
	if _, err := c.docker.ContainerStart(ctx, n.container.ID, client.ContainerStartOptions{}); err != nil {
		return fmt.Errorf("docker: start node %s: %w", name, err)
	}
	c.mu.Lock()
	targets := n.killedRelays
	n.killedRelays = nil
	c.mu.Unlock()
	for _, t := range targets {
		target, err := c.node(t)
		if err != nil {
			return err
		}
		if err := c.openRelay(ctx, n, target); err != nil {
			return err
		}
	}
	return c.waitReady(ctx, n)
}

// Pause freezes every process of the node's container (docker pause).
func (c *Cluster) Pause(ctx context.Context, name string) error {
	n, err := c.node(name)
	if err != nil {
		return err
	}
	if _, err := c.docker.ContainerPause(ctx, n.container.ID, client.ContainerPauseOptions{}); err != nil {
		return fmt.Errorf("docker: pause node %s: %w", name, err)
	}
	return nil
}

// Resume thaws a paused node (docker unpause).
func (c *Cluster) Resume(ctx context.Context, name string) error {
	n, err := c.node(name)
	if err != nil {
		return err
	}
	if _, err := c.docker.ContainerUnpause(ctx, n.container.ID, client.ContainerUnpauseOptions{}); err != nil {
		return fmt.Errorf("docker: resume node %s: %w", name, err)
	}
	return nil
}

// SetClockOffset sets the node's wall-clock offset by rewriting, in place,
// the offset file its processes have mapped: a signed nanosecond count in
// native byte order at offset 0.
func (c *Cluster) SetClockOffset(name string, offset time.Duration) error {
	n, err := c.node(name)
	if err != nil {
		return err
	}
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], uint64(offset.Nanoseconds()))
	if _, err := n.clock.WriteAt(b[:], 0); err != nil {
		return fmt.Errorf("docker: set clock of node %s: %w", name, err)
	}
	return nil
}

// Close removes every container and the network the cluster created (found
// by their run label, so also those of a Start that failed halfway), the
// node-to-node links it made and its temp dir. Node logs written to spec.LogDir stay. It is safe to call more
// than once.
func (c *Cluster) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()

	var errs []error
	for _, n := range c.nodes {
		c.closeRelays(n)
		if n.clock != nil {
			errs = append(errs, n.clock.Close())
		}
	}
	for _, l := range c.links {
		if err := c.net.Remove(l); err != nil && !errors.Is(err, cluster.ErrNoLink) && !errors.Is(err, cluster.ErrNetworkClosed) {
			errs = append(errs, fmt.Errorf("docker: %w", err))
		}
	}
	if c.docker != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		errs = append(errs, sweep(ctx, c.docker, c.runID))
		errs = append(errs, c.docker.Close())
	}
	if c.dir != "" {
		errs = append(errs, os.RemoveAll(c.dir))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("docker: close: %w", err)
	}
	return nil
}

// Sweep removes the containers and networks labelled with the run id, or,
// when runID is empty, those of every jepsen-lite run on the engine
// (including runs still going).
func Sweep(ctx context.Context, runID string) error {
	cli, err := Engine(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	return sweep(ctx, cli, runID)
}

func sweep(ctx context.Context, cli *testcontainers.DockerClient, runID string) error {
	label := RunLabel
	if runID != "" {
		label += "=" + runID
	}
	filter := make(client.Filters).Add("label", label)
	var errs []error
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: filter})
	if err != nil {
		return fmt.Errorf("docker: list containers: %w", err)
	}
	for _, ctr := range list.Items {
		if _, err := cli.ContainerRemove(ctx, ctr.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
			errs = append(errs, fmt.Errorf("docker: remove container %s: %w", ctr.ID, err))
		}
	}
	nets, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: filter})
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("docker: list networks: %w", err))...)
	}
	for _, nw := range nets.Items {
		if _, err := cli.NetworkRemove(ctx, nw.ID, client.NetworkRemoveOptions{}); err != nil {
			errs = append(errs, fmt.Errorf("docker: remove network %s: %w", nw.Name, err))
		}
	}
	return errors.Join(errs...)
}

// Primary returns the node the sentinels name as primary in the sentinel
// topology, the node last made primary (n1 at start) in the primary-replica
// topology, and an error wrapping cluster.ErrUnavailable in the masters
// topology.
func (c *Cluster) Primary(ctx context.Context) (string, error) {
	c.mu.Lock()
	closed, primary := c.closed, c.primary
	c.mu.Unlock()
	if closed {
		return "", ErrClosed
	}
	if primary == "" {
		return "", fmt.Errorf("docker: %s topology has no primary: %w", c.spec.Topology, cluster.ErrUnavailable)
	}
	if c.spec.Topology == TopologySentinel {
		return c.sentinelsPrimary(ctx)
	}
	return primary, nil
}

// Promote makes name the primary. In the sentinel topology it asks a
// sentinel to fail over to it (SENTINEL FAILOVER, the other replicas made
// ineligible meanwhile) and waits until the sentinels name it. Otherwise it
// sends REPLICAOF NO ONE to it and points every other replica at it through
// the links "nJ->name" (made on first use); replicas that are down are
// skipped, and the old primary is left running as a primary of its own
// (keeping its role in Nodes). A replica restarted after a promotion follows
// its command line again (n1).
func (c *Cluster) Promote(ctx context.Context, name string) error {
	n, err := c.node(name)
	if err != nil {
		return err
	}
	c.mu.Lock()
	old := c.primary
	c.mu.Unlock()
	if old == "" {
		return fmt.Errorf("docker: %s topology cannot fail over: %w", c.spec.Topology, cluster.ErrUnavailable)
	}
	if n.Role == RoleSentinel {
		return fmt.Errorf("docker: %s is a sentinel, not a data node", name)
	}
	if c.spec.Topology == TopologySentinel {
		return c.sentinelFailover(ctx, n)
	}
	if err := command(ctx, n.Addr, "REPLICAOF", "NO", "ONE"); err != nil {
		return fmt.Errorf("docker: promote %s: %w", name, err)
	}
	c.mu.Lock()
	for _, r := range c.nodes {
		if r.Name == name {
			r.Role = RolePrimary
		}
	}
	c.mu.Unlock()
	var errs []error
	for _, r := range c.nodes {
		if r.Name == name || r.Name == old || !c.running(ctx, r) {
			continue
		}
		if err := c.openRelay(ctx, r, n); err != nil {
			errs = append(errs, err)
			continue
		}
		host, port, _ := net.SplitHostPort(relayAddr(n))
		if err := command(ctx, r.Addr, "REPLICAOF", host, port); err != nil {
			errs = append(errs, fmt.Errorf("docker: point %s at %s: %w", r.Name, name, err))
		}
	}
	c.mu.Lock()
	c.primary = name
	c.mu.Unlock()
	return errors.Join(errs...)
}

// running reports whether the node's container runs (paused counts).
func (c *Cluster) running(ctx context.Context, n *node) bool {
	inspect, err := c.docker.ContainerInspect(ctx, n.container.ID, client.ContainerInspectOptions{})
	return err == nil && inspect.Container.State != nil && inspect.Container.State.Running
}

// command sends one command to a Redis node directly (not through a proxy)
// and expects a simple-string reply.
func command(ctx context.Context, addr string, args ...string) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	deadline := time.Now().Add(5 * time.Second)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = conn.SetDeadline(deadline)
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := conn.Write([]byte(b.String())); err != nil {
		return err
	}
	buf := make([]byte, 512)
	k, err := conn.Read(buf)
	if err != nil {
		return err
	}
	if reply := string(buf[:k]); !strings.HasPrefix(reply, "+") {
		return fmt.Errorf("reply %q", strings.TrimSpace(reply))
	}
	return nil
}
