package local

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster"
)

// Redis topologies.
const (
	// TopologyMasters is N independent Redis masters (Redlock's setting).
	TopologyMasters = "masters"
	// TopologyPrimaryReplica is n1 primary and n2.. asynchronous replicas,
	// each replicating through the link "nX->n1".
	TopologyPrimaryReplica = "primary-replica"
	// TopologySentinel is TopologyPrimaryReplica watched by three
	// redis-sentinel processes s1, s2, s3 that fail over on their own.
	TopologySentinel = "sentinel"
)

// SentinelMaster is the name the sentinels monitor the primary under.
const SentinelMaster = "mymaster"

// Sentinel timing: short, so a failover happens within a test run.
const (
	sentinelDownAfter       = time.Second
	sentinelFailoverTimeout = 3 * time.Second
)

// Redis roles.
const (
	RolePrimary  = "primary"
	RoleReplica  = "replica"
	RoleSentinel = "sentinel"
)

// peersLink is the "from" end of the shared link through which, in the
// sentinel topology, every other server (replicas, sentinels) reaches a data
// node: "peers->n1". Replicas and sentinels learn each other's addresses
// from the servers themselves, so a per-pair link cannot be kept there.
const peersLink = "peers"

// setupRedis creates the nodes of the Redis topology, their configs and links.
func (c *Cluster) setupRedis() error {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return fmt.Errorf("local: redis-server: %w", err)
	}
	topo := c.spec.Topology
	if topo == "" {
		topo = TopologyMasters
	}
	switch topo {
	case TopologyMasters:
		for i := range max(c.spec.Nodes, 1) {
			if _, err := c.addRedis(bin, fmt.Sprintf("n%d", i+1), RolePrimary, ""); err != nil {
				return err
			}
		}
		return nil
	case TopologyPrimaryReplica, TopologySentinel:
	default:
		return fmt.Errorf("local: unknown redis topology %q (want %s, %s or %s)", topo, TopologyMasters, TopologyPrimaryReplica, TopologySentinel)
	}
	sentinel := topo == TopologySentinel
	data := max(c.spec.Nodes, 2)
	// Allocate every data node first: replicas need the primary's address.
	var nodes []*node
	for i := range data {
		role := RoleReplica
		if i == 0 {
			role = RolePrimary
		}
		n, err := c.addNode(fmt.Sprintf("n%d", i+1), role)
		if err != nil {
			return err
		}
		nodes = append(nodes, n)
	}
	c.primary = "n1"
	primaryVia := map[string]string{} // replica -> address it replicates from
	announce := map[string]string{}   // data node -> address others reach it on
	if sentinel {
		for _, n := range nodes {
			a, err := c.link(peersLink, n.name, n.addr())
			if err != nil {
				return err
			}
			announce[n.name] = a
		}
		for _, n := range nodes[1:] {
			primaryVia[n.name] = announce["n1"]
		}
	} else {
		for _, n := range nodes[1:] {
			a, err := c.link(n.name, "n1", nodes[0].addr())
			if err != nil {
				return err
			}
			primaryVia[n.name] = a
		}
	}
	for _, n := range nodes {
		var extra []string
		if a := primaryVia[n.name]; a != "" {
			host, port, _ := net.SplitHostPort(a)
			extra = append(extra, "replicaof "+host+" "+port)
		}
		if a := announce[n.name]; a != "" {
			host, port, _ := net.SplitHostPort(a)
			extra = append(extra, "replica-announce-ip "+host, "replica-announce-port "+port)
		}
		if err := c.configureRedis(bin, n, extra); err != nil {
			return err
		}
	}
	if !sentinel {
		return nil
	}
	sbin, err := exec.LookPath("redis-sentinel")
	if err != nil {
		return fmt.Errorf("local: redis-sentinel: %w", err)
	}
	host, port, _ := net.SplitHostPort(announce["n1"])
	for i := range 3 {
		s, err := c.addNode(fmt.Sprintf("s%d", i+1), RoleSentinel)
		if err != nil {
			return err
		}
		conf := []string{
			"port " + strconv.Itoa(s.port),
			"bind 127.0.0.1",
			"protected-mode no",
			"daemonize no",
			`logfile ""`,
			"dir " + s.dir,
			fmt.Sprintf("sentinel monitor %s %s %s 2", SentinelMaster, host, port),
			fmt.Sprintf("sentinel down-after-milliseconds %s %d", SentinelMaster, sentinelDownAfter.Milliseconds()),
			fmt.Sprintf("sentinel failover-timeout %s %d", SentinelMaster, sentinelFailoverTimeout.Milliseconds()),
			fmt.Sprintf("sentinel parallel-syncs %s 1", SentinelMaster),
		}
		path := filepath.Join(s.dir, "sentinel.conf")
		if err := os.WriteFile(path, []byte(strings.Join(conf, "\n")+"\n"), 0o644); err != nil {
			return fmt.Errorf("local: sentinel config: %w", err)
		}
		s.argv = []string{sbin, path}
		addr := s.addr()
		s.ready = func(ctx context.Context) error {
			// Ready once it knows the replicas and the other sentinels, so
			// it can agree on a failover from the start.
			r, err := redisDo(ctx, addr, "SENTINEL", "MASTER", SentinelMaster)
			if err != nil {
				return err
			}
			l, _ := r.([]any)
			fields := map[string]string{}
			for i := 0; i+1 < len(l); i += 2 {
				fields[fmt.Sprint(l[i])] = fmt.Sprint(l[i+1])
			}
			if fields["num-slaves"] != strconv.Itoa(data-1) || fields["num-other-sentinels"] != "2" {
				return fmt.Errorf("local: sentinel knows %s replicas and %s other sentinels, want %d and 2",
					fields["num-slaves"], fields["num-other-sentinels"], data-1)
			}
			return nil
		}
	}
	return nil
}

// addRedis adds a redis-server node with its config.
func (c *Cluster) addRedis(bin, name, role string, extra ...string) (*node, error) {
	n, err := c.addNode(name, role)
	if err != nil {
		return nil, err
	}
	return n, c.configureRedis(bin, n, extra)
}

// configureRedis writes the node's redis.conf: persistence per the spec
// (appendonly with fsync on every write, or nothing at all so a restart
// loses every key), plus the extra lines.
func (c *Cluster) configureRedis(bin string, n *node, extra []string) error {
	conf := []string{
		"port " + strconv.Itoa(n.port),
		"bind 127.0.0.1",
		"protected-mode no",
		"daemonize no",
		`logfile ""`,
		"dir " + n.dir,
		`save ""`,
		"repl-diskless-sync yes",
		"repl-diskless-sync-delay 0",
		"repl-ping-replica-period 1",
	}
	if c.spec.Persistence {
		conf = append(conf, "appendonly yes", "appendfsync always")
	} else {
		conf = append(conf, "appendonly no")
	}
	for _, e := range extra {
		if e != "" {
			conf = append(conf, e)
		}
	}
	path := filepath.Join(n.dir, "redis.conf")
	if err := os.WriteFile(path, []byte(strings.Join(conf, "\n")+"\n"), 0o644); err != nil {
		return fmt.Errorf("local: redis config: %w", err)
	}
	n.argv = []string{bin, path}
	addr := n.addr()
	n.ready = func(ctx context.Context) error { return redisReady(ctx, addr) }
	return nil
}

// Primary returns the node currently serving as primary (see
// cluster.Failoverer). It is an error for topologies without replicas.
func (c *Cluster) Primary(ctx context.Context) (string, error) {
	if err := c.checkReplicated(); err != nil {
		return "", err
	}
	if c.spec.Topology != TopologySentinel {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.primary, nil
	}
	var errs []error
	for _, s := range c.nodes {
		if s.role != RoleSentinel || !s.running() {
			continue
		}
		name, err := c.sentinelPrimary(ctx, s)
		if err == nil {
			return name, nil
		}
		errs = append(errs, err)
	}
	return "", fmt.Errorf("local: no sentinel named the primary: %w", errors.Join(errs...))
}

// sentinelPrimary asks one sentinel for the primary and maps its address
// (a "peers->nX" link) to the node.
func (c *Cluster) sentinelPrimary(ctx context.Context, s *node) (string, error) {
	r, err := redisDo(ctx, s.addr(), "SENTINEL", "GET-MASTER-ADDR-BY-NAME", SentinelMaster)
	if err != nil {
		return "", err
	}
	l, _ := r.([]any)
	if len(l) != 2 {
		return "", fmt.Errorf("local: sentinel %s answered %v", s.name, r)
	}
	addr := net.JoinHostPort(fmt.Sprint(l[0]), fmt.Sprint(l[1]))
	for _, n := range c.nodes {
		if n.role == RoleSentinel {
			continue
		}
		if addr == n.addr() || addr == c.net.Addr(cluster.LinkName(peersLink, n.name)) {
			return n.name, nil
		}
	}
	return "", fmt.Errorf("local: sentinel %s names an unknown primary %s", s.name, addr)
}

// Promote makes node the primary (see cluster.Failoverer).
func (c *Cluster) Promote(ctx context.Context, node string) error {
	if err := c.checkReplicated(); err != nil {
		return err
	}
	n, err := c.node(node)
	if err != nil {
		return err
	}
	if n.role == RoleSentinel {
		return fmt.Errorf("local: %s is a sentinel, not a data node", node)
	}
	if c.spec.Topology == TopologySentinel {
		return c.sentinelFailover(ctx, node)
	}
	if _, err := redisDo(ctx, n.addr(), "REPLICAOF", "NO", "ONE"); err != nil {
		return fmt.Errorf("local: promote %s: %w", node, err)
	}
	c.mu.Lock()
	old := c.primary
	c.primary = node
	c.mu.Unlock()
	var errs []error
	for _, r := range c.nodes {
		if r.name == node || r.name == old || r.role == RoleSentinel || !r.running() {
			continue
		}
		via, err := c.replicationLink(r.name, node)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		host, port, _ := net.SplitHostPort(via)
		if _, err := redisDo(ctx, r.addr(), "REPLICAOF", host, port); err != nil {
			errs = append(errs, fmt.Errorf("local: repoint %s at %s: %w", r.name, node, err))
		}
	}
	return errors.Join(errs...)
}

// Follow makes node a replica of primary: through the link "node->primary"
// (created when missing), or in the sentinel topology through the link
// "peers->primary" the sentinels also use. It does not change Node.Role,
// which stays the role a node had at start; Primary tells the current one.
func (c *Cluster) Follow(ctx context.Context, node, primary string) error {
	if err := c.checkReplicated(); err != nil {
		return err
	}
	n, err := c.node(node)
	if err != nil {
		return err
	}
	if _, err := c.node(primary); err != nil {
		return err
	}
	if node == primary || n.role == RoleSentinel {
		return fmt.Errorf("local: %s cannot follow %s", node, primary)
	}
	var via string
	if c.spec.Topology == TopologySentinel {
		via = c.net.Addr(cluster.LinkName(peersLink, primary))
	} else if via, err = c.replicationLink(node, primary); err != nil {
		return err
	}
	host, port, _ := net.SplitHostPort(via)
	if _, err := redisDo(ctx, n.addr(), "REPLICAOF", host, port); err != nil {
		return fmt.Errorf("local: make %s follow %s: %w", node, primary, err)
	}
	c.mu.Lock()
	if c.primary == node {
		c.primary = primary
	}
	c.mu.Unlock()
	return nil
}

// replicationLink returns the address of the link from -> to, creating it.
func (c *Cluster) replicationLink(from, to string) (string, error) {
	if a := c.net.Addr(cluster.LinkName(from, to)); a != "" {
		return a, nil
	}
	t, err := c.node(to)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.link(from, to, t.addr())
}

// sentinelFailover asks a sentinel to fail over and waits until the
// sentinels name node as the primary.
func (c *Cluster) sentinelFailover(ctx context.Context, target string) error {
	var s *node
	for _, n := range c.nodes {
		if n.role == RoleSentinel && n.running() {
			s = n
			break
		}
	}
	if s == nil {
		return fmt.Errorf("%w: no sentinel running", cluster.ErrUnavailable)
	}
	if _, err := redisDo(ctx, s.addr(), "SENTINEL", "FAILOVER", SentinelMaster); err != nil {
		return fmt.Errorf("local: sentinel failover: %w", err)
	}
	for {
		got, err := c.sentinelPrimary(ctx, s)
		if err == nil && got == target {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("local: sentinel failover to %s: primary is %q: %w", target, got, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// checkReplicated reports an error unless the cluster is a replicated Redis.
func (c *Cluster) checkReplicated() error {
	if c.spec.System == cluster.Redis && (c.spec.Topology == TopologyPrimaryReplica || c.spec.Topology == TopologySentinel) {
		return nil
	}
	return fmt.Errorf("%w: %s/%s has no replicas to fail over to", cluster.ErrUnavailable, c.spec.System, c.spec.Topology)
}

// waitReplicating waits until every replica reports its link to the
// primary up.
func (c *Cluster) waitReplicating(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.readyTimeout)
	defer cancel()
	for _, n := range c.nodes {
		if n.role != RoleReplica {
			continue
		}
		for {
			attempt, cancelAttempt := context.WithTimeout(ctx, time.Second)
			s, err := redisInfoField(attempt, n.addr(), "replication", "master_link_status")
			cancelAttempt()
			if err == nil && s == "up" {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("local: replica %s not replicating (link %q, %v): %w", n.name, s, err, ctx.Err())
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	return nil
}
