package nemesis

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/jepsen-lite/jepsen-lite/cluster"
)

// ErrTarget reports a target spec that cannot be resolved against the
// cluster or the workers.
var ErrTarget = errors.New("nemesis: bad target")

// The target specs a step may use instead of naming nodes. They are resolved
// when the step is injected, against the cluster's nodes and with the run's
// seeded randomness (Env.Rand), so a replay with the same seed picks the same
// nodes. Sentinel nodes are only ever hit when named.
const (
	// TargetOne is one server node chosen at random.
	TargetOne = "one"
	// TargetMinority is a random minority of the server nodes:
	// (n-1)/2 of n, at least one node (so 1 of 2 or 3, 2 of 4 or 5).
	TargetMinority = "minority"
	// TargetMajority is a random majority of the server nodes: n/2+1 of n.
	TargetMajority = "majority"
	// TargetAll is every server node.
	TargetAll = "all"
	// TargetPrimaries is every node whose role is primary; in a topology
	// without roles (independent masters) every server node.
	TargetPrimaries = "primaries"
	// TargetReplicas is every node whose role is replica.
	TargetReplicas = "replicas"
)

// NodeSpecs returns the target specs ResolveNodes understands besides node
// names.
func NodeSpecs() []string {
	return []string{TargetOne, TargetMinority, TargetMajority, TargetAll, TargetPrimaries, TargetReplicas}
}

// serverNodes returns the nodes that are not sentinels.
func serverNodes(nodes []cluster.Node) []cluster.Node {
	var out []cluster.Node
	for _, n := range nodes {
		if n.Role != "sentinel" {
			out = append(out, n)
		}
	}
	return out
}

// ResolveNodes turns target specs (node names, or the specs of NodeSpecs)
// into node names, in the order of nodes, without duplicates. Random specs
// draw from rng. Every spec must match at least one node.
func ResolveNodes(specs []string, nodes []cluster.Node, rng *rand.Rand) ([]string, error) {
	if len(specs) == 0 {
		return nil, fmt.Errorf("%w: no node targets (want node names or %s)", ErrTarget, strings.Join(NodeSpecs(), ", "))
	}
	servers := serverNodes(nodes)
	chosen := map[string]bool{}
	for _, spec := range specs {
		picked, err := resolveNodeSpec(spec, nodes, servers, rng)
		if err != nil {
			return nil, err
		}
		for _, p := range picked {
			chosen[p] = true
		}
	}
	var out []string
	for _, n := range nodes {
		if chosen[n.Name] {
			out = append(out, n.Name)
		}
	}
	return out, nil
}

func resolveNodeSpec(spec string, nodes, servers []cluster.Node, rng *rand.Rand) ([]string, error) {
	names := func(ns []cluster.Node) []string {
		var out []string
		for _, n := range ns {
			out = append(out, n.Name)
		}
		return out
	}
	random := func(k int) ([]string, error) {
		if k < 1 || k > len(servers) {
			return nil, fmt.Errorf("%w: %q needs more server nodes than the %d there are", ErrTarget, spec, len(servers))
		}
		if rng == nil {
			return nil, fmt.Errorf("%w: %q needs a random source", ErrTarget, spec)
		}
		perm := rng.Perm(len(servers))
		var out []string
		for _, i := range perm[:k] {
			out = append(out, servers[i].Name)
		}
		return out, nil
	}
	byRole := func(role string) []string {
		var out []string
		for _, n := range servers {
			if n.Role == role {
				out = append(out, n.Name)
			}
		}
		return out
	}
	n := len(servers)
	switch spec {
	case TargetOne:
		return random(1)
	case TargetMinority:
		return random(max(1, (n-1)/2))
	case TargetMajority:
		return random(n/2 + 1)
	case TargetAll:
		if n == 0 {
			return nil, fmt.Errorf("%w: %q: the cluster has no server nodes", ErrTarget, spec)
		}
		return names(servers), nil
	case TargetPrimaries:
		if p := byRole("primary"); len(p) > 0 {
			return p, nil
		}
		if len(byRole("replica")) == 0 && n > 0 {
			return names(servers), nil
		}
		return nil, fmt.Errorf("%w: %q: no node has the primary role", ErrTarget, spec)
	case TargetReplicas:
		if r := byRole("replica"); len(r) > 0 {
			return r, nil
		}
		return nil, fmt.Errorf("%w: %q: no node has the replica role", ErrTarget, spec)
	}
	for _, nd := range nodes {
		if nd.Name == spec {
			return []string{spec}, nil
		}
	}
	return nil, fmt.Errorf("%w: %q is neither a node (%s) nor one of %s", ErrTarget, spec, strings.Join(names(nodes), ", "), strings.Join(NodeSpecs(), ", "))
}

// IsWorkerTarget reports whether a target names a worker ("w0", "w12").
func IsWorkerTarget(t string) bool {
	rest, ok := strings.CutPrefix(t, "w")
	if !ok || rest == "" {
		return false
	}
	_, err := strconv.Atoi(rest)
	return err == nil
}

// ResolveWorkers turns worker targets into worker numbers below count,
// sorted and without duplicates: "w0", "w3", or the specs one, minority,
// majority and all, drawn from rng like ResolveNodes draws nodes.
func ResolveWorkers(specs []string, count int, rng *rand.Rand) ([]int, error) {
	if len(specs) == 0 {
		return nil, fmt.Errorf("%w: no worker targets (want w0, w1, ... or one, minority, majority, all)", ErrTarget)
	}
	chosen := map[int]bool{}
	random := func(spec string, k int) error {
		if k < 1 || k > count {
			return fmt.Errorf("%w: %q needs more workers than the %d there are", ErrTarget, spec, count)
		}
		if rng == nil {
			return fmt.Errorf("%w: %q needs a random source", ErrTarget, spec)
		}
		for _, i := range rng.Perm(count)[:k] {
			chosen[i] = true
		}
		return nil
	}
	for _, spec := range specs {
		var err error
		switch spec {
		case TargetAll:
			for i := range count {
				chosen[i] = true
			}
		case TargetOne:
			err = random(spec, 1)
		case TargetMinority:
			err = random(spec, max(1, (count-1)/2))
		case TargetMajority:
			err = random(spec, count/2+1)
		default:
			n, aerr := strconv.Atoi(strings.TrimPrefix(spec, "w"))
			if aerr != nil || !IsWorkerTarget(spec) || n < 0 || n >= count {
				return nil, fmt.Errorf("%w: worker target %q: want w0..w%d, one, minority, majority or all", ErrTarget, spec, count-1)
			}
			chosen[n] = true
		}
		if err != nil {
			return nil, err
		}
	}
	var out []int
	for i := range count {
		if chosen[i] {
			out = append(out, i)
		}
	}
	return out, nil
}

// workerName returns the link end name of worker i ("w3").
func workerName(i int) string { return "w" + strconv.Itoa(i) }

// splitList splits a comma-separated option value into trimmed, non-empty
// items.
func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if p := strings.TrimSpace(part); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// nodeNames returns the names of nodes.
func nodeNames(nodes []cluster.Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.Name)
	}
	return out
}

// isNode reports whether name is one of nodes.
func isNode(nodes []cluster.Node, name string) bool {
	return slices.ContainsFunc(nodes, func(n cluster.Node) bool { return n.Name == name })
}
