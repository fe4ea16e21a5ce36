package cluster

import "fmt"

// Layout returns the nodes a cluster of spec has, by name and role, without
// addresses and without starting anything: Redis "masters" (the default
// topology) is n1..nN, each a primary; "primary-replica" is n1 primary and
// n2..nN replicas (at least two nodes); "sentinel" is that and three
// sentinels s1, s2, s3; PostgreSQL is one node n1, a primary; ZooKeeper and
// etcd are n1..nN with no role. Nodes below 1 count as 1. It lets a scenario's
// fault targets be checked before any server starts; the backends start the
// same nodes.
func Layout(spec Spec) ([]Node, error) {
	count := max(spec.Nodes, 1)
	numbered := func(n int, role func(i int) string) []Node {
		out := make([]Node, 0, n)
		for i := range n {
			out = append(out, Node{Name: fmt.Sprintf("n%d", i+1), Role: role(i)})
		}
		return out
	}
	switch spec.System {
	case Redis:
		primaryFirst := func(i int) string {
			if i == 0 {
				return RolePrimary
			}
			return RoleReplica
		}
		switch spec.Topology {
		case "", "masters":
			return numbered(count, func(int) string { return RolePrimary }), nil
		case "primary-replica":
			return numbered(max(count, 2), primaryFirst), nil
		case "sentinel":
			nodes := numbered(max(count, 2), primaryFirst)
			for i := range Sentinels {
				nodes = append(nodes, Node{Name: fmt.Sprintf("s%d", i+1), Role: RoleSentinel})
			}
			return nodes, nil
		default:
			return nil, fmt.Errorf("cluster: unknown redis topology %q (want masters, primary-replica or sentinel)", spec.Topology)
		}
	case Postgres:
		if spec.Nodes > 1 {
			return nil, fmt.Errorf("cluster: postgres runs a single node, not %d", spec.Nodes)
		}
		return numbered(1, func(int) string { return RolePrimary }), nil
	case ZooKeeper, Etcd:
		return numbered(count, func(int) string { return "" }), nil
	default:
		return nil, fmt.Errorf("cluster: unknown system %q", spec.System)
	}
}

// NamedSpec is a spec with a short name ("redis-sentinel").
type NamedSpec struct {
	Name string
	Spec Spec
}

// Topologies lists one spec of every topology the backends run, at the
// sizes the catalog's scenarios use: the cold-start benchmarks of both
// backends range over it.
var Topologies = []NamedSpec{
	{"redis-5-masters", Spec{System: Redis, Nodes: 5}},
	{"redis-primary-replica", Spec{System: Redis, Topology: TopologyPrimaryReplica, Nodes: 2}},
	{"redis-sentinel", Spec{System: Redis, Topology: TopologySentinel, Nodes: 2}},
	{"postgres", Spec{System: Postgres, Nodes: 1}},
	{"zookeeper-1", Spec{System: ZooKeeper, Nodes: 1}},
	{"zookeeper-3", Spec{System: ZooKeeper, Nodes: 3}},
	{"etcd-1", Spec{System: Etcd, Nodes: 1}},
	{"etcd-3", Spec{System: Etcd, Nodes: 3}},
}
