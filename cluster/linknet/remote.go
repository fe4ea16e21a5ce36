package linknet

// remote.go holds the links between two other hosts: their connections
// never pass the harness, so their cuts and resets are made where they
// pass, by the Faulter the backend gives (rules on the hosts), and the
// Network keeps only their names, upstreams and faults.

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Faulter drops, or stops dropping, the packets of one link's
// connections in one direction, where they pass: on the hosts of a link
// between two other hosts (LinkOn). Like the Network's own cuts, it drops
// packets at their receiver, after they left the sender.
// The links of one fault call their Faulters at once (eachRemote), so a
// Faulter may be called from several goroutines.
type Faulter interface {
	// Fault starts (on) or stops dropping the packets of the link's
	// connections that go in dir: DirectionForward (from the link's
	// "from" end to its "to" end) or DirectionBack.
	Fault(dir Direction, on bool) error
}

// Resetter is the optional ability of a Faulter to reset a link between
// two other hosts as the Network resets its own (FaultReset): while on,
// the packets of the link's connections that go in dir are answered with
// a RST where they arrive, the connection's other end (on the host that
// answered) is destroyed right after, and a new connection whose SYN goes
// in dir is refused. A Faulter without it cannot reset (ErrUnavailable).
type Resetter interface {
	// Reset starts (on) or stops resetting the link's connections in
	// dir: DirectionForward or DirectionBack.
	Reset(dir Direction, on bool) error
}

// LinkOn creates the link named name to upstream whose connections go
// from one host to another without passing the harness: its address is
// upstream itself (the servers dial it directly), and its cuts are on's,
// its resets too when on is a Resetter (else a reset of it, and latency,
// are cluster.ErrUnavailable). Names are unique.
func (n *Network) LinkOn(name, upstream string, on Faulter) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return "", ErrClosed
	}
	if name == "" || upstream == "" || on == nil {
		return "", fmt.Errorf("linknet: a link between hosts needs a name, an upstream and a Faulter (got %q, %q)", name, upstream)
	}
	if _, ok := n.links[name]; ok {
		return "", fmt.Errorf("linknet: link %q already exists", name)
	}
	n.links[name] = &link{name: name, addr: upstream, upstream: upstream, target: upstream, kernel: map[Fault]int{}, remote: on}
	return upstream, nil
}

// setDirection maps a kernel set of a cut or a reset to the direction it
// drops or resets.
var setDirection = map[string]Direction{
	"cut_forward": DirectionForward, "cut_back": DirectionBack,
	"reset_forward": DirectionForward, "reset_back": DirectionBack,
}

// applyRemote applies a cut or a reset to the links between hosts among
// ls; the caller holds n.mu.
func applyRemote(f Fault, ls []*link) error {
	if !slices.ContainsFunc(ls, func(l *link) bool { return l.remote != nil }) {
		return nil
	}
	if f.Kind != FaultCut && f.Kind != FaultReset {
		return fmt.Errorf("%w: a %s of a link between two other hosts (only cuts and resets are made there)", ErrUnavailable, f.Kind)
	}
	for _, l := range ls {
		if _, ok := l.remote.(Resetter); l.remote != nil && f.Kind == FaultReset && !ok {
			return fmt.Errorf("%w: a reset of %s, a link between two other hosts whose backend only cuts", ErrUnavailable, l.name)
		}
	}
	return eachRemote(ls, func(l *link) error {
		var errs []error
		for _, set := range f.sets() {
			if !l.inSet(set) {
				errs = append(errs, remoteFault(l, set, true))
			}
		}
		return errors.Join(errs...)
	})
}

// eachRemote calls fn for each link between hosts among ls, all at once,
// and returns their errors: the links of one fault are on several hosts,
// and a backend that gathers the commands that arrive together on a host
// (the ssh backend's batches) then takes about one round trip per host,
// not one per link and direction.
func eachRemote(ls []*link, fn func(*link) error) error {
	errs := make([]error, len(ls))
	var wg sync.WaitGroup
	for i, l := range ls {
		if l.remote == nil {
			continue
		}
		wg.Go(func() { errs[i] = fn(l) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// remoteFault starts or stops, by the link's Faulter, the cut or reset of
// the kernel set's direction.
func remoteFault(l *link, set string, on bool) error {
	if strings.HasPrefix(set, "reset_") {
		return l.remote.(Resetter).Reset(setDirection[set], on)
	}
	return l.remote.Fault(setDirection[set], on)
}

// unfaultRemote stops every cut and reset of the links between hosts
// among ls, all at once (eachRemote); nothing for another link. The
// caller holds n.mu.
func unfaultRemote(ls ...*link) error {
	return eachRemote(ls, func(l *link) error {
		var errs []error
		for _, set := range kernelSets {
			if l.inSet(set) {
				errs = append(errs, remoteFault(l, set, false))
			}
		}
		return errors.Join(errs...)
	})
}

// local returns the links of ls that pass the harness (not LinkOn's).
func local(ls []*link) []*link {
	return slices.DeleteFunc(slices.Clone(ls), func(l *link) bool { return l.remote != nil })
}
