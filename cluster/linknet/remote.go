package linknet

// remote.go holds the links between two other hosts: their connections
// never pass the harness, so their cuts are made where they pass, by the
// Faulter the backend gives (rules on the hosts), and the Network keeps
// only their names, upstreams and faults.

import (
	"errors"
	"fmt"
	"slices"
)

// Faulter drops, or stops dropping, the packets of one link's
// connections in one direction, where they pass: on the hosts of a link
// between two other hosts (LinkOn). Like the Network's own cuts, it drops
// packets at their receiver, after they left the sender.
type Faulter interface {
	// Fault starts (on) or stops dropping the packets of the link's
	// connections that go in dir: DirectionForward (from the link's
	// "from" end to its "to" end) or DirectionBack.
	Fault(dir Direction, on bool) error
}

// LinkOn creates the link named name to upstream whose connections go
// from one host to another without passing the harness: its address is
// upstream itself (the servers dial it directly), and its cuts are on's
// (a reset or latency of it is cluster.ErrUnavailable). Names are unique.
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

// setDirection maps a kernel set of a cut to the direction it drops.
var setDirection = map[string]Direction{"cut_forward": DirectionForward, "cut_back": DirectionBack}

// applyRemote applies a cut to the links between hosts among ls; the
// caller holds n.mu.
func applyRemote(f Fault, ls []*link) error {
	if !slices.ContainsFunc(ls, func(l *link) bool { return l.remote != nil }) {
		return nil
	}
	if f.Kind != FaultCut {
		return fmt.Errorf("%w: a %s of a link between two other hosts (only cuts are made there)", ErrUnavailable, f.Kind)
	}
	var errs []error
	for _, l := range ls {
		if l.remote == nil {
			continue
		}
		for _, set := range f.sets() {
			if !l.inSet(set) {
				errs = append(errs, l.remote.Fault(setDirection[set], true))
			}
		}
	}
	return errors.Join(errs...)
}

// unfaultRemote stops every cut of a link between hosts; nothing for
// another link. The caller holds n.mu.
func unfaultRemote(l *link) error {
	if l.remote == nil {
		return nil
	}
	var errs []error
	for _, set := range []string{"cut_forward", "cut_back"} {
		if l.inSet(set) {
			errs = append(errs, l.remote.Fault(setDirection[set], false))
		}
	}
	return errors.Join(errs...)
}

// local returns the links of ls that pass the harness (not LinkOn's).
func local(ls []*link) []*link {
	return slices.DeleteFunc(slices.Clone(ls), func(l *link) bool { return l.remote != nil })
}
