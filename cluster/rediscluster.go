package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// The Redis Cluster plan, which every backend follows: the nodes of the
// "cluster" topology and their shards, the configuration every node gets,
// how the nodes are joined into one cluster, and how its roles are read.
// A backend adds where a node listens, logs and keeps its data, and the
// addresses it announces to its peers.

// TopologyCluster is Redis Cluster mode: masters n1..nM, each owning an
// equal range of the hash slots, and one replica each, n(M+1)..n(2M)
// (nM+k replicates nk); at least three masters. Every node reaches every
// other through the links "nJ->nK" (replication) and "nJ->nK/bus" (the
// cluster bus), one per pair, and announces its node name as its hostname,
// which its redirections (MOVED) and CLUSTER SLOTS name.
const TopologyCluster = "cluster"

// ClusterBus is the purpose of the link a Redis Cluster node's cluster bus
// goes through: "n2->n1/bus".
const ClusterBus = "bus"

// ClusterMasters is the fewest masters of the cluster topology: a failover
// needs the votes of a majority of them.
const ClusterMasters = 3

// ClusterNodeTimeout is the cluster topology's cluster-node-timeout: a node
// that does not answer the bus's pings for this long is suspected to fail
// (its replica is promoted once a majority of masters agree), and a master
// that reaches no majority of masters for this long stops taking writes.
const ClusterNodeTimeout = 2 * time.Second

// ClusterFailoverRetry is the least time between two failover elections of
// one Redis Cluster replica, forced ones too: Redis waits for votes for an
// auth timeout (twice cluster-node-timeout, at least 2 s) and starts the
// replica's next election only twice that after its last one began
// (clusterHandleSlaveFailover's auth_retry_time). A CLUSTER FAILOVER FORCE
// sent sooner is accepted and waits until then. A master votes for a
// replica of a given master at most once per twice cluster-node-timeout,
// which this also covers.
const ClusterFailoverRetry = 2 * max(2*ClusterNodeTimeout, 2*time.Second)

// clusterSlots is the number of hash slots of a Redis Cluster.
const clusterSlots = 16384

// clusterNodes returns the nodes of the cluster topology with count
// masters (at least ClusterMasters): the masters first, then a replica of
// each in the same order.
func clusterNodes(count int) ([]Node, error) {
	m := max(count, ClusterMasters)
	out := numbered(2*m, RolePrimary, RolePrimary)
	for i := m; i < 2*m; i++ {
		out[i].Role = RoleReplica
	}
	return out, nil
}

// ClusterMasterOf returns the node that replica starts as a replica of in
// the cluster topology (nM+k's is nk), "" for a node that starts as a
// master.
func ClusterMasterOf(nodes []Node, replica string) string {
	m := len(nodes) / 2
	for i, n := range nodes {
		if n.Name == replica && i >= m {
			return nodes[i-m].Name
		}
	}
	return ""
}

// clusterConfig returns the configuration lines that put a Redis node in
// cluster mode: redirections name its announced hostname (its node name),
// a replica is promoted however long it lost its master (validity factor
// 0), and replicas never migrate to another master, so that the shards
// stay as the plan made them.
func clusterConfig() []string {
	return []string{
		"cluster-enabled yes",
		"cluster-config-file nodes.conf",
		"cluster-node-timeout " + strconv.FormatInt(ClusterNodeTimeout.Milliseconds(), 10),
		"cluster-replica-validity-factor 0",
		"cluster-allow-replica-migration no",
		"cluster-preferred-endpoint-type hostname",
	}
}

// ClusterAnnounce returns the configuration lines by which a cluster node
// named name announces itself to its peers: the address they reach its
// client port on (for replication and the redirections' port), the port of
// its cluster bus on the same host, and its name as its hostname.
func ClusterAnnounce(name, addr string, busPort int) []string {
	host, port, _ := net.SplitHostPort(addr)
	return []string{
		"cluster-announce-ip " + host,
		"cluster-announce-port " + port,
		"cluster-announce-bus-port " + strconv.Itoa(busPort),
		"cluster-announce-hostname " + name,
	}
}

// ClusterMember is one node of a cluster as FormCluster joins it: the node
// (its Addr the harness's own way to it) and the address and bus port its
// peers reach it on.
type ClusterMember struct {
	Node
	Announced string // host:port of its client port, as the peers dial it
	Bus       int    // the port of its cluster bus on Announced's host
}

// FormCluster joins fresh cluster-mode nodes into the plan's cluster: each
// master gets its range of slots and a config epoch of its own, the first
// node meets every other, each replica replicates its master
// (ClusterMasterOf), and FormCluster returns the node ids by name once
// every node says cluster_state:ok and sees every node in the role the
// plan gives it, and every replica's link to its master is up.
func FormCluster(ctx context.Context, members []ClusterMember) (map[string]string, error) {
	ids := map[string]string{}
	nodes := make([]Node, len(members))
	for i, m := range members {
		nodes[i] = m.Node
		id, err := redisString(ctx, m.Addr, "CLUSTER", "MYID")
		if err != nil {
			return nil, fmt.Errorf("cluster: %s: CLUSTER MYID: %w", m.Name, err)
		}
		ids[m.Name] = id
	}
	masters := len(members) / 2
	for i, m := range members[:masters] {
		lo, hi := i*clusterSlots/masters, (i+1)*clusterSlots/masters-1
		if err := redisOK(ctx, m.Addr, "CLUSTER", "SET-CONFIG-EPOCH", strconv.Itoa(i+1)); err != nil {
			return nil, fmt.Errorf("cluster: %s: %w", m.Name, err)
		}
		if err := redisOK(ctx, m.Addr, "CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(lo), strconv.Itoa(hi)); err != nil {
			return nil, fmt.Errorf("cluster: %s: %w", m.Name, err)
		}
	}
	for _, m := range members[1:] {
		host, port, _ := net.SplitHostPort(m.Announced)
		if err := redisOK(ctx, members[0].Addr, "CLUSTER", "MEET", host, port, strconv.Itoa(m.Bus)); err != nil {
			return nil, fmt.Errorf("cluster: %s meets %s: %w", members[0].Name, m.Name, err)
		}
	}
	if err := awaitCluster(ctx, members, func(v clusterView) error { return v.knowsAll(len(members)) }); err != nil {
		return nil, err
	}
	for _, m := range members[masters:] {
		master := ids[ClusterMasterOf(nodes, m.Name)]
		if err := redisOK(ctx, m.Addr, "CLUSTER", "REPLICATE", master); err != nil {
			return nil, fmt.Errorf("cluster: %s replicates %s: %w", m.Name, master, err)
		}
	}
	err := awaitCluster(ctx, members, func(v clusterView) error { return v.agrees(nodes, ids) })
	return ids, err
}

// awaitCluster waits until every member's view passes check, its state is
// ok and, for a replica, its link to its master is up.
func awaitCluster(ctx context.Context, members []ClusterMember, check func(clusterView) error) error {
	for {
		var errs []error
		for _, m := range members {
			if err := memberReady(ctx, m, check); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", m.Name, err))
			}
		}
		if len(errs) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: the Redis Cluster did not form: %w (%v)", ctx.Err(), errors.Join(errs...))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// memberReady checks one member's view and state.
func memberReady(ctx context.Context, m ClusterMember, check func(clusterView) error) error {
	v, err := readClusterView(ctx, m.Addr)
	if err != nil {
		return err
	}
	if err := check(v); err != nil {
		return err
	}
	state, err := RedisInfoField(ctx, m.Addr, "replication", "role")
	if err != nil {
		return err
	}
	if state == "slave" {
		link, err := RedisInfoField(ctx, m.Addr, "replication", "master_link_status")
		if err != nil || link != "up" {
			return fmt.Errorf("replication link %q (%v)", link, err)
		}
	}
	info, err := redisString(ctx, m.Addr, "CLUSTER", "INFO")
	if err != nil {
		return err
	}
	if !strings.Contains(info, "cluster_state:ok") {
		return errors.New("cluster_state is not ok")
	}
	return nil
}

// redisString sends one command and returns its string reply.
func redisString(ctx context.Context, addr string, args ...string) (string, error) {
	r, err := RedisDo(ctx, addr, args...)
	if err != nil {
		return "", err
	}
	s, ok := r.(string)
	if !ok {
		return "", fmt.Errorf("cluster: %s answered %v", strings.Join(args, " "), r)
	}
	return s, nil
}

// redisOK sends one command that answers OK.
func redisOK(ctx context.Context, addr string, args ...string) error {
	_, err := redisString(ctx, addr, args...)
	return err
}

// clusterLine is one node as a cluster node's CLUSTER NODES sees it.
type clusterLine struct {
	id     string
	flags  []string
	master string // the id of its master, "-" for a master
	epoch  int64  // its config epoch
	slots  [][2]int
}

func (l clusterLine) has(flag string) bool {
	for _, f := range l.flags {
		if f == flag {
			return true
		}
	}
	return false
}

// serves reports whether the line's node is a master that owns slot.
func (l clusterLine) serves(slot int) bool {
	if !l.has("master") {
		return false
	}
	for _, r := range l.slots {
		if r[0] <= slot && slot <= r[1] {
			return true
		}
	}
	return false
}

// clusterView is what one cluster node knows of the cluster (CLUSTER
// NODES): the lines by node id, and its own id.
type clusterView struct {
	self  string
	lines map[string]clusterLine
}

// readClusterView asks the node at addr for its CLUSTER NODES.
func readClusterView(ctx context.Context, addr string) (clusterView, error) {
	s, err := redisString(ctx, addr, "CLUSTER", "NODES")
	if err != nil {
		return clusterView{}, err
	}
	return parseClusterNodes(s), nil
}

// parseClusterNodes reads a CLUSTER NODES reply. Slots being imported or
// migrated ("[...]") are skipped: the harness never moves slots.
func parseClusterNodes(s string) clusterView {
	v := clusterView{lines: map[string]clusterLine{}}
	for _, row := range strings.Split(strings.TrimSpace(s), "\n") {
		f := strings.Fields(row)
		if len(f) < 8 {
			continue
		}
		l := clusterLine{id: f[0], flags: strings.Split(f[2], ","), master: f[3]}
		l.epoch, _ = strconv.ParseInt(f[6], 10, 64)
		for _, r := range f[8:] {
			if strings.HasPrefix(r, "[") {
				continue
			}
			lo, hi, found := strings.Cut(r, "-")
			if !found {
				hi = lo
			}
			a, err1 := strconv.Atoi(lo)
			b, err2 := strconv.Atoi(hi)
			if err1 == nil && err2 == nil {
				l.slots = append(l.slots, [2]int{a, b})
			}
		}
		if l.has("myself") {
			v.self = l.id
		}
		v.lines[l.id] = l
	}
	return v
}

// knowsAll reports whether the view has n nodes, none of them still in
// the handshake.
func (v clusterView) knowsAll(n int) error {
	if len(v.lines) != n {
		return fmt.Errorf("knows %d nodes, want %d", len(v.lines), n)
	}
	for _, l := range v.lines {
		if l.has("handshake") || l.has("noaddr") {
			return fmt.Errorf("node %s is still in the handshake", l.id)
		}
	}
	return nil
}

// agrees reports whether the view has every node of the plan in its
// planned role: a master with slots, a replica of its planned master.
func (v clusterView) agrees(nodes []Node, ids map[string]string) error {
	if err := v.knowsAll(len(nodes)); err != nil {
		return err
	}
	for _, n := range nodes {
		l := v.lines[ids[n.Name]]
		master := ClusterMasterOf(nodes, n.Name)
		switch {
		case master == "" && (!l.has("master") || len(l.slots) == 0):
			return fmt.Errorf("sees %s as %v with slots %v, not a master with slots", n.Name, l.flags, l.slots)
		case master != "" && (!l.has("slave") || l.master != ids[master]):
			return fmt.Errorf("sees %s as %v of %s, not a replica of %s", n.Name, l.flags, l.master, master)
		}
	}
	return nil
}
