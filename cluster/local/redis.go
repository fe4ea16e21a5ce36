package local

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
)

// setupRedis creates the nodes of the Redis topology (cluster.Layout), their
// configs (the plan of package cluster) and links: a replica replicates
// through "nX->n1", or in the sentinel topology every replica and sentinel
// reaches data node nK through "peers->nK", whose address the replicas
// announce.
func (c *Cluster) setupRedis() error {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return fmt.Errorf("local: redis-server: %w", err)
	}
	layout, err := cluster.Layout(c.spec)
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	sentinel := c.spec.Topology == cluster.TopologySentinel
	// Allocate every node first: replicas need the primary's address.
	var data, sentinels []*node
	for _, l := range layout {
		n, err := c.addNode(l.Name, l.Role)
		if err != nil {
			return err
		}
		if l.Role == cluster.RoleSentinel {
			sentinels = append(sentinels, n)
		} else {
			data = append(data, n)
		}
	}
	peer := map[string]string{} // link name -> its address
	linkTo := func(from, to *node) error {
		name := cluster.ReplicationLink(c.spec, from.name, to.name)
		if _, ok := peer[name]; ok {
			return nil
		}
		end, _, _ := linknet.SplitName(name)
		a, err := c.link(end, to.name, to.addr())
		peer[name] = a
		return err
	}
	for _, n := range data {
		var err error
		switch {
		case sentinel:
			err = linkTo(n, n) // "peers->n"
		case n.role == cluster.RoleReplica:
			err = linkTo(n, data[0])
		}
		if err != nil {
			return err
		}
	}
	for _, n := range data {
		conf := append(cluster.Settings(c.spec), "port "+strconv.Itoa(n.port), "bind 127.0.0.1", `logfile ""`, "dir "+n.dir)
		if n.role == cluster.RoleReplica {
			host, port := splitAddr(peer[cluster.ReplicationLink(c.spec, n.name, data[0].name)])
			conf = append(conf, cluster.ReplicaOf(host, port))
		}
		if sentinel {
			host, port := splitAddr(peer[linknet.Name(cluster.PeersLink, n.name)])
			conf = append(conf, "replica-announce-ip "+host, "replica-announce-port "+strconv.Itoa(port))
		}
		path := filepath.Join(n.dir, "redis.conf")
		if err := os.WriteFile(path, []byte(strings.Join(conf, "\n")+"\n"), 0o644); err != nil {
			return fmt.Errorf("local: redis config: %w", err)
		}
		n.argv = []string{bin, path}
		addr := n.addr()
		n.ready = func(ctx context.Context) error { return cluster.RedisReady(ctx, addr) }
	}
	if sentinel {
		if err := setupSentinels(sentinels, peer[linknet.Name(cluster.PeersLink, data[0].name)], len(data)-1); err != nil {
			return err
		}
	}
	c.repl = cluster.NewReplication(c.spec, c.infos(), wiring{c})
	return nil
}

// splitAddr returns the host and port of a "host:port" address.
func splitAddr(addr string) (string, int) {
	host, p, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(p)
	return host, port
}

// Primary returns the node currently serving as primary
// (cluster.Replication).
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

// Follow makes node a replica of primary (cluster.Replication): through
// the link "node->primary" (created when missing), or in the sentinel
// topology through the link "peers->primary" the sentinels also use.
func (c *Cluster) Follow(ctx context.Context, node, primary string) error {
	if c.repl == nil {
		return fmt.Errorf("%w: %s has no replicas", cluster.ErrUnavailable, c.spec.System)
	}
	if _, err := c.node(node); err != nil {
		return err
	}
	return c.repl.Follow(ctx, node, primary)
}

// RoutesClients reports whether the cluster is a Redis Cluster, whose
// clients follow its redirections (cluster.Router).
func (c *Cluster) RoutesClients() bool {
	return c.spec.System == cluster.Redis && c.spec.Topology == cluster.TopologyCluster
}

// wiring is the cluster.RedisWiring of a local cluster.
type wiring struct{ c *Cluster }

// PeerAddr returns the address of the link from -> to (by the plan's
// name), creating it.
func (w wiring) PeerAddr(ctx context.Context, from, to string) (string, error) {
	name := cluster.ReplicationLink(w.c.spec, from, to)
	if a := w.c.net.Addr(name); a != "" {
		return a, nil
	}
	t, err := w.c.node(to)
	if err != nil {
		return "", err
	}
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	end, _, _ := linknet.SplitName(name)
	return w.c.link(end, to, t.addr())
}

// Running reports whether the node's process is alive.
func (w wiring) Running(ctx context.Context, name string) bool {
	n, err := w.c.node(name)
	return err == nil && n.running()
}

// waitReplicating waits until every replica reports its link to the
// primary up (cluster.WaitReplicating).
func (c *Cluster) waitReplicating(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.readyTimeout)
	defer cancel()
	var nodes []cluster.Node
	for _, n := range c.nodes {
		nodes = append(nodes, n.info())
	}
	if err := cluster.WaitReplicating(ctx, nodes, 5*time.Millisecond); err != nil {
		return fmt.Errorf("local: %w", err)
	}
	return nil
}

// setupSentinels writes the config of each sentinel, which watches the
// primary through the link address primary and expects replicas replicas,
// and sets its command and readiness probe.
func setupSentinels(sentinels []*node, primary string, replicas int) error {
	sbin, err := exec.LookPath("redis-sentinel")
	if err != nil {
		return fmt.Errorf("local: redis-sentinel: %w", err)
	}
	host, port := splitAddr(primary)
	for _, s := range sentinels {
		conf := append([]string{"port " + strconv.Itoa(s.port), "bind 127.0.0.1", `logfile ""`, "dir " + s.dir},
			cluster.SentinelConfig(host, port)...)
		path := filepath.Join(s.dir, "sentinel.conf")
		if err := os.WriteFile(path, []byte(strings.Join(conf, "\n")+"\n"), 0o644); err != nil {
			return fmt.Errorf("local: sentinel config: %w", err)
		}
		s.argv = []string{sbin, path}
		addr := s.addr()
		s.ready = func(ctx context.Context) error { return cluster.SentinelReady(ctx, addr, replicas) }
	}
	return nil
}
