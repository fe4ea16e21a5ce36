package cluster

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
)

// The Redis plan, which every backend follows: the topologies, the roles of
// their nodes, the configuration every node and sentinel gets, and the
// links replication goes through. A backend adds only where a node listens,
// logs and keeps its data, and the address it dials a peer on.

// Redis topologies.
const (
	// TopologyMasters is N independent Redis masters (Redlock's setting),
	// the default.
	TopologyMasters = "masters"
	// TopologyPrimaryReplica is n1 primary and n2.. asynchronous replicas,
	// each replicating through the link "nX->n1".
	TopologyPrimaryReplica = "primary-replica"
	// TopologySentinel is TopologyPrimaryReplica watched by Sentinels
	// redis-sentinel nodes s1, s2, s3 that fail over on their own; every
	// replica and sentinel reaches data node nK through the shared link
	// "peers->nK".
	TopologySentinel = "sentinel"
)

// Node roles. ZooKeeper and etcd members have the role "".
const (
	RolePrimary  = "primary"
	RoleReplica  = "replica"
	RoleSentinel = "sentinel"
)

// SentinelMaster is the name the sentinels monitor the primary under.
const SentinelMaster = "mymaster"

// PeersLink is the "from" end of a link shared by every peer of a node:
// "peers->n1". In the Redis sentinel topology replicas and sentinels learn
// each other's addresses from the servers, so every peer dials the same
// address of a node and the link is shared. A cut of a shared link stops
// the connections to its node, not those its node dials (docs/network.md).
// etcd members, which also dial one advertised address per peer, get
// per-pair links instead: the local backend tells them apart by their
// group ids (Network.LinkFrom).
const PeersLink = "peers"

// Sentinels is the number of sentinels of the sentinel topology.
const Sentinels = 3

// Sentinel timing: short, so that a failover happens within a run.
const (
	SentinelDownAfter       = time.Second
	SentinelFailoverTimeout = 3 * time.Second
)

// Replicated reports whether spec is a Redis topology with replicas (and so
// a primary that can fail over): primary-replica, sentinel and cluster.
func Replicated(spec Spec) bool {
	return spec.System == Redis && (spec.Topology == TopologyPrimaryReplica || spec.Topology == TopologySentinel || spec.Topology == TopologyCluster)
}

// ReplicationLink returns the name of the link through which data node from
// replicates from (or, for a sentinel, watches) data node to: "from->to",
// or "peers->to" in the sentinel topology.
func ReplicationLink(spec Spec, from, to string) string {
	if spec.Topology == TopologySentinel {
		return linknet.Name(PeersLink, to)
	}
	return linknet.Name(from, to)
}

// RedisConfig returns the configuration lines (redis.conf syntax) of every
// Redis data node of spec, whatever runs it: persistence per the spec
// (appendonly with an fsync on every write, or nothing at all, so that a
// restart loses every key) and replication that starts at once.
func RedisConfig(spec Spec) []string {
	conf := []string{
		"protected-mode no",
		"daemonize no",
		`save ""`,
		"repl-diskless-sync yes",
		"repl-diskless-sync-delay 0",
		"repl-ping-replica-period 1",
	}
	if spec.Topology == TopologyCluster {
		conf = append(conf, clusterConfig()...)
	}
	if spec.Persistence {
		return append(conf, "appendonly yes", "appendfsync always")
	}
	return append(conf, "appendonly no")
}

// ReplicaOf returns the configuration line that makes a node replicate from
// host:port.
func ReplicaOf(host string, port int) string {
	return "replicaof " + host + " " + strconv.Itoa(port)
}

// SentinelConfig returns the configuration lines of a sentinel that
// monitors the primary at host:port, agrees on a failover with one other
// sentinel, and fails over quickly.
func SentinelConfig(host string, port int) []string {
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	return []string{
		"protected-mode no",
		"daemonize no",
		"sentinel monitor " + SentinelMaster + " " + host + " " + strconv.Itoa(port) + " 2",
		"sentinel down-after-milliseconds " + SentinelMaster + " " + ms(SentinelDownAfter),
		"sentinel failover-timeout " + SentinelMaster + " " + ms(SentinelFailoverTimeout),
		"sentinel parallel-syncs " + SentinelMaster + " 1",
	}
}

// SentinelReady reports whether the sentinel at addr knows the given number
// of replicas and the other sentinels, without which it could not agree on
// a failover.
func SentinelReady(ctx context.Context, addr string, replicas int) error {
	reply, err := RedisDo(ctx, addr, "SENTINEL", "MASTER", SentinelMaster)
	if err != nil {
		return err
	}
	fields := sentinelFields(reply)
	if fields["num-slaves"] != strconv.Itoa(replicas) || fields["num-other-sentinels"] != strconv.Itoa(Sentinels-1) {
		return fmt.Errorf("cluster: sentinel knows %s replicas and %s other sentinels, want %d and %d",
			fields["num-slaves"], fields["num-other-sentinels"], replicas, Sentinels-1)
	}
	return nil
}

// SentinelReplicas returns what the sentinel at addr knows of each replica
// of its master (SENTINEL REPLICAS): one map of field to value per
// replica, with fields such as ip, port, slave-priority and info-refresh
// (milliseconds since it last read the replica's INFO).
func SentinelReplicas(ctx context.Context, addr string) ([]map[string]string, error) {
	reply, err := RedisDo(ctx, addr, "SENTINEL", "REPLICAS", SentinelMaster)
	if err != nil {
		return nil, err
	}
	entries, _ := reply.([]any)
	out := make([]map[string]string, 0, len(entries))
	for _, e := range entries {
		out = append(out, sentinelFields(e))
	}
	return out, nil
}

// sentinelFields reads a sentinel's flat list of field names and values,
// as SENTINEL MASTER answers and each entry of SENTINEL REPLICAS.
func sentinelFields(reply any) map[string]string {
	l, _ := reply.([]any)
	fields := make(map[string]string, len(l)/2)
	for i := 0; i+1 < len(l); i += 2 {
		fields[fmt.Sprint(l[i])] = fmt.Sprint(l[i+1])
	}
	return fields
}
