// Package backends owns the list of the backends the harness can run a
// cluster with: a new backend is declared here, once, and every command
// that takes --backend reads All, and builds the one it names with For
// (the ssh backend bound to its inventory).
package backends

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/docker"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
	"github.com/jepsen-lite/jepsen-lite/cluster/local"
	"github.com/jepsen-lite/jepsen-lite/cluster/ssh"
)

// ErrNoInventory reports the ssh backend used without an inventory: its
// entry in All starts nothing; For binds one.
var ErrNoInventory = errors.New("backends: the ssh backend needs an inventory (--inventory FILE)")

// ErrInventoryNotUsed reports an inventory given to a backend that takes
// none.
var ErrInventoryNotUsed = errors.New("backends: only the ssh backend takes an inventory")

// ErrUnknown reports a backend name that All does not have.
var ErrUnknown = errors.New("backends: unknown backend")

// Options are what a backend needs beyond its name.
type Options struct {
	// Inventory is the file of the ssh backend's hosts
	// (ssh.LoadInventory); required by it, refused by the others.
	Inventory string
}

// All returns every backend, the default (local) first. The ssh backend's
// entry declares what it runs but starts nothing (ErrNoInventory): For
// binds it to an inventory.
func All() []cluster.Backend {
	unbound := ssh.Declared
	unbound.Start = func(context.Context, cluster.Spec, *linknet.Network) (cluster.Cluster, error) {
		return nil, ErrNoInventory
	}
	return []cluster.Backend{local.Backend, docker.Backend, unbound}
}

// For returns the backend of All called name, bound to o: the ssh
// backend reads and checks its inventory file before anything starts, and
// gets the clock-skew library where the local backend finds it
// (local.FindClockSkewLibrary; without it, a run that skews node clocks is
// refused). Its errors are of one line, naming the name or the file.
func For(name string, o Options) (cluster.Backend, error) {
	var known []string
	for _, b := range All() {
		known = append(known, b.Name)
		if b.Name != name {
			continue
		}
		if b.Name != ssh.Declared.Name {
			if o.Inventory != "" {
				return cluster.Backend{}, fmt.Errorf("%w (--backend %s, inventory %s)", ErrInventoryNotUsed, name, o.Inventory)
			}
			return b, nil
		}
		return sshFor(o)
	}
	return cluster.Backend{}, fmt.Errorf("%w %q (known: %s)", ErrUnknown, name, strings.Join(known, ", "))
}

// sshFor returns the ssh backend on the inventory of o.
func sshFor(o Options) (cluster.Backend, error) {
	if o.Inventory == "" {
		return cluster.Backend{}, ErrNoInventory
	}
	inv, err := ssh.LoadInventory(o.Inventory)
	if err != nil {
		return cluster.Backend{}, errors.New(strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; "))
	}
	lib, libErr := local.FindClockSkewLibrary("")
	if libErr != nil {
		return withoutClockSkew(ssh.NewBackend(inv), libErr), nil
	}
	return ssh.NewBackend(inv, ssh.WithClockSkewLibrary(lib)), nil
}

// withoutClockSkew returns b, whose start refuses a spec that skews node
// clocks, with that refusal saying why the library is missing (libErr)
// and how to provide it.
func withoutClockSkew(b cluster.Backend, libErr error) cluster.Backend {
	start := b.Start
	b.Start = func(ctx context.Context, spec cluster.Spec, net *linknet.Network) (cluster.Cluster, error) {
		c, err := start(ctx, spec, net)
		if err != nil && spec.ClockSkew {
			err = fmt.Errorf("%w (%v)", err, libErr)
		}
		return c, err
	}
	return b
}
