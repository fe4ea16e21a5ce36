package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
)

// TargetHalves is the partition target that splits the server nodes at
// random into a minority (n/2 of n) and a majority, and the workers in the
// same proportion: the links between the two sides are cut, and each worker
// reaches only its own side's nodes.
const TargetHalves = "halves"

// The values of the links option of the network faults.
const (
	// LinksAll hits client links and node-to-node links (the default).
	LinksAll = "all"
	// LinksClients hits only the links from workers to nodes.
	LinksClients = "clients"
	// LinksNodes hits only node-to-node links (replication, quorum).
	LinksNodes = "nodes"
)

func networkAvailable(env *Env) error {
	if env.Network == nil || env.Cluster == nil {
		return fmt.Errorf("%w: no network", cluster.ErrUnavailable)
	}
	return nil
}

func checkLinkStep(step Step, extra ...string) error {
	if err := checkOptions(step, append([]string{"links", "nodes"}, extra...), extra...); err != nil {
		return err
	}
	_, err := choiceOption(step, "links", LinksAll, LinksClients, LinksNodes)
	return err
}

// injectLinks applies f, a fault of kind k, to the links the step selects;
// its heal removes the faults of those links. When k makes nodes unavailable
// (Facts.Unavailable), f lets nothing through: the nodes the selection cuts
// off are taken down before f is applied and brought back once the heal
// removed it.
func injectLinks(env *Env, step Step, k Facts, f linknet.Fault) (Heal, any, error) {
	sel, err := SelectLinks(step, env.Cluster.Nodes(), env.Network.Links(), workerCount(env), env.Rand)
	if err != nil {
		return nil, nil, err
	}
	desc := sel.describe()
	if f.Kind == linknet.FaultLatency {
		desc["delay"] = f.Delay.String()
		if f.Jitter > 0 {
			desc["jitter"] = f.Jitter.String()
		}
	}
	var cutOff []string
	if k.Unavailable != "" {
		cutOff = sel.CutOff()
	}
	groups := []linkGroup{{f, sel.Links}}
	if f.Kind == linknet.FaultCut {
		dir, err := choiceOption(step, "direction", DirectionBoth, DirectionInbound, DirectionOutbound)
		if err != nil {
			return nil, nil, err
		}
		if dir != DirectionBoth {
			desc["direction"] = dir
			groups = sel.oneWay(dir)
		}
	}
	out := env.takeDown(k, cutOff, true)
	for i, g := range groups {
		if err := env.links.apply(env.Network, g.fault, g.links...); err != nil {
			for _, done := range groups[:i] {
				_ = env.links.heal(env.Network, done.fault, done.links...)
			}
			out.bringUpAll()
			return nil, desc, err
		}
	}
	heal := func(context.Context) error {
		var errs []error
		for _, g := range groups {
			errs = append(errs, env.links.heal(env.Network, g.fault, g.links...))
		}
		err := errors.Join(errs...)
		if err == nil {
			out.bringUpAll()
		}
		return err
	}
	return heal, desc, nil
}

// linkGroup is a fault and the links it is applied to.
type linkGroup struct {
	fault linknet.Fault
	links []string
}

// oneWay splits the selection's links into the one-way cuts that drop what
// is sent to the isolated side (DirectionInbound) or what it sends
// (DirectionOutbound). A link runs from the end that dials to the end that
// listens: a cut of what its "from" end sends is a forward cut. The
// isolated side is the targeted workers for worker targets, else the
// isolated nodes and (halves) the minority's workers.
func (s LinkSelection) oneWay(dir string) []linkGroup {
	isolated := setOf(workerNames(s.Workers))
	if s.Others != nil || s.Workers == nil {
		for _, n := range s.Nodes {
			isolated[n] = true
		}
	}
	fromIsolated := map[linknet.Direction][]string{}
	for _, l := range s.Links {
		from, _, _ := linknet.SplitName(l)
		// Outbound from the "from" end is forward; inbound to it is back.
		d := linknet.DirectionForward
		if isolated[from] == (dir == DirectionInbound) {
			d = linknet.DirectionBack
		}
		fromIsolated[d] = append(fromIsolated[d], l)
	}
	var out []linkGroup
	for _, d := range []linknet.Direction{linknet.DirectionForward, linknet.DirectionBack} {
		if ls := fromIsolated[d]; len(ls) > 0 {
			out = append(out, linkGroup{linknet.Fault{Kind: linknet.FaultCut, Direction: d}, ls})
		}
	}
	return out
}

func workerCount(env *Env) int {
	if env.Workers == nil {
		return 0
	}
	return env.Workers.Count()
}

// LinkSelection is what a network fault's targets resolved to.
type LinkSelection struct {
	Mode    string   // LinksAll, LinksClients or LinksNodes
	Nodes   []string // the isolated nodes (the minority for halves; the unreachable nodes for worker targets)
	Others  []string // halves: the majority
	Workers []int    // worker targets, or halves: the workers on the minority side
	Links   []string // the links the fault hits, sorted
}

// CutOff returns the nodes that links the selection cuts leave unavailable:
// the isolated nodes (Nodes: cut off from the other nodes, from the workers,
// or from the workers named), and every node that some worker reaches no
// more through a selected link (halves: the majority, from the minority's
// workers). A node cut off from some worker is not counted as up, because
// that worker cannot count on it for a majority.
func (s LinkSelection) CutOff() []string {
	out := slices.Clone(s.Nodes)
	for _, l := range s.Links {
		from, to, ok := linknet.SplitName(l)
		if ok && IsWorkerTarget(from) && !slices.Contains(out, to) {
			out = append(out, to)
		}
	}
	return out
}

func (s LinkSelection) describe() map[string]any {
	d := map[string]any{"nodes": s.Nodes, "links": len(s.Links)}
	if s.Mode != LinksAll {
		d["mode"] = s.Mode
	}
	if s.Others != nil {
		d["majority"] = s.Others
	}
	if s.Workers != nil {
		d["workers"] = s.Workers
	}
	return d
}

// SelectLinks resolves the targets of a network step against the nodes, the
// existing links and the number of workers. Links are named "from->to"
// (linknet.Name); a link whose "from" end is a worker ("w3") is a
// client link, any other link into a node is a node-to-node link (its
// "from" end a node, or a shared end such as "peers" that stands for every
// other node: isolating n1 cuts "peers->n1"). It returns
// an error wrapping cluster.ErrUnavailable when the shape selects no link
// (for instance node-to-node links in a topology that has none).
func SelectLinks(step Step, nodes []cluster.Node, links []string, workers int, rng *rand.Rand) (LinkSelection, error) {
	mode, err := choiceOption(step, "links", LinksAll, LinksClients, LinksNodes)
	if err != nil {
		return LinkSelection{}, err
	}
	sel := LinkSelection{Mode: mode}
	workerTargets := 0
	for _, t := range step.Targets {
		if IsWorkerTarget(t) {
			workerTargets++
		}
	}
	var cut func(from, to string) bool
	switch {
	case workerTargets > 0:
		if workerTargets != len(step.Targets) {
			return sel, fmt.Errorf("%w: %v mixes workers and nodes; name workers in targets and nodes in option nodes", ErrTarget, step.Targets)
		}
		cut, err = sel.selectWorkers(step, nodes, workers, rng)
	case len(step.Targets) == 1 && step.Targets[0] == TargetHalves:
		cut, err = sel.selectHalves(nodes, workers, rng)
	default:
		cut, err = sel.selectNodes(step, nodes, rng)
	}
	if err != nil {
		return sel, err
	}
	for _, l := range links {
		from, to, ok := linknet.SplitName(l)
		if !ok || !isNode(nodes, to) {
			continue
		}
		// Every other link into a node is node-to-node, including shared
		// ones whose "from" end names no single node ("peers->n1").
		client := IsWorkerTarget(from)
		if (client && sel.Mode == LinksNodes) || (!client && sel.Mode == LinksClients) {
			continue
		}
		if cut(from, to) {
			sel.Links = append(sel.Links, l)
		}
	}
	if len(sel.Links) == 0 {
		return sel, fmt.Errorf("%w: %s %s selects none of the %d links (mode %s)", cluster.ErrUnavailable, step.Fault, strings.Join(step.Targets, ","), len(links), sel.Mode)
	}
	return sel, nil
}

// selectWorkers selects the workers that step targets and the nodes of its
// option nodes (default all), and returns the cut of the links from those
// workers to those nodes. Its mode is then clients.
func (s *LinkSelection) selectWorkers(step Step, nodes []cluster.Node, workers int, rng *rand.Rand) (func(from, to string) bool, error) {
	ws, err := ResolveWorkers(step.Targets, workers, rng)
	if err != nil {
		return nil, err
	}
	nodeSpecs := splitList(step.Options["nodes"])
	if len(nodeSpecs) == 0 {
		nodeSpecs = []string{TargetAll}
	}
	ns, err := ResolveNodes(nodeSpecs, nodes, rng)
	if err != nil {
		return nil, err
	}
	s.Workers, s.Nodes, s.Mode = ws, ns, LinksClients
	inW, inN := setOf(workerNames(ws)), setOf(ns)
	return func(from, to string) bool { return inW[from] && inN[to] }, nil
}

// selectHalves splits the server nodes and the workers at random into a
// minority (Nodes, Workers) and the rest (Others; the other workers), and
// returns the cut of every link between the two sides. Sentinels and other
// ends on no side keep their links.
func (s *LinkSelection) selectHalves(nodes []cluster.Node, workers int, rng *rand.Rand) (func(from, to string) bool, error) {
	servers := serverNodes(nodes)
	if len(servers) < 2 {
		return nil, fmt.Errorf("%w: halves needs at least 2 server nodes, the cluster has %d", ErrTarget, len(servers))
	}
	if rng == nil {
		return nil, fmt.Errorf("%w: halves needs a random source", ErrTarget)
	}
	k := len(servers) / 2
	minority := map[string]bool{}
	for _, i := range rng.Perm(len(servers))[:k] {
		minority[servers[i].Name] = true
	}
	for _, n := range servers {
		if minority[n.Name] {
			s.Nodes = append(s.Nodes, n.Name)
		} else {
			s.Others = append(s.Others, n.Name)
		}
	}
	s.Workers = minorityWorkers(workers, k, len(servers), rng)
	inWorkers := setOf(workerNames(s.Workers))
	majority := setOf(s.Others)
	side := func(end string) (known, inMinority bool) {
		switch {
		case minority[end] || inWorkers[end]:
			return true, true
		case majority[end]:
			return true, false
		case IsWorkerTarget(end):
			return true, false
		}
		return false, false // sentinels and unknown ends are on no side
	}
	return func(from, to string) bool {
		kf, mf := side(from)
		kt, mt := side(to)
		return kf && kt && mf != mt
	}, nil
}

// minorityWorkers draws the workers on the minority's side of halves: of
// workers, in the proportion of the k minority nodes among the servers
// (rounded), in order; none (not nil) when there are no workers.
func minorityWorkers(workers, k, servers int, rng *rand.Rand) []int {
	out := []int{}
	if workers == 0 {
		return out
	}
	kw := (workers*k + servers/2) / servers
	perm := rng.Perm(workers)
	ws := map[int]bool{}
	for _, i := range perm[:kw] {
		ws[i] = true
	}
	for i := range workers {
		if ws[i] {
			out = append(out, i)
		}
	}
	return out
}

// selectNodes selects the nodes that step targets and returns the cut of
// the links that cross their border: a worker's into them, a node's
// between them and the other nodes.
func (s *LinkSelection) selectNodes(step Step, nodes []cluster.Node, rng *rand.Rand) (func(from, to string) bool, error) {
	ns, err := ResolveNodes(step.Targets, nodes, rng)
	if err != nil {
		return nil, err
	}
	s.Nodes = ns
	in := setOf(ns)
	return func(from, to string) bool {
		if IsWorkerTarget(from) {
			return in[to]
		}
		return in[from] != in[to]
	}, nil
}

func workerNames(ws []int) []string {
	var out []string
	for _, w := range ws {
		out = append(out, workerName(w))
	}
	return out
}

func setOf(xs []string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}
