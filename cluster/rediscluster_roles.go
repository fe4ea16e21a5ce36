package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// clusterViewTimeout bounds each read of a node's view when the roles are
// refreshed: a paused node must not hold the others' roles back.
const clusterViewTimeout = 500 * time.Millisecond

// SetClusterIDs records the node ids of a Redis Cluster (FormCluster's),
// by which its roles are read.
func (r *Replication) SetClusterIDs(ids map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ids = ids
}

// clusterName returns the node name of a cluster node id, "" when unknown.
func (r *Replication) clusterName(id string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, i := range r.ids {
		if i == id {
			return name
		}
	}
	return ""
}

// clusterViews reads every data node's view at once; a node that does not
// answer within clusterViewTimeout has none.
func (r *Replication) clusterViews(ctx context.Context) map[string]clusterView {
	nodes := r.dataNodes()
	views := make([]*clusterView, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			vctx, cancel := context.WithTimeout(ctx, clusterViewTimeout)
			defer cancel()
			if v, err := readClusterView(vctx, n.Addr); err == nil && v.self != "" {
				views[i] = &v
			}
		}()
	}
	wg.Wait()
	out := map[string]clusterView{}
	for i, n := range nodes {
		if views[i] != nil {
			out[n.Name] = *views[i]
		}
	}
	return out
}

// RefreshRoles sets every Redis Cluster node's role to its current one: a
// node that answers has the role it gives itself (a master cut off from
// the others stays a primary until it learns of its replica's promotion);
// a node that does not answer is a replica when a node that answers sees
// it as one, or as a master without slots (its replica took them), and
// otherwise a primary. Outside the cluster topology it does nothing.
func (r *Replication) RefreshRoles(ctx context.Context) error {
	if r.spec.Topology != TopologyCluster {
		return nil
	}
	views := r.clusterViews(ctx)
	if len(views) == 0 {
		return fmt.Errorf("cluster: no Redis Cluster node answered")
	}
	for _, n := range r.dataNodes() {
		if v, ok := views[n.Name]; ok {
			r.setRole(n.Name, lineRole(v.lines[v.self]))
			continue
		}
		r.mu.Lock()
		id := r.ids[n.Name]
		r.mu.Unlock()
		role := RolePrimary
		for _, v := range views {
			if l, ok := v.lines[id]; ok && lineRole(l) == RoleReplica {
				role = RoleReplica
			}
		}
		r.setRole(n.Name, role)
	}
	return nil
}

// lineRole is the role a view's line gives its node: a replica, or a
// master without slots (one whose slots a promoted replica took), is a
// replica.
func lineRole(l clusterLine) string {
	if l.has("master") && len(l.slots) > 0 {
		return RolePrimary
	}
	return RoleReplica
}

// ClusterRolesInterval is how often the roles of a running Redis Cluster
// are read again (WatchRoles, from JoinCluster).
const ClusterRolesInterval = 200 * time.Millisecond

// JoinCluster joins fresh cluster-mode nodes into one Redis Cluster
// (FormCluster), records their ids (SetClusterIDs) and watches their
// roles every ClusterRolesInterval (WatchRoles) until stop is called:
// what every backend does once the nodes of its cluster topology answer.
func (r *Replication) JoinCluster(ctx context.Context, members []ClusterMember) (stop func(), err error) {
	ids, err := FormCluster(ctx, members)
	if err != nil {
		return nil, err
	}
	r.SetClusterIDs(ids)
	return r.WatchRoles(ClusterRolesInterval), nil
}

// WatchRoles refreshes the roles of a Redis Cluster (RefreshRoles) every
// interval until the returned stop is called, so that Nodes reports the
// promotions the cluster makes on its own. Outside the cluster topology it
// starts nothing.
func (r *Replication) WatchRoles(interval time.Duration) (stop func()) {
	if r.spec.Topology != TopologyCluster {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			_ = r.RefreshRoles(ctx)
			select {
			case <-ctx.Done():
				return
			case <-time.After(interval):
			}
		}
	}()
	return func() { cancel(); <-done }
}

// clusterPrimary returns the master of slot 0 (the first shard's): of the
// masters the answering nodes see owning it, the one of the highest config
// epoch, as the cluster itself decides.
func (r *Replication) clusterPrimary(ctx context.Context) (string, error) {
	_ = r.RefreshRoles(ctx)
	var best clusterLine
	for _, v := range r.clusterViews(ctx) {
		for _, l := range v.lines {
			if l.serves(0) && !l.has("fail") && (best.id == "" || l.epoch > best.epoch) {
				best = l
			}
		}
	}
	if name := r.clusterName(best.id); name != "" {
		return name, nil
	}
	return "", fmt.Errorf("cluster: no Redis Cluster node names the master of slot 0")
}

// clusterPromote makes the replica node its shard's master with CLUSTER
// FAILOVER FORCE, which starts the election at once, without waiting for
// the master's replication offset (the master may not answer): the
// majority of masters vote, and the master learns of the promotion from
// the cluster bus and becomes a replica. It waits until node says it is a
// master. Redis runs a replica's election only ClusterFailoverRetry after
// its last one, so a promotion asked sooner waits until then; when ctx
// ends first, the error says so.
func (r *Replication) clusterPromote(ctx context.Context, n Node) error {
	r.mu.Lock()
	last, again := r.elected[n.Name]
	if r.elected == nil {
		r.elected = map[string]time.Time{}
	}
	now := time.Now()
	r.elected[n.Name] = now
	r.mu.Unlock()
	if err := redisOK(ctx, n.Addr, "CLUSTER", "FAILOVER", "FORCE"); err != nil {
		return fmt.Errorf("cluster: promote %s: %w", n.Name, err)
	}
	for {
		v, err := readClusterView(ctx, n.Addr)
		if err == nil && lineRole(v.lines[v.self]) == RolePrimary {
			r.setRole(n.Name, RolePrimary)
			return r.RefreshRoles(ctx)
		}
		select {
		case <-ctx.Done():
			err = errors.Join(ctx.Err(), err)
			if since := now.Sub(last); again && since < ClusterFailoverRetry {
				err = fmt.Errorf("%w (its previous promotion was asked %v before this one; Redis runs a replica's next election %v after its last)", err, since.Round(time.Millisecond), ClusterFailoverRetry)
			}
			return fmt.Errorf("cluster: promote %s: %w", n.Name, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// clusterFollow makes node a replica of primary: a node the promotion
// left a master without slots is told CLUSTER REPLICATE; one that still
// owns slots has not yet heard of the promotion (the cluster bus will tell
// it) and is waited for. It returns once node says it replicates primary.
func (r *Replication) clusterFollow(ctx context.Context, n, p Node) error {
	r.mu.Lock()
	want := r.ids[p.Name]
	r.mu.Unlock()
	var last error
	for {
		v, err := readClusterView(ctx, n.Addr)
		self := v.lines[v.self]
		switch {
		case err != nil:
			last = err
		case self.has("slave") && self.master == want:
			return r.RefreshRoles(ctx)
		case self.has("slave") || len(self.slots) == 0:
			last = redisOK(ctx, n.Addr, "CLUSTER", "REPLICATE", want)
		default:
			last = fmt.Errorf("%s still owns slots %v", n.Name, self.slots)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: make %s follow %s: %w", n.Name, p.Name, errors.Join(ctx.Err(), last))
		case <-time.After(50 * time.Millisecond):
		}
	}
}
