// Package cluster owns the systems under test: what each system is and can
// do (Systems), the plan every backend follows (the nodes and roles of
// Layout, the Redis topologies, configs and failovers of Replication, the
// other systems' settings, the readiness probes, the clock files), the
// leftovers of dead harnesses, and the backends' declaration (Backend).
// The network of links every client and replication link goes through is
// package cluster/linknet. The backends live in subpackages
// (cluster/local: processes, cluster/docker: containers) and only start,
// stop, pause and wire nodes.
package cluster

import (
	"context"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
)

// The systems a cluster can run.
const (
	Redis     = "redis"
	Postgres  = "postgres"
	ZooKeeper = "zookeeper"
	Etcd      = "etcd"
	MariaDB   = "mariadb"
)

// ErrUnavailable reports that a node cannot do what was asked (for instance a
// Go binary whose clock cannot be skewed). Faults test for it with errors.Is.
// It is linknet.ErrUnavailable, which the network of links reports for a
// fault it cannot apply: one error for both.
var ErrUnavailable = linknet.ErrUnavailable

// Spec describes the cluster a scenario needs.
type Spec struct {
	System      string // Redis, Postgres, ZooKeeper, Etcd, MariaDB
	Topology    string // redis: "masters" (default), "primary-replica", "sentinel", "cluster"; zookeeper/etcd: "" (one per node)
	Nodes       int    // number of server nodes (masters, ensemble members); replicas and sentinels are counted by the topology
	Persistence bool   // redis: appendonly yes, appendfsync always
	LogDir      string // where node logs are written (the run's store directory); a temp dir when empty
	// ClockSkew says that the run skews node clocks (a clock fault that
	// is expected to work): a backend that cannot skew them must fail
	// Start saying why, rather than start a cluster whose clock faults
	// will all fail.
	ClockSkew bool
}

// Node is one server of the cluster.
type Node struct {
	Name string // "n1", "n2", ...
	Role string // "primary", "replica", "sentinel", "" for peers
	Addr string // host:port clients reach it on directly (proxies point here)
}

// Cluster is a running system under test. Close tears everything down and is
// safe to call more than once.
type Cluster interface {
	System() string
	Nodes() []Node
	Close() error
}

// Killer is a cluster whose nodes can be killed (SIGKILL) and started again
// with their data dir.
type Killer interface {
	Kill(ctx context.Context, node string) error
	Start(ctx context.Context, node string) error
}

// Pauser is a cluster whose nodes can be paused (SIGSTOP) and resumed.
type Pauser interface {
	Pause(ctx context.Context, node string) error
	Resume(ctx context.Context, node string) error
}

// ClockSkewer is a cluster whose nodes' wall clocks can be offset. An offset
// of zero restores the true time. It returns ErrUnavailable for nodes that
// cannot be skewed.
type ClockSkewer interface {
	SetClockOffset(node string, offset time.Duration) error
}

// Router is a cluster whose clients find the node that serves a key
// themselves: a Redis Cluster node answers MOVED for a key of a slot it
// does not serve, naming the node that does. A failover then leaves the
// workers' links where they are.
type Router interface {
	RoutesClients() bool
}

// Failoverer is a replicated cluster (Redis "primary-replica", "sentinel"
// and "cluster" topologies) whose primary can be replaced by a replica. Replication is
// asynchronous: writes acknowledged by the old primary may be missing on the
// new one. Promote does not move clients: the nemesis points the clients'
// links at the new primary with linknet.Network.SetUpstream (the old primary's
// client links to the Addr of the node returned by Primary).
type Failoverer interface {
	// Primary returns the name of the node that currently serves as primary:
	// in the "sentinel" topology the one the sentinels report, in the
	// "cluster" topology the master of slot 0 (the first shard's), otherwise
	// the node last promoted (n1 at start).
	Primary(ctx context.Context) (string, error)
	// Promote makes node the primary. Without sentinels it sends REPLICAOF
	// NO ONE to node and points the other replicas at it; the old primary is
	// left running as a primary of its own (a split brain until it is
	// killed or demoted). With sentinels it asks them to fail over
	// (SENTINEL FAILOVER) and waits until they report node as primary. In
	// a Redis Cluster it sends CLUSTER FAILOVER FORCE to the replica node
	// and waits until it is a master; its old master becomes its replica
	// once the cluster bus tells it.
	Promote(ctx context.Context, node string) error
}
