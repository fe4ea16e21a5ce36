package conformance

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
	"github.com/redis/go-redis/v9"
)

// The cases of the Redis Cluster topology (cluster.TopologyCluster): a key
// lives on the master of its slot and its replica only, so each case
// writes keys that the master it means owns.

// isRedisCluster reports whether the topology is Redis Cluster mode.
func (e *env) isRedisCluster() bool {
	return e.top.spec.System == cluster.Redis && e.top.spec.Topology == cluster.TopologyCluster
}

// reader returns how the suite reads a key on a node: on a Redis Cluster
// the connection is READONLY first, so that a replica answers for its
// master's slots rather than redirecting.
func (e *env) reader() func(ctx context.Context, addr, key string) (string, bool, error) {
	if !e.isRedisCluster() {
		return e.sys.probe.read
	}
	return func(ctx context.Context, addr, key string) (string, bool, error) {
		quietRedis.Do(func() { redis.SetLogger(redisQuiet{}) })
		c := redis.NewClient(&redis.Options{
			Addr: addr, DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second,
			MaxRetries: -1, PoolSize: 1, DisableIdentity: true,
			OnConnect: func(ctx context.Context, cn *redis.Conn) error { return cn.ReadOnly(ctx).Err() },
		})
		defer c.Close()
		v, err := c.Get(ctx, key).Result()
		if errors.Is(err, redis.Nil) {
			return "", false, nil
		}
		return v, err == nil, err
	}
}

// ownKey writes prefix-i=value through master for the first i whose slot
// master owns (another master's slot answers MOVED and is not written),
// and returns that key.
func ownKey(t *testing.T, e *env, master cluster.Node, prefix, value string) string {
	t.Helper()
	var key string
	waitFor(t, generous, "a key "+master.Name+" owns", func() error {
		for i := range 1000 {
			key = prefix + "-" + strconv.Itoa(i)
			err := redisProbe.write(ctxFor(t, 10*time.Second), master.Addr, key, value)
			if err == nil {
				return nil
			}
			if !strings.HasPrefix(err.Error(), "MOVED") {
				return err
			}
		}
		return fmt.Errorf("%s owns none of 1000 keys", master.Name)
	})
	return key
}

// shardsReplicate: a key written through each master reaches its replica.
func shardsReplicate(t *testing.T, e *env) {
	nodes := e.c.Nodes()
	for _, n := range nodes {
		if n.Role != cluster.RoleReplica {
			continue
		}
		master := e.node(t, cluster.ClusterMasterOf(nodes, n.Name))
		key := ownKey(t, e, master, "start-"+master.Name, master.Name)
		e.reaches(t, n, key, master.Name)
	}
}

// roleBecomes waits until both the node's server and Nodes report role.
func roleBecomes(t *testing.T, e *env, name, role string) {
	t.Helper()
	roleIs(t, e.node(t, name), role)
	waitFor(t, generous, "Nodes() reports "+name+" as "+role, func() error {
		if r := e.node(t, name).Role; r != role {
			return fmt.Errorf("Nodes() reports %s", r)
		}
		return nil
	})
}

// clusterFailoverCase: Promote makes the first shard's replica its master
// (CLUSTER FAILOVER), the old master becomes its replica, and a key the
// new master owns reaches the old one.
var clusterFailoverCase = testCase{"CLUSTER FAILOVER promotes a replica", func(t *testing.T, e *env) {
	f := e.failoverer(t)
	primaryIs(t, f, "n1")
	if err := f.Promote(ctxFor(t, generous), "n4"); err != nil {
		t.Fatal(err)
	}
	primaryIs(t, f, "n4")
	roleBecomes(t, e, "n4", cluster.RolePrimary)
	roleBecomes(t, e, "n1", cluster.RoleReplica)
	key := ownKey(t, e, e.node(t, "n4"), "after-promote", "1")
	e.reaches(t, e.node(t, "n1"), key, "1")
	if err := e.follower(t).Follow(ctxFor(t, generous), "n1", "n4"); err != nil {
		t.Errorf("Follow(n1, n4) of a replica of n4: %v", err)
	}
}}

// clusterKillMasterCase: a killed master's replica is promoted by the
// cluster on its own, the roles say so, and the master, started again,
// rejoins as its replica.
var clusterKillMasterCase = testCase{"killed master is replaced by its replica", func(t *testing.T, e *env) {
	k := e.killer(t)
	e.b.requires(t, CurrentRoles)
	if err := k.Kill(ctxFor(t, 30*time.Second), "n2"); err != nil {
		t.Fatal(err)
	}
	roleBecomes(t, e, "n5", cluster.RolePrimary)
	if err := k.Start(ctxFor(t, 2*generous), "n2"); err != nil {
		t.Fatal(err)
	}
	roleBecomes(t, e, "n2", cluster.RoleReplica)
	key := ownKey(t, e, e.node(t, "n5"), "after-kill", "1")
	e.reaches(t, e.node(t, "n2"), key, "1")
}}

// clusterIsolateCase: a master cut off from every other node stops taking
// writes once it has reached no majority of masters for the node timeout,
// its replica is promoted, and after the heal the old master becomes the
// new one's replica.
var clusterIsolateCase = testCase{"isolated master is replaced by its replica", func(t *testing.T, e *env) {
	e.b.requires(t, CurrentRoles)
	target := e.node(t, "n3")
	before := ownKey(t, e, target, "before-isolation", "1")
	var cut []string
	for _, l := range e.nw.Links() {
		if from, to, _ := linknet.SplitName(l); (from == "n3") != (to == "n3") && !strings.HasPrefix(from, "w") {
			cut = append(cut, l)
		}
	}
	if len(cut) == 0 {
		t.Fatalf("no link of the network reaches n3 (links %v)", e.nw.Links())
	}
	if err := e.nw.Cut(cut...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.nw.Heal(cut...) })
	waitFor(t, generous, "isolated n3 refuses writes", func() error {
		err := redisProbe.write(ctxFor(t, 5*time.Second), target.Addr, before, "2")
		if err == nil || !strings.HasPrefix(err.Error(), "CLUSTERDOWN") {
			return fmt.Errorf("the write answered %v", err)
		}
		return nil
	})
	roleIs(t, e.node(t, "n6"), cluster.RolePrimary)
	e.reaches(t, e.node(t, "n6"), before, "1")
	if err := e.nw.Heal(cut...); err != nil {
		t.Fatal(err)
	}
	roleBecomes(t, e, "n3", cluster.RoleReplica)
	roleBecomes(t, e, "n6", cluster.RolePrimary)
	// What n3 took while isolated is gone: it has n6's value.
	e.reaches(t, target, before, "1")
}}

// clusterStateOK: every node says cluster_state:ok.
func clusterStateOK(t *testing.T, e *env) {
	waitFor(t, generous, "every node says cluster_state:ok", func() error {
		var errs []error
		for _, n := range e.dataNodes() {
			info, err := redisDo(ctxFor(t, 5*time.Second), n.Addr, "CLUSTER", "INFO")
			if err == nil && !strings.Contains(fmt.Sprint(info), "cluster_state:ok") {
				err = errors.New("cluster_state is not ok")
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", n.Name, err))
			}
		}
		return errors.Join(errs...)
	})
}
