package conformance

import (
	"errors"
	"fmt"
	"slices"

	"github.com/jepsen-lite/jepsen-lite/cluster"
)

// coverage reports an error for each system of cluster.Systems the suite
// has no entry for, each declared topology none of its entry's topologies
// starts, and each entry of a system that is not declared: the suite runs
// what the declarations say a system is.
func coverage() error {
	var errs []error
	for _, info := range cluster.Systems {
		i := slices.IndexFunc(systems, func(s system) bool { return s.name == info.Name })
		if i < 0 {
			errs = append(errs, fmt.Errorf("conformance: declared system %q has no topology in the suite (cluster/conformance/topologies.go)", info.Name))
			continue
		}
		for _, want := range info.Topologies {
			if !slices.ContainsFunc(systems[i].topologies, func(top topology) bool {
				got, err := cluster.TopologyOf(top.spec)
				return err == nil && got.Name == want.Name
			}) {
				errs = append(errs, fmt.Errorf("conformance: %s's declared topology %q is not in the suite", info.Name, want.Name))
			}
		}
	}
	for _, s := range systems {
		if _, err := cluster.LookupSystem(s.name); err != nil {
			errs = append(errs, fmt.Errorf("conformance: %w", err))
		}
	}
	return errors.Join(errs...)
}

// systems lists every system the suite knows with the topologies it starts
// and, for each, the cases that run on its one cluster, in order.
var systems = []system{
	{
		name:  cluster.Redis,
		probe: redisProbe,
		topologies: []topology{
			{
				name: "masters",
				spec: cluster.Spec{System: cluster.Redis, Topology: "masters", Nodes: 3},
				cases: []testCase{
					startCase,
					unknownNodeCase,
					clientPartitionsCase,
					pauseCase(named("n2")),
					killCase(named("n1"), "", lost),
					killPausedCase(named("n3")),
					clockSkewCase(named("n1")),
					noFailoverCase,
				},
			},
			{
				name: "masters-persistent",
				spec: cluster.Spec{System: cluster.Redis, Topology: "masters", Nodes: 1, Persistence: true},
				cases: []testCase{
					startCase,
					killCase(named("n1"), "", survives),
				},
			},
			{
				name: "primary-replica",
				spec: cluster.Spec{System: cluster.Redis, Topology: "primary-replica", Nodes: 3},
				cases: []testCase{
					startCase,
					replicationPartitionsCase,
					killCase(named("n3"), "n1", catchesUp),
					failoverCase,
					rejoinCase,
					rolesCurrentCase,
				},
			},
			{
				name: "sentinel",
				spec: cluster.Spec{System: cluster.Redis, Topology: cluster.TopologySentinel, Nodes: 2},
				cases: []testCase{
					startCase,
					sentinelPromoteCase("n2"),
					sentinelFailoverCase,
					rolesCurrentCase,
				},
			},
			{
				name:     "sentinel-3",
				spec:     cluster.Spec{System: cluster.Redis, Topology: cluster.TopologySentinel, Nodes: 3},
				requires: []Ability{Failover, SentinelChoice},
				cases: []testCase{
					startCase,
					sentinelPromoteCase("n3"),
					rolesCurrentCase,
				},
			},
			{
				name: "cluster",
				spec: cluster.Spec{System: cluster.Redis, Topology: cluster.TopologyCluster, Nodes: cluster.ClusterMasters},
				cases: []testCase{
					startCase,
					unknownNodeCase,
					pauseCase(named("n5")),
					clusterFailoverCase,
					clusterKillMasterCase,
					clusterIsolateCase,
					rolesCurrentCase,
					// Last: a node whose clock stepped forward takes
					// the pongs it got meanwhile for recent for as long
					// as the step, and pings those nodes no more, so
					// it never suspects them (docs/design.md §11).
					clockSkewCase(named("n4")),
				},
			},
		},
	},
	{
		name:  cluster.Postgres,
		probe: postgresProbe,
		topologies: []topology{
			{
				// Persistent, as without persistence PostgreSQL commits
				// asynchronously (synchronous_commit off) and a kill may
				// or may not lose the latest commits.
				name: "single-persistent",
				spec: cluster.Spec{System: cluster.Postgres, Nodes: 1, Persistence: true},
				cases: []testCase{
					startCase,
					pauseCase(named("n1")),
					killCase(named("n1"), "", survives),
					clockSkewCase(named("n1")),
				},
			},
		},
	},
	{
		name:  cluster.ZooKeeper,
		probe: zookeeperProbe,
		topologies: []topology{
			{
				name: "ensemble-3",
				spec: cluster.Spec{System: cluster.ZooKeeper, Nodes: 3},
				cases: []testCase{
					startCase,
					isolateCase(zkIsolated),
					pauseCase(zkFollower),
					killCase(zkFollower, "", catchesUp),
					clockSkewCase(zkLeader),
				},
			},
		},
	},
	{
		name:  cluster.Etcd,
		probe: etcdProbe,
		topologies: []topology{
			{
				name: "cluster-3",
				spec: cluster.Spec{System: cluster.Etcd, Nodes: 3},
				cases: []testCase{
					startCase,
					isolateCase(named("n1")),
					pauseCase(named("n2")),
					killCase(named("n2"), "", catchesUp),
					clockSkewCase(named("n1")),
				},
			},
		},
	},
	{
		name:  cluster.MariaDB,
		probe: mariadbProbe,
		topologies: []topology{
			{
				// Persistent, as without persistence InnoDB writes its
				// redo log once a second (innodb_flush_log_at_trx_commit
				// 0) and a kill may or may not lose the latest commits.
				name: "single-persistent",
				spec: cluster.Spec{System: cluster.MariaDB, Nodes: 1, Persistence: true},
				cases: []testCase{
					startCase,
					pauseCase(named("n1")),
					killCase(named("n1"), "", survives),
					clockSkewCase(named("n1")),
				},
			},
		},
	},
}
