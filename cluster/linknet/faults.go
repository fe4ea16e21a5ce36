package linknet

// faults.go holds the faults a Network applies to links and heals: their
// kinds and directions, and the kernel sets of cuts and resets.

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"
)

// FaultKind names what a Fault does to a link.
type FaultKind string

// The fault kinds a Network can apply.
const (
	// FaultCut drops, in the kernel, every packet of the link's connections
	// (in the fault's Direction), as a cut cable would: connections stay
	// open, the senders' TCP keeps the unacknowledged data and retransmits
	// it, and new connections hang in SYN_SENT. Healing lets the next
	// retransmission through: what waited is delivered and nothing is
	// closed. A connection ends during a cut only when the OS ends it (see
	// docs/network.md: retransmission timeout, keepalive, TCP_USER_TIMEOUT).
	FaultCut FaultKind = "cut"
	// FaultReset resets (TCP RST) each connection of the link as soon as
	// data flows on it, until healed: the kernel answers the packet with a
	// RST, and the connection's other end is reset right after (see
	// resetWatch). A new connection's SYN is answered with a RST (refused).
	// It is the one fault that closes connections.
	FaultReset FaultKind = "reset"
	// FaultLatency delays the data the upstream sends back (replies) by
	// Delay ± Jitter, so a request/reply round trip gains about Delay. It
	// needs a Network made WithProxies.
	FaultLatency FaultKind = "latency"
)

// Direction says which packets of a link a cut drops, or a reset answers
// with a RST.
type Direction string

// The directions of a cut.
const (
	// DirectionBoth drops the packets of both ends (the default).
	DirectionBoth Direction = ""
	// DirectionForward drops only what the link's "from" end sends to its
	// "to" end (requests; a new connection's SYN).
	DirectionForward Direction = "forward"
	// DirectionBack drops only what the "to" end sends back (replies; a
	// new connection's SYN-ACK).
	DirectionBack Direction = "back"
)

// Fault is a network fault applied to a set of links until healed.
type Fault struct {
	Kind      FaultKind
	Direction Direction     // FaultCut, FaultReset: which packets are dropped or reset
	Delay     time.Duration // FaultLatency: the added delay
	Jitter    time.Duration // FaultLatency: the random variation of the delay
}

// check reports an error for a fault the Network cannot apply.
func (f Fault) check(proxied bool) error {
	switch f.Kind {
	case FaultCut, FaultReset:
		switch f.Direction {
		case DirectionBoth, DirectionForward, DirectionBack:
			return nil
		}
		return fmt.Errorf("linknet: unknown %s direction %q (known: forward, back, or empty for both)", f.Kind, f.Direction)
	case FaultLatency:
		if f.Delay < 0 || f.Jitter < 0 {
			return fmt.Errorf("linknet: latency fault with negative delay %v or jitter %v", f.Delay, f.Jitter)
		}
		if !proxied {
			return fmt.Errorf("%w: latency needs a network whose links go through proxies (linknet.WithProxies)", ErrUnavailable)
		}
		return nil
	default:
		return fmt.Errorf("linknet: unknown fault kind %q", f.Kind)
	}
}

// faulty reports whether a fault is on the link.
func (l *link) faulty() bool { return l.latency || len(l.kernel) > 0 }

// resetting reports whether a reset is on the link.
func (l *link) resetting() bool {
	for f := range l.kernel {
		if f.Kind == FaultReset {
			return true
		}
	}
	return false
}

// Apply applies the fault to every named link. A fault of a kind already
// applied to a link replaces it (latency) or adds to it (cut, reset).
// Unknown names are an error and nothing is applied then.
func (n *Network) Apply(f Fault, names ...string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := f.check(n.proxied); err != nil {
		return err
	}
	var ls []*link
	for _, name := range names {
		l, err := n.link(name)
		if err != nil {
			return err
		}
		ls = append(ls, l)
	}
	if f.Kind == FaultLatency {
		if slices.ContainsFunc(ls, func(l *link) bool { return l.remote != nil }) {
			return fmt.Errorf("%w: latency on a link between two other hosts", ErrUnavailable)
		}
		return applyLatency(f, ls)
	}
	if err := applyRemote(f, ls); err != nil {
		return err
	}
	return n.applyKernel(f, names, ls)
}

// applyKernel applies a cut or a reset to the links ls (named names) with
// the kernel's sets, and starts the reset watcher for a reset; the caller
// holds n.mu.
func (n *Network) applyKernel(f Fault, names []string, ls []*link) error {
	if f.Kind == FaultReset && slices.ContainsFunc(ls, func(l *link) bool { return l.shared != nil }) {
		if _, err := trackedMarks(); err != nil {
			return fmt.Errorf("%w: reset of a per-source link: %v", ErrUnavailable, err)
		}
	}
	if f.Kind == FaultReset && n.closer == nil && slices.ContainsFunc(local(ls), func(l *link) bool { return l.away }) {
		return fmt.Errorf("%w: a reset of a link to another host needs the backend's EndCloser (Network.SetEndCloser)", ErrUnavailable)
	}
	var b strings.Builder
	var ends []linkEnds
	for _, l := range local(ls) {
		if f.Kind == FaultReset && !l.resetting() {
			ends = append(ends, l.ends())
		}
		for _, set := range f.sets() {
			if !l.inSet(set) {
				fmt.Fprintf(&b, "add element ip %s %s { %s }\n", n.table, l.nftSet(set), l.mark())
			}
		}
	}
	if len(ends) > 0 {
		// The connections with both ends before the rule is in place.
		n.pmu.Lock()
		defer n.pmu.Unlock()
		if n.pairs == nil {
			n.pairs = map[string]bool{}
		}
		maps.Copy(n.pairs, completeResets(ends, nil))
	}
	if b.Len() > 0 {
		if err := n.sh.run(b.String()); err != nil {
			return fmt.Errorf("linknet: %s %s: %w", f.Kind, strings.Join(names, ", "), err)
		}
	}
	key := Fault{Kind: f.Kind, Direction: f.Direction}
	for _, l := range ls {
		l.kernel[key]++
	}
	if f.Kind == FaultReset && !n.watching && len(local(ls)) > 0 {
		n.watching = true
		n.watchDone = make(chan struct{})
		go n.resetWatch(n.watchDone)
	}
	return nil
}

// kernelSets are the nft sets of the kernel faults.
var kernelSets = []string{"cut_forward", "cut_back", "reset_forward", "reset_back"}

// awaySets are the nft sets of the resets of links to other hosts
// (link.nftSet).
var awaySets = []string{"reset_away_forward", "reset_away_back"}

// sets returns the nft sets a cut or reset puts its links' marks in.
func (f Fault) sets() []string {
	kind := "cut_"
	if f.Kind == FaultReset {
		kind = "reset_"
	}
	switch f.Direction {
	case DirectionForward:
		return []string{kind + "forward"}
	case DirectionBack:
		return []string{kind + "back"}
	}
	return []string{kind + "forward", kind + "back"}
}

// inSet reports whether the link's mark is in the named set.
func (l *link) inSet(set string) bool {
	for f := range l.kernel {
		if slices.Contains(f.sets(), set) {
			return true
		}
	}
	return false
}

// unfaultScript returns the nft commands that take the link's mark out of
// every set it is in (none for a link between hosts, whose cuts are not
// in the table); the caller holds n.mu.
func (n *Network) unfaultScript(l *link) string { return n.setsScript(l, "delete") }

// faultScript returns the nft commands that put the link's mark in every
// set its faults say; the caller holds n.mu.
func (n *Network) faultScript(l *link) string { return n.setsScript(l, "add") }

// setsScript returns the nft commands that add or delete (verb) the
// link's mark in every set its faults say.
func (n *Network) setsScript(l *link, verb string) string {
	var b strings.Builder
	if l.remote != nil {
		return ""
	}
	for _, set := range kernelSets {
		if l.inSet(set) {
			fmt.Fprintf(&b, "%s element ip %s %s { %s }\n", verb, n.table, l.nftSet(set), l.mark())
		}
	}
	return b.String()
}

// Cut partitions the named links in both directions: connections stay
// open, packets are dropped until the heal.
func (n *Network) Cut(names ...string) error { return n.Apply(Fault{Kind: FaultCut}, names...) }

// Reset closes the named links' connections and refuses new ones until healed.
func (n *Network) Reset(names ...string) error { return n.Apply(Fault{Kind: FaultReset}, names...) }

// Latency delays the replies on the named links by delay ± jitter.
func (n *Network) Latency(names []string, delay, jitter time.Duration) error {
	return n.Apply(Fault{Kind: FaultLatency, Delay: delay, Jitter: jitter}, names...)
}

// Heal removes every fault from the named links.
func (n *Network) Heal(names ...string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	var errs []error
	var ls []*link
	var b strings.Builder
	for _, name := range names {
		l, err := n.link(name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ls = append(ls, l)
		b.WriteString(n.unfaultScript(l))
	}
	errs = append(errs, unfaultRemote(ls...))
	if b.Len() > 0 {
		if err := n.sh.run(b.String()); err != nil {
			return errors.Join(append(errs, fmt.Errorf("linknet: heal %s: %w", strings.Join(names, ", "), err))...)
		}
	}
	for _, l := range ls {
		errs = append(errs, heal(l))
	}
	return errors.Join(errs...)
}

// HealAll removes every fault from every link.
func (n *Network) HealAll() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil
	}
	var flush strings.Builder
	for _, set := range append(slices.Clone(kernelSets), awaySets...) {
		fmt.Fprintf(&flush, "flush set ip %s %s\n", n.table, set)
	}
	if err := n.sh.run(flush.String()); err != nil {
		return fmt.Errorf("linknet: heal all: %w", err)
	}
	ls := slices.Collect(maps.Values(n.links))
	errs := []error{unfaultRemote(ls...)}
	for _, l := range ls {
		errs = append(errs, heal(l))
	}
	return errors.Join(errs...)
}

// heal forgets the link's kernel faults (already removed) and removes its
// latency toxic.
func heal(l *link) error {
	clear(l.kernel)
	if !l.latency {
		return nil
	}
	l.latency = false
	return removeLatency(l)
}

// Faulty returns the sorted names of the links that currently carry a fault.
func (n *Network) Faulty() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for name, l := range n.links {
		if l.faulty() {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}
