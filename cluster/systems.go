package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
)

// SystemInfo declares what the harness knows of a system under test, once:
// every backend, the validation of scenarios and the clock faults read it.
type SystemInfo struct {
	// Name is the system's name in scenarios (Redis, Postgres, ...).
	Name string
	// NoClockSkew, when not empty, says why the nodes' wall clocks cannot
	// be offset by the clock-skew preload library; SetClockOffset then
	// reports ErrUnavailable with this reason on every backend.
	NoClockSkew string
}

// Systems lists every system a cluster can run, in the order they are
// shown.
var Systems = []SystemInfo{
	{Name: Redis},
	{Name: Postgres},
	{Name: ZooKeeper},
	{Name: Etcd, NoClockSkew: "etcd is a Go binary: it reads the clock through the vDSO, not libc, so LD_PRELOAD cannot offset it"},
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

// Backend is one way of running clusters (local processes, containers): its
// name as --backend takes it, the systems it runs, and how it starts them.
type Backend struct {
	Name    string
	Systems []string
	Start   StartFunc
}

// Check returns nil when the backend runs spec's system, and otherwise a
// one-line error naming the backend, the system and the systems it runs. It
// is meant to be called before anything starts.
func (b Backend) Check(spec Spec) error {
	if _, err := LookupSystem(spec.System); err != nil {
		return err
	}
	if !slices.Contains(b.Systems, spec.System) {
		return fmt.Errorf("%w: the %s backend does not run %s (it runs %s)", ErrUnavailable, b.Name, spec.System, strings.Join(b.Systems, ", "))
	}
	return nil
}
