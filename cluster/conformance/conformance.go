// Package conformance owns the one test suite that every cluster backend
// runs against the cluster.Cluster interface and its optional abilities
// (cluster.Killer, cluster.Pauser, cluster.ClockSkewer, cluster.Failoverer,
// Follower), with real servers and real connections: start every topology
// of every system the backend runs, kill and restart with and without
// persistence, pause and resume, clock skew, partitions of each shape the
// linknet.Network supports, failover and rejoin, sentinel failover, and a
// teardown that leaves nothing behind.
//
// A backend declares what it runs (Backend.Systems) and what it cannot do
// (Backend.Cannot, with the reason); the suite skips a case, saying that
// reason, only when the backend declares it cannot do it, and fails every
// case the backend claims and does not hold. A system the backend does not
// run must be refused by Start with cluster.ErrUnavailable.
//
// Each topology starts one cluster that its cases share, in order; the cases
// wait on conditions with deadlines and never assert on how long anything
// took.
package conformance

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
)

// Ability is something a backend may be unable to do; every ability not
// declared in Backend.Cannot is checked.
type Ability string

// The abilities the suite checks.
const (
	// Kill is cluster.Killer: a killed node stops answering and Start
	// brings it back with its data dir (data survives when the system
	// keeps it).
	Kill Ability = "kill"
	// Pause is cluster.Pauser: a paused node does not answer until resumed.
	Pause Ability = "pause"
	// ClockSkew is cluster.ClockSkewer: the node's wall clock reads the
	// offset, on the systems whose servers can be skewed.
	ClockSkew Ability = "clock-skew"
	// Failover is cluster.Failoverer on the replicated Redis topologies:
	// Promote makes the replica the primary and the other replicas follow it.
	Failover Ability = "failover"
	// Follow is Follower: the old primary rejoins as a replica of the new one.
	Follow Ability = "follow"
	// CurrentRoles is Nodes reporting the role each data node has now
	// (the one its server reports), also after failovers.
	CurrentRoles Ability = "current-roles"
	// SentinelChoice is Promote in the "sentinel" topology making the
	// sentinels promote the node asked for among several replicas.
	SentinelChoice Ability = "sentinel-choice"
)

// Abilities lists every ability, in the order the suite checks them.
var Abilities = []Ability{Kill, Pause, ClockSkew, Failover, Follow, CurrentRoles, SentinelChoice}

// Follower is a cluster that makes a node a replica of another node
// (nemesis.Follower has the same method).
type Follower interface {
	Follow(ctx context.Context, node, primary string) error
}

// Backend is what a backend gives the suite.
type Backend struct {
	// Name names the backend in messages: "local", "docker".
	Name string
	// Start starts a cluster of spec whose node-to-node links go through
	// net, and waits until every node answers.
	Start func(ctx context.Context, spec cluster.Spec, net *linknet.Network) (cluster.Cluster, error)
	// Systems lists the systems the backend runs (cluster.Redis, ...).
	Systems []string
	// Topologies, for a system it names, lists the only topologies of it
	// the backend runs (cluster.Backend.Topologies); the suite checks that
	// Start refuses the others.
	Topologies map[string][]string
	// NodeHosts are the IPv4 addresses a node's Addr may be on; only
	// 127.0.0.1 when empty.
	NodeHosts []string
	// Network makes the network of links a cluster's connections go
	// through; cluster.NewNetwork() when nil.
	Network func() (*linknet.Network, error)
	// Only, when not empty, is the sample of Systems this run tests; the
	// cases of the others are skipped, saying why (OnlyWhy).
	Only    []string
	OnlyWhy string
	// Sampled, when set, makes the run test one topology of the systems it
	// tests, in turn by the day of the year (TodaysTopology): the suite
	// logs which one and why (SampledWhy), and has no test of the others.
	Sampled    bool
	SampledWhy string
	// Cannot maps each ability the backend lacks to the reason, which the
	// skipped cases state.
	Cannot map[Ability]string
	// Leftovers is called on a running cluster and returns a check to call
	// after Close: it lists what of the cluster remains (processes, temp
	// dirs, containers, Docker networks), nothing when all is gone. The
	// suite itself checks the node addresses, the node-to-node links and the
	// Network's kernel table.
	Leftovers func(c cluster.Cluster) func() []string
}

// check reports an error for a Backend the suite cannot run.
func (b Backend) check() error {
	var errs []error
	if b.Name == "" {
		errs = append(errs, errors.New("conformance: Backend.Name is empty"))
	}
	if b.Start == nil {
		errs = append(errs, errors.New("conformance: Backend.Start is nil"))
	}
	if b.Leftovers == nil {
		errs = append(errs, errors.New("conformance: Backend.Leftovers is nil"))
	}
	if len(b.Systems) == 0 {
		errs = append(errs, errors.New("conformance: Backend.Systems is empty"))
	}
	for _, s := range b.Systems {
		if !slices.ContainsFunc(systems, func(x system) bool { return x.name == s }) {
			errs = append(errs, fmt.Errorf("conformance: Backend.Systems names unknown system %q", s))
		}
	}
	for a, why := range b.Cannot {
		if !slices.Contains(Abilities, a) {
			errs = append(errs, fmt.Errorf("conformance: Backend.Cannot names unknown ability %q", a))
		}
		if strings.TrimSpace(why) == "" {
			errs = append(errs, fmt.Errorf("conformance: Backend.Cannot gives no reason for %q", a))
		}
	}
	return errors.Join(errs...)
}

// requires skips the test, saying the backend's reason, when the backend
// declares it cannot do any of abilities.
func (b Backend) requires(t *testing.T, abilities ...Ability) {
	t.Helper()
	for _, a := range abilities {
		if why, ok := b.Cannot[a]; ok {
			t.Skipf("the %s backend declares it cannot do %s: %s", b.Name, a, why)
		}
	}
}

// Run runs the suite against the backend: one subtest per system, one per
// topology within it, one per case within that. The caller skips before
// Run when the backend's own prerequisites (an engine, an image) are
// missing; a server binary missing for a declared system fails its start.
func Run(t *testing.T, b Backend) {
	t.Helper()
	if err := errors.Join(b.check(), coverage()); err != nil {
		t.Fatal(err)
	}
	today := b.TodaysTopology(time.Now().YearDay())
	if today != "" {
		t.Logf("sampled: the %s backend tests %s today (%s)", b.Name, today, b.SampledWhy)
	}
	for _, sys := range systems {
		t.Run(sys.name, func(t *testing.T) {
			if !slices.Contains(b.Systems, sys.name) {
				refused(t, b, sys)
				return
			}
			if len(b.Only) > 0 && !slices.Contains(b.Only, sys.name) {
				t.Skipf("SKIPPED: %s runs on the %s backend, but this run tests only %v: %s", sys.name, b.Name, b.Only, b.OnlyWhy)
			}
			for _, top := range sys.topologies {
				// A sampled run's suite is today's topology: the others
				// are not among its tests, rather than skipped ones.
				switch {
				case !b.runs(top):
					t.Run(top.name, func(t *testing.T) { refusedTopology(t, b, top) })
				case today == "" || today == sys.name+"/"+top.name:
					t.Run(top.name, func(t *testing.T) { runTopology(t, b, sys, top) })
				}
			}
		})
	}
}

// TodaysTopology returns the one topology ("system/topology") that a
// Sampled run of b tests on day (of the year): the topologies of the
// systems it tests, in the suite's order, taken in turn; "" when b is not
// Sampled.
func (b Backend) TodaysTopology(day int) string {
	if !b.Sampled {
		return ""
	}
	var all []string
	for _, sys := range systems {
		if !slices.Contains(b.Systems, sys.name) || (len(b.Only) > 0 && !slices.Contains(b.Only, sys.name)) {
			continue
		}
		for _, top := range sys.topologies {
			if b.runs(top) {
				all = append(all, sys.name+"/"+top.name)
			}
		}
	}
	if len(all) == 0 {
		return ""
	}
	return all[day%len(all)]
}

// runs reports whether the backend declares the topology: its system's
// topologies are not limited (Topologies), or they name its declared one.
func (b Backend) runs(top topology) bool {
	declared, err := cluster.TopologyOf(top.spec)
	if err != nil {
		return false
	}
	return cluster.Backend{Systems: b.Systems, Topologies: b.Topologies}.Runs(top.spec.System, declared.Name)
}

// refused checks that the backend refuses a system it does not declare,
// before anything starts.
func refused(t *testing.T, b Backend, sys system) {
	refuse(t, b, sys.topologies[0].spec)
}

// refusedTopology checks that the backend refuses a topology of a system
// it runs whose topologies it limits, and does not declare that one.
func refusedTopology(t *testing.T, b Backend, top topology) {
	refuse(t, b, top.spec)
}

// refuse checks that Start of spec fails with cluster.ErrUnavailable and
// creates no link.
func refuse(t *testing.T, b Backend, spec cluster.Spec) {
	nw := newNetwork(t, b)
	what := spec.System + "/" + spec.Topology
	c, err := b.Start(ctxFor(t, time.Minute), spec, nw)
	if err == nil {
		_ = c.Close()
		t.Fatalf("the %s backend does not declare %s, but Start of %+v succeeded", b.Name, what, spec)
	}
	if !errors.Is(err, cluster.ErrUnavailable) {
		t.Fatalf("Start of an undeclared %s: %v, want an error wrapping cluster.ErrUnavailable", what, err)
	}
	if links := nw.Links(); len(links) != 0 {
		t.Errorf("a refused Start left links %v", links)
	}
}

// env is what the cases of one topology share.
type env struct {
	b      Backend
	sys    system
	top    topology
	c      cluster.Cluster
	nw     *linknet.Network
	logDir string // the spec's LogDir
	done   bool   // teardown ran
}

// runTopology starts one cluster of the topology and runs its cases in order.
func runTopology(t *testing.T, b Backend, sys system, top topology) {
	b.requires(t, top.requires...)
	nw := newNetwork(t, b)
	spec := top.spec
	spec.LogDir = t.TempDir()
	began := time.Now()
	c, err := b.Start(ctxFor(t, 3*time.Minute), spec, nw)
	if err != nil {
		t.Fatalf("Start %s/%s: %v", sys.name, top.name, err)
	}
	t.Logf("%s/%s started in %v", sys.name, top.name, time.Since(began).Round(time.Millisecond))
	e := &env{b: b, sys: sys, top: top, c: c, nw: nw, logDir: spec.LogDir}
	leftovers := b.Leftovers(c)
	t.Cleanup(func() {
		if !e.done {
			_ = c.Close()
			for _, l := range leftovers() {
				t.Errorf("left behind after Close: %s", l)
			}
		}
	})
	for _, cs := range top.cases {
		t.Run(cs.name, func(t *testing.T) { cs.run(t, e) })
	}
	t.Run("teardown leaves nothing", func(t *testing.T) { teardown(t, e, leftovers) })
}

// newNetwork returns the backend's Network, closed at cleanup, and checks
// there that its kernel table is gone.
func newNetwork(t *testing.T, b Backend) *linknet.Network {
	t.Helper()
	newNet := b.Network
	if newNet == nil {
		newNet = func() (*linknet.Network, error) { return cluster.NewNetwork() }
	}
	nw, err := newNet()
	if err != nil {
		t.Fatalf("NewNetwork: %v", err)
	}
	t.Cleanup(func() {
		if err := nw.Close(); err != nil {
			t.Errorf("Network.Close: %v", err)
		}
		if tableExists(t, nw.Table()) {
			t.Errorf("nftables table %s remains after Network.Close", nw.Table())
		}
	})
	return nw
}

// testCase is one named case of a topology.
type testCase struct {
	name string
	run  func(t *testing.T, e *env)
}

// topology is one cluster shape of a system and the cases run on it.
type topology struct {
	name     string
	spec     cluster.Spec
	requires []Ability // the topology is not started without them
	cases    []testCase
}

// system is one system the suite knows, its topologies and how to talk to
// its servers.
type system struct {
	name       string
	topologies []topology
	probe      probe
}

// ctxFor returns a context that ends after d or at the test's end.
func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls cond until it holds, failing the test when the deadline
// passes first; it bounds a wait, it does not time anything.
func waitFor(t *testing.T, within time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s (last: %v)", within, what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// generous bounds every wait for a server to recover, elect or catch up.
const generous = 60 * time.Second

// quiet is how long a negative check gives a write to cross a cut (or a
// paused node to answer) before it concludes that it did not; a wrong
// conclusion can only come from a fault that does not hold.
const quiet = time.Second

// node returns the named node of the cluster.
func (e *env) node(t *testing.T, name string) cluster.Node {
	t.Helper()
	for _, n := range e.c.Nodes() {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("no node %s in %v", name, e.c.Nodes())
	return cluster.Node{}
}

// dataNodes returns the nodes that are not sentinels.
func (e *env) dataNodes() []cluster.Node {
	var out []cluster.Node
	for _, n := range e.c.Nodes() {
		if n.Role != cluster.RoleSentinel {
			out = append(out, n)
		}
	}
	return out
}

// tableExists reports whether the nftables table (family ip) exists.
func tableExists(t *testing.T, table string) bool {
	t.Helper()
	out, err := exec.Command("nft", "list", "tables", "ip").CombinedOutput()
	if err != nil {
		t.Fatalf("nft list tables: %v: %s", err, out)
	}
	return slices.Contains(strings.Fields(string(out)), table)
}

// listening reports whether something accepts connections on addr.
func listening(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}
