package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
)

// SystemInfo declares what the harness knows of a system under test, once:
// every backend, the validation of scenarios, the clock faults, the node
// image and the cold-start benchmarks read it. Adding a system is adding
// its declaration to Systems (docs/design.md §10); a reader never falls
// back to another system's facts.
type SystemInfo struct {
	// Name is the system's name in scenarios (Redis, Postgres, ...).
	Name string
	// Ready is the readiness probe of its server nodes: nil once the node
	// at addr serves clients, whatever backend runs it.
	Ready func(ctx context.Context, addr string) error
	// Port is the TCP port its server listens on for clients where the
	// backend chooses it (in a container).
	Port int
	// Settings returns the server settings of a cluster of spec that every
	// backend gives its nodes (config lines or flags, in the server's own
	// syntax); a backend adds only addresses, directories and logs.
	Settings func(spec Spec) []string
	// Topologies are its topologies; the first is the default, which an
	// empty Spec.Topology selects.
	Topologies []Topology
	// NoClockSkew, when not empty, says why the nodes' wall clocks cannot
	// be offset by the clock-skew preload library; SetClockOffset then
	// reports ErrUnavailable with this reason on every backend.
	NoClockSkew string
	// Packages are the Debian packages its servers need, installed in the
	// node image (images/packages.txt) and on the host (scripts/deps.sh).
	Packages []string
}

// Topology declares one topology of a system.
type Topology struct {
	// Name is the topology as Spec.Topology names it. The one topology of
	// a system that declares it with an empty name is selected by any
	// Spec.Topology.
	Name string
	// Nodes returns the nodes, by name and role, of a cluster of this
	// topology with count server nodes (at least 1), or why it cannot have
	// that many.
	Nodes func(count int) ([]Node, error)
	// PeerLinks says that its nodes dial one another once there are two or
	// more (replication, a quorum): a backend then needs a network for the
	// node-to-node links, through which the partitions cut them.
	PeerLinks bool
	// OneAdvertisedAddress says that its peers all dial one advertised
	// address of each node, the same in every peer's view (etcd derives
	// member ids from the advertised peer URLs): where the nodes share one
	// network namespace (the local backend), the links into a node are then
	// told apart by the source's group id (linknet.Network.LinkFrom), one
	// per source, and not by the address each peer dials. It implies
	// PeerLinks.
	OneAdvertisedAddress bool
	// PromotionRetry is the least time between two promotions of one node
	// that the topology's own promotion makes (zero: no bound): a Redis
	// Cluster replica runs its next failover election only
	// ClusterFailoverRetry after its last. A failover step sooner than
	// that waits for the server, and fails when the run ends first; a
	// hunt spaces the failovers it draws by it.
	PromotionRetry time.Duration
	// ColdStarts are the sizes the cold-start benchmarks of every backend
	// start it at (those of the catalog's scenarios), each with its name.
	ColdStarts []ColdStart
}

// ColdStart is one size of a topology the cold-start benchmarks start.
type ColdStart struct {
	Name  string // the benchmark's name ("redis-sentinel")
	Nodes int
}

// Systems lists every system a cluster can run, in the order they are
// shown.
var Systems = []SystemInfo{
	{
		Name: Redis, Ready: RedisReady, Port: 6379, Settings: RedisConfig,
		Topologies: redisTopologies,
		Packages:   []string{"redis-server", "redis-sentinel"},
	},
	{
		Name: Postgres, Ready: PostgresReady, Port: 5432, Settings: PostgresSettings,
		Topologies: []Topology{{Nodes: singleNode(Postgres), ColdStarts: []ColdStart{{"postgres", 1}}}},
		Packages:   []string{"postgresql"},
	},
	{
		Name: ZooKeeper, Ready: ZooKeeperReady, Port: 2181,
		Settings:   func(spec Spec) []string { return ZooKeeperConfig(max(spec.Nodes, 1)) },
		Topologies: []Topology{{Nodes: peers, PeerLinks: true, ColdStarts: []ColdStart{{"zookeeper-1", 1}, {"zookeeper-3", 3}}}},
		// Debian's jar and its dependencies, the JRE, and SLF4J's simple
		// logger so that servers log to the node log.
		Packages: []string{"zookeeper", "default-jre-headless", "libslf4j-java"},
	},
	{
		Name: Etcd, Ready: EtcdReady, Port: 2379, Settings: func(Spec) []string { return EtcdFlags() },
		Topologies:  []Topology{{Nodes: peers, PeerLinks: true, OneAdvertisedAddress: true, ColdStarts: []ColdStart{{"etcd-1", 1}, {"etcd-3", 3}}}},
		NoClockSkew: "etcd is a Go binary: it reads the clock through the vDSO, not libc, so LD_PRELOAD cannot offset it",
		Packages:    []string{"etcd-server"},
	},
	{
		Name: MariaDB, Ready: MariaDBReady, Port: 3306, Settings: MariaDBSettings,
		Topologies: []Topology{{Nodes: singleNode(MariaDB), ColdStarts: []ColdStart{{"mariadb", 1}}}},
		// Debian's server (mariadbd and mariadb-install-db).
		Packages: []string{"mariadb-server"},
	},
}

// SystemNames returns the names of Systems in order.
func SystemNames() []string {
	out := make([]string, len(Systems))
	for i, s := range Systems {
		out[i] = s.Name
	}
	return out
}

// SkewableSystems returns the names of the systems whose nodes' wall
// clocks can be offset (no NoClockSkew), in order.
func SkewableSystems() []string {
	var out []string
	for _, s := range Systems {
		if s.NoClockSkew == "" {
			out = append(out, s.Name)
		}
	}
	return out
}

// Topology returns the declared topology that selects: its default for an
// empty name, the one of that name, or its one topology when that is
// declared without a name.
func (s SystemInfo) Topology(name string) (Topology, error) {
	if len(s.Topologies) == 0 {
		return Topology{}, fmt.Errorf("cluster: %s declares no topology", s.Name)
	}
	if name == "" || len(s.Topologies) == 1 && s.Topologies[0].Name == "" {
		return s.Topologies[0], nil
	}
	names := make([]string, len(s.Topologies))
	for i, t := range s.Topologies {
		if t.Name == name {
			return t, nil
		}
		names[i] = t.Name
	}
	return Topology{}, fmt.Errorf("cluster: unknown %s topology %q (known: %s)", s.Name, name, strings.Join(names, ", "))
}

// Settings returns the declared server settings (SystemInfo.Settings) of a
// cluster of spec, which every backend gives its nodes; none for an
// undeclared system, which Layout has refused before any backend asks.
func Settings(spec Spec) []string {
	s, err := LookupSystem(spec.System)
	if err != nil || s.Settings == nil {
		return nil
	}
	return s.Settings(spec)
}

// LookupSystem returns the declaration of the named system.
func LookupSystem(name string) (SystemInfo, error) {
	for _, s := range Systems {
		if s.Name == name {
			return s, nil
		}
	}
	return SystemInfo{}, fmt.Errorf("cluster: unknown system %q (known: %s)", name, strings.Join(SystemNames(), ", "))
}

// ClockSkewError returns nil when the nodes of system can have their clocks
// offset, and otherwise an error wrapping ErrUnavailable that names node and
// says why not.
func ClockSkewError(system, node string) error {
	s, err := LookupSystem(system)
	if err != nil {
		return err
	}
	if s.NoClockSkew != "" {
		return fmt.Errorf("%w: clock of %s: %s", ErrUnavailable, node, s.NoClockSkew)
	}
	return nil
}

// StartFunc starts a cluster for a spec, its node-to-node links going
// through net.
type StartFunc func(ctx context.Context, spec Spec, net *linknet.Network) (Cluster, error)

// Backend is one way of running clusters (local processes, containers,
// hosts over SSH): its name as --backend takes it, the systems it runs, and
// how it starts them.
type Backend struct {
	Name    string
	Systems []string
	// Topologies, for a system it names, lists the only topologies of that
	// system the backend runs (by their declared names); a system it does
	// not name runs in every declared topology.
	Topologies map[string][]string
	Start      StartFunc
	// LinkAddress is the IPv4 address of the harness's on which the
	// workers' links listen (linknet.WithLinkAddress), one the nodes
	// reach it on; 127.0.0.1 when empty. The runner makes each run's
	// network with it.
	LinkAddress string
}

// Check returns nil when the backend runs spec's system in spec's topology,
// and otherwise a one-line error naming the backend, the system (and
// topology) and what it runs. It is meant to be called before anything
// starts.
func (b Backend) Check(spec Spec) error {
	if _, err := LookupSystem(spec.System); err != nil {
		return err
	}
	if !slices.Contains(b.Systems, spec.System) {
		return fmt.Errorf("%w: the %s backend does not run %s (it runs %s)", ErrUnavailable, b.Name, spec.System, strings.Join(b.Systems, ", "))
	}
	only, ok := b.Topologies[spec.System]
	if !ok {
		// Every topology of the system runs: an unknown one is for the
		// backend's own start to refuse, with its own error.
		return nil
	}
	top, err := TopologyOf(spec)
	if err != nil {
		return err
	}
	if !slices.Contains(only, top.Name) {
		return fmt.Errorf("%w: the %s backend does not run %s's topology %q (it runs %s)", ErrUnavailable, b.Name, spec.System, top.Name, strings.Join(only, ", "))
	}
	return nil
}

// Runs reports whether the backend runs the system's topology (by its
// declared name).
func (b Backend) Runs(system, topology string) bool {
	if !slices.Contains(b.Systems, system) {
		return false
	}
	only, ok := b.Topologies[system]
	return !ok || slices.Contains(only, topology)
}
