package ssh

// redis.go holds the Redis topologies on hosts: the replicas' wiring, the
// sentinels' configs and their shared links "peers->nK", and the Redis
// Cluster's links (replication and cluster bus, one per pair), its
// joining and the watch that keeps its roles current.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
)

// clusterBusOffset is added to a Redis Cluster node's client port to make
// the port of its cluster bus (Redis's own default offset).
const clusterBusOffset = 10000

// formTimeout bounds the joining of a Redis Cluster's started nodes.
const formTimeout = 60 * time.Second

// redisNode sets the node up as a Redis data node (its redis.conf, with
// the settings of cluster.Settings) or, for the sentinel role, as a
// sentinel (its sentinel.conf, to which wireSentinel adds the primary it
// watches), each listening on its host's address only.
func (n *node) redisNode(spec cluster.Spec) {
	base := []string{"port " + strconv.Itoa(n.port), "bind " + n.conn.host.Address, `logfile ""`, "dir " + n.dir}
	if n.role == cluster.RoleSentinel {
		n.config = "sentinel.conf"
		n.configText = joinLines(base)
		n.command = quote(n.conn.host.binary("redis-sentinel")) + " sentinel.conf"
		return
	}
	n.config, n.configText = "redis.conf", joinLines(append(cluster.Settings(spec), base...))
	n.command = quote(n.conn.host.binary("redis-server")) + " redis.conf"
}

// joinLines returns the lines of a config file.
func joinLines(lines []string) string {
	return strings.Join(lines, "\n") + "\n"
}

// wireRedis wires the Redis topology (wireReplicas, wireSentinel,
// wireRedisCluster) and makes the Replication that keeps its roles.
func (c *Cluster) wireRedis() error {
	if c.spec.System != cluster.Redis {
		return nil
	}
	wire := map[string]func() error{cluster.TopologySentinel: c.wireSentinel, cluster.TopologyCluster: c.wireRedisCluster}[c.spec.Topology]
	if wire == nil {
		wire = c.wireReplicas
	}
	if err := wire(); err != nil {
		return err
	}
	c.repl = cluster.NewReplication(c.spec, c.Nodes(), wiring{c})
	return nil
}

// wireReplicas points each replica of primary-replica at n1 through its
// link "nX->n1".
func (c *Cluster) wireReplicas() error {
	for _, n := range c.nodes[1:] {
		if n.role != cluster.RoleReplica {
			continue
		}
		line, err := c.replicaOf(n, c.nodes[0])
		if err != nil {
			return err
		}
		n.configText += line + "\n"
	}
	return nil
}

// replicaOf returns the config line that makes n replicate from primary
// through their link.
func (c *Cluster) replicaOf(n, primary *node) (string, error) {
	addr, err := c.peerLinkTo(n, primary)
	if err != nil {
		return "", err
	}
	host, port, _ := net.SplitHostPort(addr)
	return "replicaof " + host + " " + port, nil
}

// wireSentinel makes the shared link "peers->nK" of every data node nK,
// through which every other node (replicas and sentinels) reaches it;
// every data node announces that address, its host's own, and the
// replicas replicate from n1 through it. Each sentinel watches n1 there
// (cluster.SentinelConfig) and is ready once it knows every replica and
// the other sentinels.
func (c *Cluster) wireSentinel() error {
	var data, sentinels []*node
	for _, n := range c.nodes {
		if n.role == cluster.RoleSentinel {
			sentinels = append(sentinels, n)
		} else {
			data = append(data, n)
		}
	}
	for _, n := range data {
		addr, err := c.peerLinkTo(n, n)
		if err != nil {
			return err
		}
		host, port, _ := net.SplitHostPort(addr)
		n.configText += joinLines([]string{"replica-announce-ip " + host, "replica-announce-port " + port})
		if n.role == cluster.RoleReplica {
			line, err := c.replicaOf(n, data[0])
			if err != nil {
				return err
			}
			n.configText += line + "\n"
		}
	}
	host, p, _ := net.SplitHostPort(c.net.Addr(cluster.ReplicationLink(c.spec, data[0].name, data[0].name)))
	port, _ := strconv.Atoi(p)
	replicas := len(data) - 1
	for _, s := range sentinels {
		s.configText += joinLines(cluster.SentinelConfig(host, port))
		s.ready = func(ctx context.Context, addr string) error { return cluster.SentinelReady(ctx, addr, replicas) }
	}
	return nil
}

// wireRedisCluster puts every node in cluster mode: it announces its
// host's address and client port, its cluster bus at clusterBusOffset
// above it, and its node name as its hostname; every pair of nodes has a
// link to the client port, "nJ->nK" (replication), and one to the bus,
// "nJ->nK/bus", cut by the run's table on the hosts. The nodes are joined
// once they answer (formRedisCluster).
func (c *Cluster) wireRedisCluster() error {
	for _, to := range c.nodes {
		bus := to.port + clusterBusOffset
		for _, from := range c.nodes {
			if from == to {
				continue
			}
			if _, err := c.peerLinkTo(from, to); err != nil {
				return err
			}
			if _, err := c.linkOn(linknet.Name(from.name, to.name+linknet.PurposeSeparator+cluster.ClusterBus), from, to, bus); err != nil {
				return err
			}
		}
		conf := append([]string{"cluster-port " + strconv.Itoa(bus)}, cluster.ClusterAnnounce(to.name, to.addr, bus)...)
		to.configText += joinLines(conf)
	}
	return nil
}

// formRedisCluster joins the started nodes of a Redis Cluster into one
// and watches their roles (cluster.Replication.JoinCluster); for the other
// topologies it does nothing.
func (c *Cluster) formRedisCluster(ctx context.Context) error {
	if c.spec.System != cluster.Redis || c.spec.Topology != cluster.TopologyCluster {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, formTimeout)
	defer cancel()
	var members []cluster.ClusterMember
	for _, n := range c.nodes {
		members = append(members, cluster.ClusterMember{
			Node:      cluster.Node{Name: n.name, Role: n.role, Addr: n.addr},
			Announced: n.addr, Bus: n.port + clusterBusOffset,
		})
	}
	stop, err := c.repl.JoinCluster(ctx, members)
	if err != nil {
		return fmt.Errorf("ssh: %w", err)
	}
	c.mu.Lock()
	c.stopRoles = stop
	c.mu.Unlock()
	return nil
}

// RoutesClients reports whether the cluster is a Redis Cluster, whose
// clients follow its redirections (cluster.Router).
func (c *Cluster) RoutesClients() bool {
	return c.spec.System == cluster.Redis && c.spec.Topology == cluster.TopologyCluster
}

// waitReplicating waits, within readyTimeout, until every replica reports
// its link to the primary up (cluster.WaitReplicating).
func (c *Cluster) waitReplicating(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	var nodes []cluster.Node
	for _, n := range c.nodes {
		nodes = append(nodes, cluster.Node{Name: n.name, Role: n.role, Addr: n.addr})
	}
	if err := cluster.WaitReplicating(ctx, nodes, 20*time.Millisecond); err != nil {
		return fmt.Errorf("ssh: %w", err)
	}
	return nil
}

// sharedLink is the Faulter and Resetter of a link "peers->nK" shared by
// every other node of the cluster: a cut or reset of its forward
// direction drops or answers, at nK's host, what any other node's host
// sends to the port; of its back direction, at each other node's host,
// what the port sends there. It touches no connection nK dials, nor the
// workers' (the harness's address).
type sharedLink struct {
	c    *Cluster
	to   *node
	port int
}

// Fault adds or removes the elements of the cut in dir.
func (s sharedLink) Fault(dir linknet.Direction, on bool) error { return s.change("drop_", dir, on) }

// Reset adds or removes the elements of the reset in dir.
func (s sharedLink) Reset(dir linknet.Direction, on bool) error { return s.change("reset_", dir, on) }

// change adds or removes the elements of the cut (kind "drop_") or reset
// (kind "reset_") in dir.
func (s sharedLink) change(kind string, dir linknet.Direction, on bool) error {
	to := s.to.conn.host.Address
	var elems []string
	var errs []error
	for _, p := range s.c.nodes {
		from := p.conn.host.Address
		if from == to {
			continue
		}
		if dir == linknet.DirectionForward {
			elems = append(elems, fmt.Sprintf("%s . %s . %d", from, to, s.port))
			continue
		}
		elem := fmt.Sprintf("%s . %d . %s", to, s.port, from)
		errs = append(errs, s.c.changeElements(p.conn, kind+"from", []string{elem}, on, p.name+"->"+s.to.name))
	}
	if len(elems) > 0 {
		errs = append(errs, s.c.changeElements(s.to.conn, kind+"to", elems, on, "peers->"+s.to.name))
	}
	return errors.Join(errs...)
}
