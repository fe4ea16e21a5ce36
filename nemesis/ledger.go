package nemesis

import (
	"errors"
	"sync"

	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
)

// linkLedger remembers the network faults the nemesis applied to each link,
// so that healing one of two overlapping faults (a partition of n1 and a
// partition of worker 0 both cut "w0->n1") leaves the other in place. Its
// zero value is ready to use.
type linkLedger struct {
	mu sync.Mutex
	on map[string][]linknet.Fault // the faults applied to a link, oldest first
}

// apply applies f to links and records it.
func (l *linkLedger) apply(nw *linknet.Network, f linknet.Fault, links ...string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := nw.Apply(f, links...); err != nil {
		return err
	}
	if l.on == nil {
		l.on = map[string][]linknet.Fault{}
	}
	for _, name := range links {
		l.on[name] = append(l.on[name], f)
	}
	return nil
}

// heal removes one application of f from each link: the links are healed,
// all in one call (on other hosts their commands go together), and the
// faults still recorded on them are applied again, oldest first.
func (l *linkLedger) heal(nw *linknet.Network, f linknet.Fault, links ...string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var again []linkGroup // the faults to apply again, in the order first met
	for _, name := range links {
		rest := l.on[name]
		for i, g := range rest {
			if g == f {
				rest = append(rest[:i:i], rest[i+1:]...)
				break
			}
		}
		if len(rest) == 0 {
			delete(l.on, name)
		} else {
			l.on[name] = rest
		}
		for _, g := range rest {
			again = addToGroup(again, g, name)
		}
	}
	errs := []error{nw.Heal(links...)}
	for _, g := range again {
		errs = append(errs, nw.Apply(g.fault, g.links...))
	}
	return errors.Join(errs...)
}

// addToGroup adds the link to the group of fault f among gs, or to a new
// group at their end.
func addToGroup(gs []linkGroup, f linknet.Fault, link string) []linkGroup {
	for i := range gs {
		if gs[i].fault == f {
			gs[i].links = append(gs[i].links, link)
			return gs
		}
	}
	return append(gs, linkGroup{fault: f, links: []string{link}})
}

// forget drops every record, after the whole network was healed.
func (l *linkLedger) forget() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.on = nil
}

// ApplyLinks applies f to the named links of env.Network and records it, so
// that healing another fault on the same links keeps this one. Code outside
// the fault kinds that cuts links during a run (an isolating client pause)
// should go through it rather than through the Network. It makes no node
// unavailable in the availability record: a worker that cuts its own links
// (a paused process) asks for nothing meanwhile.
func (env *Env) ApplyLinks(f linknet.Fault, links ...string) error {
	return env.links.apply(env.Network, f, links...)
}

// HealLinks removes one application of f, made with ApplyLinks, from the
// named links; other faults recorded on them stay.
func (env *Env) HealLinks(f linknet.Fault, links ...string) error {
	return env.links.heal(env.Network, f, links...)
}
