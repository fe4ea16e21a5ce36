package cluster

import "fmt"

// Layout returns the nodes a cluster of spec has, by name and role, without
// addresses and without starting anything: those its system's declared
// topology gives (SystemInfo.Topologies) for spec.Nodes server nodes, below
// 1 counted as 1. It lets a scenario's fault targets be checked before any
// server starts; the backends start the same nodes.
func Layout(spec Spec) ([]Node, error) {
	top, err := TopologyOf(spec)
	if err != nil {
		return nil, err
	}
	return top.Nodes(max(spec.Nodes, 1))
}

// TopologyOf returns the declared topology of spec's system that spec
// selects, or an error naming an undeclared system or topology.
func TopologyOf(spec Spec) (Topology, error) {
	info, err := LookupSystem(spec.System)
	if err != nil {
		return Topology{}, err
	}
	return info.Topology(spec.Topology)
}

// redisTopologies are Redis's: "masters" (the default) is n1..nN, each a
// primary; "primary-replica" is n1 primary and n2..nN replicas (at least
// two nodes); "sentinel" is that and three sentinels s1, s2, s3; "cluster"
// is Redis Cluster mode, masters and a replica of each (TopologyCluster).
var redisTopologies = []Topology{
	{
		Name:       TopologyMasters,
		Nodes:      func(count int) ([]Node, error) { return numbered(count, RolePrimary, RolePrimary), nil },
		ColdStarts: []ColdStart{{"redis-5-masters", 5}},
	},
	{
		Name:       TopologyPrimaryReplica,
		Nodes:      func(count int) ([]Node, error) { return numbered(max(count, 2), RolePrimary, RoleReplica), nil },
		PeerLinks:  true,
		ColdStarts: []ColdStart{{"redis-primary-replica", 2}},
	},
	{
		Name:       TopologySentinel,
		Nodes:      sentinelNodes,
		PeerLinks:  true,
		ColdStarts: []ColdStart{{"redis-sentinel", 2}},
	},
	{
		Name:                 TopologyCluster,
		Nodes:                clusterNodes,
		PeerLinks:            true,
		OneAdvertisedAddress: true,
		PromotionRetry:       ClusterFailoverRetry,
		ColdStarts:           []ColdStart{{"redis-cluster", ClusterMasters}},
	},
}

// sentinelNodes returns the nodes of the sentinel topology: the
// primary-replica nodes and Sentinels sentinels s1, s2, ...
func sentinelNodes(count int) ([]Node, error) {
	nodes := numbered(max(count, 2), RolePrimary, RoleReplica)
	for i := range Sentinels {
		nodes = append(nodes, Node{Name: fmt.Sprintf("s%d", i+1), Role: RoleSentinel})
	}
	return nodes, nil
}

// singleNode returns the Nodes of a system that runs one node, n1, a
// primary.
func singleNode(system string) func(count int) ([]Node, error) {
	return func(count int) ([]Node, error) {
		if count > 1 {
			return nil, fmt.Errorf("cluster: %s runs a single node, not %d", system, count)
		}
		return numbered(1, RolePrimary, RolePrimary), nil
	}
}

// peers returns n1..nN with no role: the members of an ensemble.
func peers(count int) ([]Node, error) { return numbered(count, "", ""), nil }

// numbered returns the nodes n1..nN, n1 with the role first and the others
// with the role rest.
func numbered(n int, first, rest string) []Node {
	out := make([]Node, 0, n)
	for i := range n {
		role := rest
		if i == 0 {
			role = first
		}
		out = append(out, Node{Name: fmt.Sprintf("n%d", i+1), Role: role})
	}
	return out
}

// NamedSpec is a spec with a short name ("redis-sentinel").
type NamedSpec struct {
	Name string
	Spec Spec
}

// Topologies lists one spec of every size of every topology the
// declarations name for the cold starts (Topology.ColdStarts): the
// cold-start benchmarks of both backends range over it.
var Topologies = coldStarts()

// coldStarts returns the specs of the declared cold starts, in the order
// of Systems.
func coldStarts() []NamedSpec {
	var out []NamedSpec
	for _, s := range Systems {
		for _, t := range s.Topologies {
			for _, c := range t.ColdStarts {
				out = append(out, NamedSpec{c.Name, Spec{System: s.Name, Topology: t.Name, Nodes: c.Nodes}})
			}
		}
	}
	return out
}
