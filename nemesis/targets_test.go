package nemesis

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
)

func fiveMasters() []cluster.Node {
	var ns []cluster.Node
	for _, n := range []string{"n1", "n2", "n3", "n4", "n5"} {
		ns = append(ns, cluster.Node{Name: n, Role: "primary", Addr: "127.0.0.1:1"})
	}
	return ns
}

func sentinelTopology() []cluster.Node {
	return []cluster.Node{
		{Name: "n1", Role: "primary"}, {Name: "n2", Role: "replica"}, {Name: "n3", Role: "replica"},
		{Name: "s1", Role: "sentinel"}, {Name: "s2", Role: "sentinel"},
	}
}

func TestResolveNodes(t *testing.T) {
	peers := []cluster.Node{{Name: "n1"}, {Name: "n2"}, {Name: "n3"}}
	tests := []struct {
		name    string
		nodes   []cluster.Node
		specs   []string
		want    []string // exact result, when not random
		size    int      // size of a random result
		wantErr error
	}{
		{name: "names in node order without duplicates", nodes: fiveMasters(), specs: []string{"n4", "n2", "n4"}, want: []string{"n2", "n4"}},
		{name: "all", nodes: fiveMasters(), specs: []string{"all"}, want: []string{"n1", "n2", "n3", "n4", "n5"}},
		{name: "all skips sentinels", nodes: sentinelTopology(), specs: []string{"all"}, want: []string{"n1", "n2", "n3"}},
		{name: "sentinel by name", nodes: sentinelTopology(), specs: []string{"s2"}, want: []string{"s2"}},
		{name: "primaries by role", nodes: sentinelTopology(), specs: []string{"primaries"}, want: []string{"n1"}},
		{name: "primaries of peers without roles", nodes: peers, specs: []string{"primaries"}, want: []string{"n1", "n2", "n3"}},
		{name: "replicas", nodes: sentinelTopology(), specs: []string{"replicas"}, want: []string{"n2", "n3"}},
		{name: "replicas of masters", nodes: fiveMasters(), specs: []string{"replicas"}, wantErr: ErrTarget},
		{name: "one", nodes: fiveMasters(), specs: []string{"one"}, size: 1},
		{name: "minority of 5", nodes: fiveMasters(), specs: []string{"minority"}, size: 2},
		{name: "majority of 5", nodes: fiveMasters(), specs: []string{"majority"}, size: 3},
		{name: "minority of 3", nodes: peers, specs: []string{"minority"}, size: 1},
		{name: "majority of 3 skips sentinels", nodes: sentinelTopology(), specs: []string{"majority"}, size: 2},
		{name: "unknown name", nodes: fiveMasters(), specs: []string{"n9"}, wantErr: ErrTarget},
		{name: "no specs", nodes: fiveMasters(), specs: nil, wantErr: ErrTarget},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ResolveNodes(tc.specs, tc.nodes, rand.New(rand.NewPCG(1, 2)))
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("ResolveNodes(%v) = %v, %v; want error %v", tc.specs, got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want != nil && !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ResolveNodes(%v) = %v, want %v", tc.specs, got, tc.want)
			}
			if tc.size > 0 {
				if len(got) != tc.size {
					t.Fatalf("ResolveNodes(%v) = %v, want %d nodes", tc.specs, got, tc.size)
				}
				for _, n := range got {
					if n[0] != 'n' {
						t.Fatalf("ResolveNodes(%v) picked %s, not a server node", tc.specs, n)
					}
				}
			}
		})
	}
}

func TestResolveNodesIsSeeded(t *testing.T) {
	pick := func(seed uint64) [][]string {
		rng := rand.New(rand.NewPCG(seed, 0))
		var out [][]string
		for range 10 {
			got, err := ResolveNodes([]string{"minority"}, fiveMasters(), rng)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, got)
		}
		return out
	}
	a, b, c := pick(7), pick(7), pick(8)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("same seed, different picks: %v vs %v", a, b)
	}
	if reflect.DeepEqual(a, c) {
		t.Fatalf("seeds 7 and 8 picked the same ten minorities %v", a)
	}
	seen := map[string]bool{}
	for _, p := range a {
		for _, n := range p {
			seen[n] = true
		}
	}
	if len(seen) < 3 {
		t.Fatalf("ten random minorities only ever hit %v", seen)
	}
}

func TestResolveWorkers(t *testing.T) {
	tests := []struct {
		name    string
		specs   []string
		want    []int
		size    int
		wantErr bool
	}{
		{name: "names sorted", specs: []string{"w3", "w0", "w3"}, want: []int{0, 3}},
		{name: "all", specs: []string{"all"}, want: []int{0, 1, 2, 3}},
		{name: "one", specs: []string{"one"}, size: 1},
		{name: "majority", specs: []string{"majority"}, size: 3},
		{name: "out of range", specs: []string{"w4"}, wantErr: true},
		{name: "node name", specs: []string{"n1"}, wantErr: true},
		{name: "none", specs: nil, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ResolveWorkers(tc.specs, 4, rand.New(rand.NewPCG(3, 4)))
			if tc.wantErr {
				if !errors.Is(err, ErrTarget) {
					t.Fatalf("ResolveWorkers(%v) = %v, %v; want ErrTarget", tc.specs, got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want != nil && !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ResolveWorkers(%v) = %v, want %v", tc.specs, got, tc.want)
			}
			if tc.size > 0 && len(got) != tc.size {
				t.Fatalf("ResolveWorkers(%v) = %v, want %d workers", tc.specs, got, tc.size)
			}
		})
	}
}

// links returns the links of a cluster with workers and node-to-node
// links between every pair of nodes.
func meshLinks(workers int, nodes []cluster.Node, extra ...string) []string {
	var out []string
	for w := range workers {
		for _, n := range nodes {
			out = append(out, linknet.Name(workerName(w), n.Name))
		}
	}
	for _, a := range nodes {
		for _, b := range nodes {
			if a.Name != b.Name {
				out = append(out, linknet.Name(a.Name, b.Name))
			}
		}
	}
	out = append(out, extra...)
	slices.Sort(out)
	return out
}

// TestSelectLinks checks the links each shape of targets and option links
// selects, and the errors of shapes that select none or mix workers and
// nodes.
func TestSelectLinks(t *testing.T) {
	for _, tc := range selectLinksCases() {
		t.Run(tc.name, func(t *testing.T) {
			sel, err := SelectLinks(tc.step, tc.nodes, tc.links, 2, rand.New(rand.NewPCG(1, 1)))
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("SelectLinks = %v, %v; want error %v", sel.Links, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(sel.Links, tc.want) {
				t.Fatalf("SelectLinks = %v, want %v", sel.Links, tc.want)
			}
		})
	}
}

// selectLinksCase is a case of TestSelectLinks: a step on nodes with links,
// and the links it selects or its error.
type selectLinksCase struct {
	name    string
	step    Step
	nodes   []cluster.Node
	links   []string
	want    []string
	wantErr error
}

// selectLinksCases are TestSelectLinks' cases, on two workers.
func selectLinksCases() []selectLinksCase {
	three := []cluster.Node{{Name: "n1"}, {Name: "n2"}, {Name: "n3"}}
	return []selectLinksCase{
		{
			name:  "isolate a node from workers and nodes",
			step:  Step{Fault: "partition", Targets: []string{"n1"}},
			nodes: three, links: meshLinks(2, three),
			want: []string{"n1->n2", "n1->n3", "n2->n1", "n3->n1", "w0->n1", "w1->n1"},
		},
		{
			name:  "isolate from workers only",
			step:  Step{Fault: "partition", Targets: []string{"n1"}, Options: map[string]string{"links": "clients"}},
			nodes: three, links: meshLinks(2, three),
			want: []string{"w0->n1", "w1->n1"},
		},
		{
			name:  "node-to-node only",
			step:  Step{Fault: "partition", Targets: []string{"n1"}, Options: map[string]string{"links": "nodes"}},
			nodes: three, links: meshLinks(2, three),
			want: []string{"n1->n2", "n1->n3", "n2->n1", "n3->n1"},
		},
		{
			name:  "shared peers link into an isolated node",
			step:  Step{Fault: "partition", Targets: []string{"n2"}, Options: map[string]string{"links": "nodes"}},
			nodes: three, links: []string{"peers->n1", "peers->n2", "peers->n3", "w0->n2"},
			want: []string{"peers->n2"},
		},
		{
			name:  "client-specific: w0 loses n2 and n3",
			step:  Step{Fault: "partition", Targets: []string{"w0"}, Options: map[string]string{"nodes": "n2, n3"}},
			nodes: three, links: meshLinks(2, three),
			want: []string{"w0->n2", "w0->n3"},
		},
		{
			name:  "client-specific without nodes: every node",
			step:  Step{Fault: "partition", Targets: []string{"w1"}},
			nodes: three, links: meshLinks(2, three),
			want: []string{"w1->n1", "w1->n2", "w1->n3"},
		},
		{
			name:  "node links in a topology without them",
			step:  Step{Fault: "partition", Targets: []string{"n1"}, Options: map[string]string{"links": "nodes"}},
			nodes: three, links: meshLinks(2, nil),
			wantErr: cluster.ErrUnavailable,
		},
		{
			name:  "mixed worker and node targets",
			step:  Step{Fault: "partition", Targets: []string{"w0", "n1"}},
			nodes: three, links: meshLinks(2, three),
			wantErr: ErrTarget,
		},
		{
			name:  "bad links option",
			step:  Step{Fault: "partition", Targets: []string{"n1"}, Options: map[string]string{"links": "some"}},
			nodes: three, links: meshLinks(2, three),
			wantErr: ErrOption,
		},
	}
}

func TestSelectLinksHalves(t *testing.T) {
	nodes := fiveMasters()
	links := meshLinks(4, nodes)
	sel, err := SelectLinks(Step{Fault: "partition", Targets: []string{"halves"}}, nodes, links, 4, rand.New(rand.NewPCG(5, 5)))
	if err != nil {
		t.Fatal(err)
	}
	if len(sel.Nodes) != 2 || len(sel.Others) != 3 {
		t.Fatalf("halves of 5 = %v | %v, want 2 | 3", sel.Nodes, sel.Others)
	}
	if len(sel.Workers) != 2 {
		t.Fatalf("halves put workers %v on the minority side, want 2 of 4", sel.Workers)
	}
	minority := setOf(append(sel.Nodes, workerNames(sel.Workers)...))
	cut := setOf(sel.Links)
	for _, l := range links {
		from, to, _ := linknet.SplitName(l)
		crosses := minority[from] != minority[to]
		if cut[l] != crosses {
			t.Errorf("link %s: cut %v, crosses the halves %v", l, cut[l], crosses)
		}
	}
}

func TestOneWayPartitions(t *testing.T) {
	three := []cluster.Node{{Name: "n1"}, {Name: "n2"}, {Name: "n3"}}
	fwd, back := linknet.DirectionForward, linknet.DirectionBack
	tests := []struct {
		name string
		step Step
		want map[linknet.Direction][]string
	}{
		{
			name: "nothing reaches n1",
			step: Step{Fault: "partition", Targets: []string{"n1"}, Options: map[string]string{"direction": DirectionInbound}},
			// n1 dials n2 and n3: their replies are cut; the others dial n1: their requests are.
			want: map[linknet.Direction][]string{fwd: {"n2->n1", "n3->n1", "w0->n1", "w1->n1"}, back: {"n1->n2", "n1->n3"}},
		},
		{
			name: "nothing leaves n1",
			step: Step{Fault: "partition", Targets: []string{"n1"}, Options: map[string]string{"direction": DirectionOutbound}},
			want: map[linknet.Direction][]string{fwd: {"n1->n2", "n1->n3"}, back: {"n2->n1", "n3->n1", "w0->n1", "w1->n1"}},
		},
		{
			name: "worker w1 hears nothing from n2",
			step: Step{Fault: "partition", Targets: []string{"w1"}, Options: map[string]string{"nodes": "n2", "direction": DirectionInbound}},
			want: map[linknet.Direction][]string{back: {"w1->n2"}},
		},
		{
			name: "worker w1's requests to n2 and n3 are lost",
			step: Step{Fault: "partition", Targets: []string{"w1"}, Options: map[string]string{"nodes": "n2,n3", "direction": DirectionOutbound}},
			want: map[linknet.Direction][]string{fwd: {"w1->n2", "w1->n3"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := (Partition{}).Check(tt.step); err != nil {
				t.Fatal(err)
			}
			sel, err := SelectLinks(tt.step, three, meshLinks(2, three), 2, rand.New(rand.NewPCG(1, 2)))
			if err != nil {
				t.Fatal(err)
			}
			got := map[linknet.Direction][]string{}
			for _, g := range sel.oneWay(tt.step.Options["direction"]) {
				if g.fault.Kind != linknet.FaultCut {
					t.Errorf("one-way fault of kind %q", g.fault.Kind)
				}
				got[g.fault.Direction] = g.links
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
	if err := (Partition{}).Check(Step{Fault: "partition", Targets: []string{"n1"}, Options: map[string]string{"direction": "sideways"}}); !errors.Is(err, ErrOption) {
		t.Errorf("direction sideways: got %v, want ErrOption", err)
	}
	if err := (Reset{}).Check(Step{Fault: "reset", Targets: []string{"n1"}, Options: map[string]string{"direction": DirectionInbound}}); !errors.Is(err, ErrOption) {
		t.Errorf("a reset with a direction: got %v, want ErrOption", err)
	}
}
