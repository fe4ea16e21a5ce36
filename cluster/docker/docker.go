// Package docker is the container backend of cluster: it runs every node of a
// cluster (Redis servers and sentinels, PostgreSQL, ZooKeeper, etcd) as a
// container of the jepsen-lite node image (built locally by images/build.sh,
// see `make images`) through testcontainers-go, on a private Docker network
// per run, with each node's ports published on 127.0.0.1 only, so that the
// harness's links stay the only way clients and nodes reach a node.
//
// It owns the containers and networks it creates: everything carries the
// label RunLabel=<run id>, and Close removes all of it, also when Start fails
// halfway. Nodes can be killed and started again (the server's processes
// die and start again in their container, which keeps its data, network
// namespace and relays), paused (docker pause), and have their wall clock
// skewed through the clock-skew preload library installed in the image,
// whose offset file lives in a host directory bind-mounted into every
// container. What each system's
// nodes run and how they reach each other follows package cluster's plan
// (systems.go); this package only starts, stops, pauses and wires
// containers.
//
// Node-to-node traffic goes through the harness's linknet.Network like every
// other link, although the links listen on the host's loopback only: a node
// reaches a peer at an address on 127.0.0.1 inside its own container, where
// the harness listens (in the container's network namespace, which needs
// CAP_SYS_ADMIN) and pipes to the link; see relay.go. Each peer address means
// the same node in every container, so an address a server announces to its
// peers (ZooKeeper's election, etcd's peer URLs, Redis's replica
// announcements) leads to the right link wherever it is dialled. The links
// are the ones cluster/local makes: "nJ->nK" for a Redis replica,
// "peers->nK" in the sentinel topology, "nJ->nK" and "nJ->nK/election" for
// ZooKeeper, and "nJ->nK" for etcd (cluster/local tells its members'
// connections to one advertised address apart by their group ids; here
// each member has relays of its own).
package docker

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	mobynet "github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	tcnetwork "github.com/testcontainers/testcontainers-go/network"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
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
	// HarnessLabel names the harness that created it: "<host>/<pid>"
	// (harnessID), so that the next harness on the host removes what one
	// that died left (sweepDead).
	HarnessLabel = "jepsen-lite.harness"
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
)

// Backend declares the docker backend: it runs every system.
var Backend = cluster.Backend{Name: backendName, Systems: systems, Start: startBackend}

// The docker backend's name and systems (Backend's, which Start checks).
const backendName = "docker"

var systems = cluster.SystemNames()

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

// WithStartTimeout bounds how long a node may take to answer after its
// container starts. The default is 60 seconds.
func WithStartTimeout(d time.Duration) Option { return func(o *options) { o.startTimeout = d } }

// WithRedisArgs appends arguments to every Redis server's command line
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
	dir     string // host temp dir: clock files, configs, and logs when spec.LogDir is empty
	logDir  string
	nodes   []*node
	net     *linknet.Network
	repl    *cluster.Replication // Redis: the roles and failovers; nil otherwise
	// stopRoles stops the watch of a Redis Cluster's roles; guarded by mu.
	stopRoles func()

	mu     sync.Mutex
	closed bool
	links  []string // node-to-node links this cluster created
}

// node is one container of the cluster.
type node struct {
	cluster.Node
	index  int               // k of nk; 0 for a sentinel
	ports  []string          // container ports it publishes ("6379/tcp"), the client's first
	host   map[string]int    // the host port each is published on
	setup  string            // sh: what the container does once at its start
	server string            // sh: the server's command line
	files  map[string]string // its files in confDir, by name
	ready  func(ctx context.Context, addr string) error
	skew   bool                 // the clock-skew library is preloaded
	relays map[string]relaySpec // by listen address; guarded by Cluster.mu
	open   map[string]*relay    // the running relays, by listen address; guarded by Cluster.mu
	ctr    *testcontainers.DockerContainer
	clock  string // the host path of its clock file
}

// relaySpec is one address inside a node's container that leads to a port
// of another node through a link.
type relaySpec struct {
	listen string // 127.0.0.1:port inside the container
	link   string
	target *node
	port   string // the target's container port
}

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

// Start starts the cluster described by spec as containers and waits until
// every node answers: Redis in its three topologies, PostgreSQL, a ZooKeeper
// ensemble or an etcd cluster, with the nodes cluster.Layout names and the
// links cluster/local makes. Clusters without node-to-node links (Redis
// masters, PostgreSQL, a single ZooKeeper or etcd node) accept a nil
// network. On error, everything Start created is removed.
func Start(ctx context.Context, spec cluster.Spec, network *linknet.Network, opts ...Option) (*Cluster, error) {
	o := options{image: os.Getenv(ImageEnv), startTimeout: 60 * time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	if o.image == "" {
		o.image = DefaultImage
	}
	if o.runID == "" {
		o.runID = strings.ToLower(rand.Text()[:12])
	}
	if err := (cluster.Backend{Name: backendName, Systems: systems}).Check(spec); err != nil {
		return nil, err
	}
	layout, err := cluster.Layout(spec)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", cluster.ErrUnavailable, err)
	}
	if spec.Nodes < 1 {
		return nil, fmt.Errorf("docker: a cluster needs at least one node, got %d", spec.Nodes)
	}
	if network == nil && needsLinks(spec, layout) {
		return nil, fmt.Errorf("docker: %s with %d nodes needs a network for its node-to-node links", spec.System, len(layout))
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
	if err := sweepDead(ctx, cli); err != nil {
		_ = cli.Close()
		return nil, err
	}

	c := &Cluster{spec: spec, image: o.image, runID: o.runID, timeout: o.startTimeout, extra: o.redisArgs, docker: cli, net: network}
	if err := c.create(ctx, layout); err != nil {
		return nil, errors.Join(err, c.Close())
	}
	return c, nil
}

// startBackend is Start with the default options, returning the
// cluster.Cluster interface (nil on error).
func startBackend(ctx context.Context, spec cluster.Spec, network *linknet.Network) (cluster.Cluster, error) {
	c, err := Start(ctx, spec, network)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// needsLinks reports whether a cluster of spec has node-to-node links: its
// declared topology's nodes dial one another (cluster.Topology.PeerLinks)
// and it has more than one node.
func needsLinks(spec cluster.Spec, layout []cluster.Node) bool {
	top, err := cluster.TopologyOf(spec)
	return err == nil && top.PeerLinks && len(layout) > 1
}

// create makes the run's directory, network and containers.
func (c *Cluster) create(ctx context.Context, layout []cluster.Node) error {
	dir, err := cluster.TempDir("docker")
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

	for _, l := range layout {
		if err := c.addNode(l); err != nil {
			return err
		}
	}
	if err := c.plan(); err != nil {
		return err
	}
	for _, n := range c.nodes {
		if err := c.writeFiles(n); err != nil {
			return err
		}
	}
	if c.spec.System == cluster.Redis {
		c.repl = cluster.NewReplication(c.spec, c.infos(), wiring{c})
	}
	// Containers start concurrently: most of the time is the engine's. The
	// sentinels start once the servers they watch answer.
	var servers, sentinels []*node
	for _, n := range c.nodes {
		if n.Role == cluster.RoleSentinel {
			sentinels = append(sentinels, n)
		} else {
			servers = append(servers, n)
		}
	}
	if err := c.runAll(ctx, servers); err != nil {
		return err
	}
	if c.RoutesClients() {
		return c.formRedisCluster(ctx)
	}
	return c.runAll(ctx, sentinels)
}

// addNode adds a node of the layout with its clock file and host ports.
func (c *Cluster) addNode(l cluster.Node) error {
	n := &node{Node: l, host: map[string]int{}, files: map[string]string{}, relays: map[string]relaySpec{}, open: map[string]*relay{}}
	if k, err := strconv.Atoi(strings.TrimPrefix(l.Name, "n")); err == nil && strings.HasPrefix(l.Name, "n") {
		n.index = k
	}
	n.clock = filepath.Join(c.dir, "clock", l.Name)
	if err := cluster.CreateClockFile(n.clock); err != nil {
		return err
	}
	c.nodes = append(c.nodes, n)
	return nil
}

// publish gives n its container ports, the client's first, each on a free
// host port.
func (c *Cluster) publish(n *node, ports ...string) error {
	n.ports = ports
	return c.pickPorts(n)
}

func (c *Cluster) pickPorts(n *node) error {
	for _, p := range n.ports {
		port, err := pickPort()
		if err != nil {
			return err
		}
		n.host[p] = port
	}
	n.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(n.host[n.ports[0]]))
	return nil
}

// relay makes an address inside n's container, 127.0.0.1:listen, lead to
// the port of target through the link.
func (n *node) relay(listen int, link string, target *node, port string) string {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(listen))
	n.relays[addr] = relaySpec{listen: addr, link: link, target: target, port: port}
	return addr
}

// writeFiles writes n's files into its config directory.
func (c *Cluster) writeFiles(n *node) error {
	d := filepath.Join(c.dir, "conf", n.Name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return fmt.Errorf("docker: %w", err)
	}
	for name, body := range n.files {
		if err := os.WriteFile(filepath.Join(d, name), []byte(body), 0o644); err != nil {
			return fmt.Errorf("docker: config of %s: %w", n.Name, err)
		}
	}
	return nil
}

// infos returns the nodes as package cluster describes them.
func (c *Cluster) infos() []cluster.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]cluster.Node, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.Node
	}
	return out
}

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
		if err := c.openRelays(ctx, n); err != nil {
			return err
		}
	}
	return each(func(n *node) error { return c.waitReady(ctx, n) })
}

// portAttempts is how many sets of host ports a node tries: a free port
// found by pickPort may be taken by another process before the engine binds
// it.
const portAttempts = 3

// runRetrying runs the node's container, on other host ports when one was
// taken meanwhile.
func (c *Cluster) runRetrying(ctx context.Context, n *node) error {
	for attempt := 1; ; attempt++ {
		err := c.run(ctx, n)
		if err == nil || attempt == portAttempts || !portTaken(err) {
			return err
		}
		c.mu.Lock()
		ctr := n.ctr
		n.ctr = nil
		c.mu.Unlock()
		if ctr != nil {
			if _, rerr := c.docker.ContainerRemove(ctx, ctr.ID, client.ContainerRemoveOptions{Force: true}); rerr != nil {
				return errors.Join(err, fmt.Errorf("docker: remove node %s: %w", n.Name, rerr))
			}
		}
		c.mu.Lock()
		perr := c.pickPorts(n)
		c.mu.Unlock()
		if perr != nil {
			return errors.Join(err, perr)
		}
		if c.repl != nil {
			c.repl.SetAddr(n.Name, n.Addr)
		}
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
	binds := []string{
		filepath.Join(c.dir, "clock") + ":" + clockDir,
		c.logDir + ":" + logDir,
		filepath.Join(c.dir, "conf", n.Name) + ":" + confDir,
	}
	bindings := mobynet.PortMap{}
	for _, p := range n.ports {
		bindings[mobynet.MustParsePort(p)] = []mobynet.PortBinding{{HostIP: hostIP, HostPort: strconv.Itoa(n.host[p])}}
	}
	env := map[string]string{"LC_ALL": "C"}
	if n.skew {
		env["LD_PRELOAD"] = clockSkewLibrary
		env[cluster.ClockFileEnv] = clockDir + "/" + n.Name
	}
	labels := c.labels()
	labels[NodeLabel] = n.Name
	ctr, err := testcontainers.Run(ctx, c.image,
		testcontainers.WithLogger(tclog.NewNoopLogger()),
		testcontainers.WithName("jepsen-lite-"+c.runID+"-"+n.Name),
		testcontainers.WithLabels(labels),
		testcontainers.WithEnv(env),
		testcontainers.WithCmd("sh", "-c", script(n)),
		testcontainers.WithExposedPorts(n.ports...),
		testcontainers.WithConfigModifier(func(cfg *container.Config) { cfg.Hostname = n.Name }),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.PortBindings = bindings
			hc.Binds = append(hc.Binds, binds...)
		}),
		tcnetwork.WithNetwork([]string{n.Name}, c.network),
	)
	if ctr != nil {
		c.mu.Lock()
		n.ctr = ctr
		c.mu.Unlock()
	}
	if err != nil {
		return fmt.Errorf("docker: start node %s: %w", n.Name, err)
	}
	return nil
}

// openRelays opens every relay of n that is not running, in n's container
// as it runs now.
func (c *Cluster) openRelays(ctx context.Context, n *node) error {
	c.mu.Lock()
	var want []relaySpec
	for addr, r := range n.relays {
		if n.open[addr] == nil {
			want = append(want, r)
		}
	}
	c.mu.Unlock()
	slices.SortFunc(want, func(a, b relaySpec) int { return strings.Compare(a.listen, b.listen) })
	for _, r := range want {
		if err := c.openRelay(ctx, n, r); err != nil {
			return err
		}
	}
	return nil
}

// openRelay makes the relay's link (if new) and the relay inside n's
// container, replacing an older relay on the same address.
func (c *Cluster) openRelay(ctx context.Context, n *node, r relaySpec) error {
	pid, err := c.pid(ctx, n)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	upstream := net.JoinHostPort("127.0.0.1", strconv.Itoa(r.target.host[r.port]))
	switch cur := c.net.Addr(r.link); {
	case cur == "":
		if _, err := c.net.Link(r.link, upstream); err != nil {
			return fmt.Errorf("docker: %w", err)
		}
		c.links = append(c.links, r.link)
	case c.net.Upstream(r.link) != upstream:
		if err := c.net.SetUpstream(r.link, upstream); err != nil {
			return fmt.Errorf("docker: %w", err)
		}
	}
	if old := n.open[r.listen]; old != nil {
		_ = old.close()
		delete(n.open, r.listen)
	}
	rel, err := startRelay(pid, r.listen, r.link, c.net)
	if err != nil {
		return fmt.Errorf("docker: link %s: %w", r.link, err)
	}
	n.relays[r.listen] = r
	n.open[r.listen] = rel
	return nil
}

// pid returns the host pid of the node's container's first process.
func (c *Cluster) pid(ctx context.Context, n *node) (int, error) {
	inspect, err := c.docker.ContainerInspect(ctx, n.ctr.ID, client.ContainerInspectOptions{})
	if err != nil {
		return 0, fmt.Errorf("docker: inspect node %s: %w", n.Name, err)
	}
	if inspect.Container.State == nil || inspect.Container.State.Pid == 0 {
		return 0, fmt.Errorf("docker: node %s is not running", n.Name)
	}
	return inspect.Container.State.Pid, nil
}

// closeRelays closes the relays running inside n's container; their specs
// stay, for a restart to open them again.
func (c *Cluster) closeRelays(n *node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range n.open {
		_ = r.close()
	}
	clear(n.open)
}

// waitReady waits until the node answers on its published port.
func (c *Cluster) waitReady(ctx context.Context, n *node) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var last error
	for {
		attempt, cancelAttempt := context.WithTimeout(ctx, time.Second)
		last = n.ready(attempt, n.Addr)
		cancelAttempt()
		if last == nil {
			return nil
		}
		inspect, err := c.docker.ContainerInspect(ctx, n.ctr.ID, client.ContainerInspectOptions{})
		if err == nil && inspect.Container.State != nil && !inspect.Container.State.Running {
			return fmt.Errorf("docker: node %s exited with code %d before answering: %s",
				n.Name, inspect.Container.State.ExitCode, c.logTail(ctx, n))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("docker: node %s did not answer within %v: %w", n.Name, c.timeout, errors.Join(ctx.Err(), last))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// logTail returns the last lines of the node's log, or where it is.
func (c *Cluster) logTail(ctx context.Context, n *node) string {
	path := filepath.Join(c.logDir, n.Name+".log")
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		if len(b) > 600 {
			b = b[len(b)-600:]
		}
		return strings.Join(strings.Fields(string(b)), " ")
	}
	logs, err := c.docker.ContainerLogs(ctx, n.ctr.ID, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Tail: "5"})
	if err == nil {
		defer logs.Close()
		var out strings.Builder
		if _, err := stdcopy.StdCopy(&out, &out, logs); err == nil && strings.TrimSpace(out.String()) != "" {
			return strings.Join(strings.Fields(out.String()), " ")
		}
	}
	return "see " + path
}

// pickPort is how a node's host ports are chosen (cluster.FreePort; tests
// replace it). A node keeps its ports for its whole life, so its address
// survives kill and start.
var pickPort = cluster.FreePort

// System returns the system the cluster runs.
func (c *Cluster) System() string { return c.spec.System }

// RunID returns the id that labels everything the cluster created.
func (c *Cluster) RunID() string { return c.runID }

// Image returns the node image the cluster runs.
func (c *Cluster) Image() string { return c.image }

// Nodes returns the cluster's nodes in cluster.Layout order; Addr is
// 127.0.0.1 and the node's published client port, stable across Kill and
// Start; a Redis node's Role is its current one (cluster.Replication).
func (c *Cluster) Nodes() []cluster.Node {
	if c.repl != nil {
		return c.repl.Nodes()
	}
	return c.infos()
}

// ContainerID returns the Docker id of the node's container.
func (c *Cluster) ContainerID(name string) (string, error) {
	n, err := c.node(name)
	if err != nil {
		return "", err
	}
	return n.ctr.ID, nil
}

func (c *Cluster) node(name string) (*node, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	for _, n := range c.nodes {
		if n.Name == name && n.ctr != nil {
			return n, nil
		}
	}
	return nil, fmt.Errorf("%w: %q", ErrUnknownNode, name)
}

// Kill kills the node's server with SIGKILL, every process of it, from the
// host, and waits until they are gone: the node dies at once, as a local
// node does, and its connections end as the kernel ends a dead process's.
// The container, its data and its relays stay for Start. A paused node is
// killed too (the signal takes effect as it is thawed). Killing a node whose
// server is not running does nothing.
func (c *Cluster) Kill(ctx context.Context, name string) error {
	n, err := c.node(name)
	if err != nil {
		return err
	}
	inspect, err := c.docker.ContainerInspect(ctx, n.ctr.ID, client.ContainerInspectOptions{})
	if err != nil {
		return fmt.Errorf("docker: kill node %s: %w", name, err)
	}
	state := inspect.Container.State
	if state == nil || !state.Running || state.Pid <= 0 {
		return nil
	}
	procs := serverProcesses(state.Pid)
	for _, pid := range procs {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if state.Paused {
		if _, err := c.docker.ContainerUnpause(ctx, n.ctr.ID, client.ContainerUnpauseOptions{}); err != nil {
			return fmt.Errorf("docker: kill paused node %s: %w", name, err)
		}
	}
	for _, pid := range procs {
		for cluster.Alive(pid) {
			select {
			case <-ctx.Done():
				return fmt.Errorf("docker: kill node %s: process %d still alive: %w", name, pid, ctx.Err())
			case <-time.After(2 * time.Millisecond):
			}
		}
	}
	return nil
}

// serverProcesses returns the host pids of the server's processes in the
// container whose first process (the node's script) is pid: every
// descendant but the script's own (its sleeps, and the copies of the shell
// it forks before each one execs its program) and those that ended while
// they were listed. A fork that has not yet exec'd runs the script's own
// executable; counting it as the server made Start take a node that was
// waiting to be started for a running one, and return without starting it.
func serverProcesses(pid int) []int {
	shell, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	var out []int
	for _, p := range cluster.Descendants(pid) {
		// One read of the executable tells all three apart, even as a fork
		// execs its program.
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", p))
		if err != nil || exe == shell || path.Base(exe) == "sleep" {
			continue
		}
		out = append(out, p)
	}
	return out
}

// Start starts a killed node's server again, with the data it kept, and
// waits until it answers on its old address. A container that is not
// running (stopped by the engine) is started again with its relays.
// Starting a running node does nothing.
func (c *Cluster) Start(ctx context.Context, name string) error {
	n, err := c.node(name)
	if err != nil {
		return err
	}
	inspect, err := c.docker.ContainerInspect(ctx, n.ctr.ID, client.ContainerInspectOptions{})
	if err != nil {
		return fmt.Errorf("docker: start node %s: %w", name, err)
	}
	state := inspect.Container.State
	switch {
	case state == nil || !state.Running:
		c.closeRelays(n)
		if _, err := c.docker.ContainerStart(ctx, n.ctr.ID, client.ContainerStartOptions{}); err != nil {
			return fmt.Errorf("docker: start node %s: %w", name, err)
		}
		if err := c.openRelays(ctx, n); err != nil {
			return err
		}
	case len(serverProcesses(state.Pid)) > 0:
		return nil
	default:
		if err := os.WriteFile(filepath.Join(c.dir, "conf", n.Name, startFile), nil, 0o644); err != nil {
			return fmt.Errorf("docker: start node %s: %w", name, err)
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
	if _, err := c.docker.ContainerPause(ctx, n.ctr.ID, client.ContainerPauseOptions{}); err != nil {
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
	if _, err := c.docker.ContainerUnpause(ctx, n.ctr.ID, client.ContainerUnpauseOptions{}); err != nil {
		return fmt.Errorf("docker: resume node %s: %w", name, err)
	}
	return nil
}

// SetClockOffset sets the node's wall-clock offset by rewriting, in place,
// the clock file its processes have mapped. It reports
// cluster.ErrUnavailable for a system whose clocks cannot be skewed
// (cluster.SystemInfo.NoClockSkew).
func (c *Cluster) SetClockOffset(name string, offset time.Duration) error {
	n, err := c.node(name)
	if err != nil {
		return err
	}
	if err := cluster.ClockSkewError(c.spec.System, name); err != nil {
		return err
	}
	if err := cluster.WriteClockOffset(n.clock, offset); err != nil {
		return fmt.Errorf("docker: clock of node %s: %w", name, err)
	}
	return nil
}

// Close removes every container and the network the cluster created (found
// by their run label, so also those of a Start that failed halfway), the
// node-to-node links it made and its temp dir. Node logs written to
// spec.LogDir stay. It is safe to call more than once.
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
	for _, n := range c.nodes {
		c.closeRelays(n)
	}
	if err := c.net.RemoveExisting(c.links...); err != nil {
		errs = append(errs, fmt.Errorf("docker: %w", err))
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

// running reports whether the node's container runs (paused counts).
func (c *Cluster) running(ctx context.Context, n *node) bool {
	inspect, err := c.docker.ContainerInspect(ctx, n.ctr.ID, client.ContainerInspectOptions{})
	return err == nil && inspect.Container.State != nil && inspect.Container.State.Running
}

// Primary returns the node that serves as primary (cluster.Replication).
func (c *Cluster) Primary(ctx context.Context) (string, error) {
	if c.repl == nil {
		return "", fmt.Errorf("%w: %s has no replicas to fail over to", cluster.ErrUnavailable, c.spec.System)
	}
	return c.repl.Primary(ctx)
}

// Promote makes node the primary (cluster.Replication).
func (c *Cluster) Promote(ctx context.Context, node string) error {
	if c.repl == nil {
		return fmt.Errorf("%w: %s has no replicas to fail over to", cluster.ErrUnavailable, c.spec.System)
	}
	if _, err := c.node(node); err != nil {
		return err
	}
	return c.repl.Promote(ctx, node)
}

// Follow makes node a replica of primary (cluster.Replication), through
// the relay in node's container to primary.
func (c *Cluster) Follow(ctx context.Context, node, primary string) error {
	if c.repl == nil {
		return fmt.Errorf("%w: %s has no replicas", cluster.ErrUnavailable, c.spec.System)
	}
	return c.repl.Follow(ctx, node, primary)
}

// wiring is the cluster.RedisWiring of a cluster.
type wiring struct{ c *Cluster }

// PeerAddr returns the relay address in from's container that leads to
// data node to, opening the relay (and its link) when missing.
func (w wiring) PeerAddr(ctx context.Context, from, to string) (string, error) {
	f, err := w.c.node(from)
	if err != nil {
		return "", err
	}
	t, err := w.c.node(to)
	if err != nil {
		return "", err
	}
	listen := net.JoinHostPort("127.0.0.1", strconv.Itoa(redisRelayPort(t)))
	link := cluster.ReplicationLink(w.c.spec, from, to)
	w.c.mu.Lock()
	r, have := f.relays[listen]
	running := f.open[listen] != nil
	w.c.mu.Unlock()
	if have && running && r.link == link {
		return listen, nil
	}
	if !w.c.running(ctx, f) {
		// The relay opens when the node starts again.
		w.c.mu.Lock()
		f.relays[listen] = relaySpec{listen: listen, link: link, target: t, port: redisPort}
		w.c.mu.Unlock()
		return listen, nil
	}
	return listen, w.c.openRelay(ctx, f, relaySpec{listen: listen, link: link, target: t, port: redisPort})
}

// Running reports whether the node's container runs.
func (w wiring) Running(ctx context.Context, name string) bool {
	n, err := w.c.node(name)
	return err == nil && w.c.running(ctx, n)
}
