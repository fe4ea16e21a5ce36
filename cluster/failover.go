package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// RedisWiring is what a backend gives Replication: how a node reaches
// another and whether a node runs.
type RedisWiring interface {
	// PeerAddr returns the address on which node from (a data node or a
	// sentinel) reaches data node to, through the link
	// ReplicationLink(spec, from, to), which it makes when missing. It is
	// also the address the sentinels know to by.
	PeerAddr(ctx context.Context, from, to string) (string, error)
	// Running reports whether the node's server runs (a paused one does).
	Running(ctx context.Context, node string) bool
}

// Replication keeps the roles of a Redis cluster's nodes and carries out its
// failovers, the same on every backend: Nodes reports every node with its
// current role, Primary the node that serves as primary, Promote and
// Follow change them. The zero value is not usable; see NewReplication.
type Replication struct {
	spec Spec
	wire RedisWiring

	mu      sync.Mutex
	nodes   []Node
	primary string            // replicated topologies: the node last made primary
	ids     map[string]string // the cluster topology: node ids by name
	// elected are the times the cluster topology's promotions were asked
	// of each node, to say why a promotion too soon after one waits.
	elected map[string]time.Time
}

// NewReplication returns the Replication of a cluster of spec whose nodes
// start as nodes (in Layout order, with their addresses).
func NewReplication(spec Spec, nodes []Node, wire RedisWiring) *Replication {
	r := &Replication{spec: spec, wire: wire, nodes: slices.Clone(nodes)}
	if Replicated(spec) {
		r.primary = nodes[0].Name
	}
	return r
}

// Nodes returns the nodes with their current roles: a promoted node is a
// primary, a node made to follow another a replica; an old primary left
// alone by a failover stays a primary (a split brain) until it follows.
func (r *Replication) Nodes() []Node {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.nodes)
}

// SetAddr records a node's new address.
func (r *Replication) SetAddr(name, addr string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.nodes {
		if r.nodes[i].Name == name {
			r.nodes[i].Addr = addr
		}
	}
}

func (r *Replication) node(name string) (Node, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range r.nodes {
		if n.Name == name {
			return n, nil
		}
	}
	return Node{}, fmt.Errorf("cluster: no node %q", name)
}

func (r *Replication) setRole(name, role string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.nodes {
		if r.nodes[i].Name == name {
			r.nodes[i].Role = role
		}
	}
}

// dataNodes returns the nodes that are not sentinels.
func (r *Replication) dataNodes() []Node {
	var out []Node
	for _, n := range r.Nodes() {
		if n.Role != RoleSentinel {
			out = append(out, n)
		}
	}
	return out
}

func (r *Replication) checkReplicated() error {
	if Replicated(r.spec) {
		return nil
	}
	return fmt.Errorf("%w: %s/%s has no replicas to fail over to", ErrUnavailable, r.spec.System, r.spec.Topology)
}

// Primary returns the node that serves as primary: in the sentinel topology
// the one the first running sentinel names (the roles follow what the
// sentinels did on their own), otherwise the node last promoted (n1 at
// start).
func (r *Replication) Primary(ctx context.Context) (string, error) {
	if err := r.checkReplicated(); err != nil {
		return "", err
	}
	if r.spec.Topology == TopologyCluster {
		return r.clusterPrimary(ctx)
	}
	if r.spec.Topology != TopologySentinel {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.primary, nil
	}
	var errs []error
	for _, s := range r.Nodes() {
		if s.Role != RoleSentinel || !r.wire.Running(ctx, s.Name) {
			continue
		}
		name, err := r.sentinelPrimary(ctx, s)
		if err == nil {
			r.observePrimary(name)
			return name, nil
		}
		errs = append(errs, err)
	}
	return "", fmt.Errorf("cluster: no sentinel named the primary: %w", errors.Join(errs...))
}

// observePrimary records that the sentinels name node as the primary: the
// sentinels have made the previous one a replica (or will, once it
// answers again).
func (r *Replication) observePrimary(node string) {
	r.mu.Lock()
	old := r.primary
	r.primary = node
	r.mu.Unlock()
	if old != node {
		r.setRole(node, RolePrimary)
		r.setRole(old, RoleReplica)
	}
}

// sentinelPrimary asks one sentinel for the primary and maps the address it
// names to the data node.
func (r *Replication) sentinelPrimary(ctx context.Context, s Node) (string, error) {
	reply, err := RedisDo(ctx, s.Addr, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", SentinelMaster)
	if err != nil {
		return "", fmt.Errorf("cluster: sentinel %s: %w", s.Name, err)
	}
	l, _ := reply.([]any)
	if len(l) != 2 {
		return "", fmt.Errorf("cluster: sentinel %s answered %v", s.Name, reply)
	}
	addr := net.JoinHostPort(fmt.Sprint(l[0]), fmt.Sprint(l[1]))
	for _, n := range r.dataNodes() {
		known, err := r.wire.PeerAddr(ctx, s.Name, n.Name)
		if err == nil && known == addr {
			return n.Name, nil
		}
	}
	return "", fmt.Errorf("cluster: sentinel %s names an unknown primary %s", s.Name, addr)
}

// Promote makes node the primary. Without sentinels it sends REPLICAOF NO
// ONE to node and points every other running replica at it; the old
// primary is left running as a primary of its own (a split brain until it
// follows the new one). With sentinels it makes every other replica
// ineligible (replica-priority 0), waits until the sentinel it asks has
// read that, asks it to fail over (SENTINEL FAILOVER), waits until the
// sentinels name node, and restores the replicas' priority; the sentinels
// turn the old primary into a replica. When the sentinels promote another
// node, Promote records that node as the primary and says so.
func (r *Replication) Promote(ctx context.Context, node string) error {
	if err := r.checkReplicated(); err != nil {
		return err
	}
	n, err := r.node(node)
	if err != nil {
		return err
	}
	if n.Role == RoleSentinel {
		return fmt.Errorf("cluster: %s is a sentinel, not a data node", node)
	}
	switch r.spec.Topology {
	case TopologySentinel:
		return r.sentinelFailover(ctx, n)
	case TopologyCluster:
		return r.clusterPromote(ctx, n)
	}
	if _, err := RedisDo(ctx, n.Addr, "REPLICAOF", "NO", "ONE"); err != nil {
		return fmt.Errorf("cluster: promote %s: %w", node, err)
	}
	r.mu.Lock()
	old := r.primary
	r.primary = node
	r.mu.Unlock()
	r.setRole(node, RolePrimary)
	var errs []error
	for _, d := range r.dataNodes() {
		if d.Name == node || d.Name == old || !r.wire.Running(ctx, d.Name) {
			continue
		}
		errs = append(errs, r.replicate(ctx, d, node))
	}
	return errors.Join(errs...)
}

// Follow makes node a replica of primary, through the link
// ReplicationLink(spec, node, primary) (made when missing).
func (r *Replication) Follow(ctx context.Context, node, primary string) error {
	if err := r.checkReplicated(); err != nil {
		return err
	}
	n, err := r.node(node)
	if err != nil {
		return err
	}
	p, err := r.node(primary)
	if err != nil {
		return err
	}
	if node == primary || n.Role == RoleSentinel || p.Role == RoleSentinel {
		return fmt.Errorf("cluster: %s cannot follow %s", node, primary)
	}
	if r.spec.Topology == TopologyCluster {
		return r.clusterFollow(ctx, n, p)
	}
	if err := r.replicate(ctx, n, primary); err != nil {
		return err
	}
	r.mu.Lock()
	if r.primary == node {
		r.primary = primary
	}
	r.mu.Unlock()
	return nil
}

// replicate sends REPLICAOF to n, pointing it at primary through its link,
// and records n as a replica.
func (r *Replication) replicate(ctx context.Context, n Node, primary string) error {
	via, err := r.wire.PeerAddr(ctx, n.Name, primary)
	if err != nil {
		return err
	}
	host, port, _ := net.SplitHostPort(via)
	if _, err := RedisDo(ctx, n.Addr, "REPLICAOF", host, port); err != nil {
		return fmt.Errorf("cluster: make %s follow %s: %w", n.Name, primary, err)
	}
	r.setRole(n.Name, RoleReplica)
	return nil
}

// sentinelFailover makes the sentinels promote target.
func (r *Replication) sentinelFailover(ctx context.Context, target Node) error {
	var sentinel *Node
	var others []Node
	for _, n := range r.Nodes() {
		switch {
		case n.Role == RoleSentinel && sentinel == nil && r.wire.Running(ctx, n.Name):
			sentinel = &n
		case n.Role != RoleSentinel && n.Name != target.Name && r.wire.Running(ctx, n.Name):
			others = append(others, n)
		}
	}
	if sentinel == nil {
		return fmt.Errorf("%w: sentinel failover to %s: no sentinel running", ErrUnavailable, target.Name)
	}
	setPriority := func(p int) error {
		var errs []error
		for _, n := range others {
			if _, err := RedisDo(ctx, n.Addr, "CONFIG", "SET", "replica-priority", strconv.Itoa(p)); err != nil {
				errs = append(errs, fmt.Errorf("cluster: replica-priority of %s: %w", n.Name, err))
			}
		}
		return errors.Join(errs...)
	}
	before, err := r.sentinelPrimary(ctx, *sentinel)
	if err != nil {
		return fmt.Errorf("cluster: sentinel failover to %s: %w", target.Name, err)
	}
	if err := setPriority(0); err != nil {
		return errors.Join(err, setPriority(100))
	}
	defer func() { _ = setPriority(100) }()
	if err := r.awaitIneligible(ctx, *sentinel, others); err != nil {
		return fmt.Errorf("cluster: sentinel failover to %s: %w", target.Name, err)
	}
	if err := askSentinelFailover(ctx, *sentinel); err != nil {
		return fmt.Errorf("cluster: sentinel failover to %s: %w", target.Name, err)
	}
	for {
		got, err := r.sentinelPrimary(ctx, *sentinel)
		if err == nil && got == target.Name {
			r.observePrimary(target.Name)
			return nil
		}
		if err == nil && got != before {
			// The sentinels promoted another replica: the roles record
			// what really happened, and the caller learns it at once.
			r.observePrimary(got)
			return fmt.Errorf("cluster: sentinel failover to %s: the sentinels promoted %s", target.Name, got)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: sentinel failover to %s: primary is %q: %w", target.Name, got, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// awaitIneligible waits until sentinel's own view of every replica in
// others shows priority 0. A sentinel picks the replica to promote from
// the INFO it last read of each replica (every 10 s, every second during a
// failover), not from the replicas themselves: asked at once after the
// CONFIG SET it may still see an old priority and promote another replica
// than the one meant. A replica the sentinel does not list cannot be
// picked and is not waited for.
func (r *Replication) awaitIneligible(ctx context.Context, sentinel Node, others []Node) error {
	for {
		pending, err := r.eligibleReplicas(ctx, sentinel, others)
		if err == nil && len(pending) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = fmt.Errorf("sentinel %s still sees %s eligible", sentinel.Name, strings.Join(pending, ", "))
			}
			return fmt.Errorf("%w (%v)", ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// eligibleReplicas names the nodes of others that sentinel lists as
// replicas with a priority other than 0 (SENTINEL REPLICAS).
func (r *Replication) eligibleReplicas(ctx context.Context, sentinel Node, others []Node) ([]string, error) {
	replicas, err := SentinelReplicas(ctx, sentinel.Addr)
	if err != nil {
		return nil, fmt.Errorf("cluster: sentinel %s: %w", sentinel.Name, err)
	}
	priority := map[string]string{} // replica address -> slave-priority
	for _, f := range replicas {
		priority[net.JoinHostPort(f["ip"], f["port"])] = f["slave-priority"]
	}
	var pending []string
	for _, n := range others {
		addr, err := r.wire.PeerAddr(ctx, sentinel.Name, n.Name)
		if err != nil {
			return nil, err
		}
		if p, listed := priority[addr]; listed && p != "0" {
			pending = append(pending, n.Name)
		}
	}
	return pending, nil
}

// askSentinelFailover asks sentinel to fail its master over. A sentinel
// answers NOGOODSLAVE until it has read a replica's INFO (every 10 s) and
// found it fit, as it does right after it starts or after a replica's
// priority changed: the request is repeated until ctx ends.
func askSentinelFailover(ctx context.Context, sentinel Node) error {
	for {
		_, err := RedisDo(ctx, sentinel.Addr, "SENTINEL", "FAILOVER", SentinelMaster)
		if err == nil || !strings.Contains(err.Error(), "NOGOODSLAVE") {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (the sentinel's last answer: %v)", ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
