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
	"syscall"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
)

// redisClusterGidBase is the base of the group ids the nodes of a Redis
// Cluster run with: node nK runs as root with primary group id
// redisClusterGidBase+K, so that the kernel tells the connections it dials
// (replication and cluster bus) apart from the other nodes', as for etcd
// (etcdGidBase, whose range it follows).
const redisClusterGidBase = etcdGidBase + 0x40

// clusterPorts are a cluster node's own ports and the addresses its peers
// reach them on.
type clusterPorts struct {
	bus       int    // the port of its cluster bus
	announced string // its client port, as every peer dials it
	busAt     int    // the port of its cluster bus, as every peer dials it
}

// setupRedisCluster creates the nodes of the Redis Cluster topology. Every
// node announces one address of its client port and one of its cluster bus
// to its peers, the same in every peer's view; node nJ runs with the group
// id redisClusterGidBase+J, so the kernel puts its connections to nK on
// the per-source links "nJ->nK" and "nJ->nK/bus" (linknet.Network.LinkFrom).
// Isolating a node cuts both the connections it dials and those dialled to
// it. The nodes are joined into one cluster once they answer
// (formRedisCluster).
func (c *Cluster) setupRedisCluster() error {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return fmt.Errorf("local: redis-server: %w", err)
	}
	layout, err := cluster.Layout(c.spec)
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	ports := map[string]*clusterPorts{}
	for i, l := range layout {
		n, err := c.addNode(l.Name, l.Role)
		if err != nil {
			return err
		}
		p := &clusterPorts{}
		if p.bus, err = cluster.FreePort(); err != nil {
			return err
		}
		ports[n.name] = p
		n.cred = &syscall.Credential{Uid: 0, Gid: uint32(redisClusterGidBase + i + 1), NoSetGroups: true}
	}
	c.clusterPorts = ports
	if err := c.clusterLinks(ports); err != nil {
		return err
	}
	for _, n := range c.nodes {
		p := ports[n.name]
		conf := append(cluster.Settings(c.spec), "port "+strconv.Itoa(n.port), "bind 127.0.0.1", `logfile ""`, "dir "+n.dir,
			"cluster-port "+strconv.Itoa(p.bus))
		conf = append(conf, cluster.ClusterAnnounce(n.name, p.announced, p.busAt)...)
		path := filepath.Join(n.dir, "redis.conf")
		if err := os.WriteFile(path, []byte(strings.Join(conf, "\n")+"\n"), 0o644); err != nil {
			return fmt.Errorf("local: redis config: %w", err)
		}
		n.argv = []string{bin, path}
		addr := n.addr()
		n.ready = func(ctx context.Context) error { return cluster.RedisReady(ctx, addr) }
	}
	c.repl = cluster.NewReplication(c.spec, c.infos(), wiring{c})
	return nil
}

// clusterLinks makes the per-source links between every pair of cluster
// nodes, to the client port and to the cluster bus, and records the
// addresses each node announces.
func (c *Cluster) clusterLinks(ports map[string]*clusterPorts) error {
	for _, to := range c.nodes {
		p := ports[to.name]
		for j, from := range c.nodes {
			if from == to {
				continue
			}
			gid := redisClusterGidBase + j + 1
			a, err := c.linkFrom(from.name, to.name, gid, to.addr())
			if err != nil {
				return err
			}
			bus := net.JoinHostPort("127.0.0.1", strconv.Itoa(p.bus))
			b, err := c.linkFrom(from.name, to.name+linknet.PurposeSeparator+cluster.ClusterBus, gid, bus)
			if err != nil {
				return err
			}
			ah, _ := splitAddr(a)
			bh, bp := splitAddr(b)
			if ah != bh {
				return fmt.Errorf("local: %s's links are on two hosts, %s and %s", to.name, a, b)
			}
			p.announced, p.busAt = a, bp
		}
	}
	return nil
}

// formRedisCluster joins the started nodes into one cluster and watches
// their roles (cluster.Replication.JoinCluster).
func (c *Cluster) formRedisCluster(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.readyTimeout)
	defer cancel()
	var members []cluster.ClusterMember
	for _, n := range c.nodes {
		p := c.clusterPorts[n.name]
		members = append(members, cluster.ClusterMember{Node: n.info(), Announced: p.announced, Bus: p.busAt})
	}
	stop, err := c.repl.JoinCluster(ctx, members)
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	c.stopRoles = stop
	return nil
}
