package docker

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
)

// Redis Cluster ports in a container: its cluster bus, and the relays on
// every container's loopback that lead to node nk's bus.
const (
	clusterBusPort      = "16379/tcp"
	clusterBusRelayBase = 17000 // + k: the relay to nk's cluster bus
)

// planRedisCluster: each node runs redis-server in cluster mode and
// announces 127.0.0.1:redisRelayBase+k as its client port and
// 127.0.0.1:clusterBusRelayBase+k as its bus, in every container the same:
// in node j's container relays over "nJ->nK" and "nJ->nK/bus" lead there,
// so the links are per pair, as on the local backend. The nodes are joined
// once they answer (formRedisCluster).
func (c *Cluster) planRedisCluster() error {
	for _, n := range c.nodes {
		if err := c.publish(n, redisPort, clusterBusPort); err != nil {
			return err
		}
	}
	for _, n := range c.nodes {
		for _, p := range c.nodes {
			if p == n {
				continue
			}
			n.relay(redisRelayPort(p), linknet.Name(n.Name, p.Name), p, redisPort)
			n.relay(clusterBusRelayBase+p.index, linknet.Name(n.Name, p.Name+linknet.PurposeSeparator+cluster.ClusterBus), p, clusterBusPort)
		}
		conf := append(cluster.Settings(c.spec), "port "+portNumber(redisPort), "bind 0.0.0.0", "dir "+dataDir, `logfile ""`,
			"cluster-port "+portNumber(clusterBusPort))
		conf = append(conf, cluster.ClusterAnnounce(n.Name, announced(n), clusterBusRelayBase+n.index)...)
		n.files["redis.conf"] = strings.Join(conf, "\n") + "\n"
		n.server = command(append([]string{"redis-server", confDir + "/redis.conf"}, c.extra...)...) + logTo(n)
	}
	return nil
}

// announced is the address of n's client port as every peer dials it.
func announced(n *node) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(redisRelayPort(n)))
}

// formRedisCluster joins the running nodes into one cluster and watches
// their roles (cluster.Replication.JoinCluster).
func (c *Cluster) formRedisCluster(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var members []cluster.ClusterMember
	for _, n := range c.nodes {
		members = append(members, cluster.ClusterMember{Node: n.Node, Announced: announced(n), Bus: clusterBusRelayBase + n.index})
	}
	stop, err := c.repl.JoinCluster(ctx, members)
	if err != nil {
		return fmt.Errorf("docker: %w", err)
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
