package nemesis

import (
	"slices"
	"sync"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// outages is the nemesis's ledger of which server nodes are unavailable: down
// (killed, paused) or cut off from the workers. Each fault that makes nodes
// unavailable declares it (Facts.Unavailable) and says so in its own code,
// with Env.takeDown or Env.takeDownWhile, and its heal gives them back with outage.bringUp; a node stays unavailable while any
// outage still holds it, so healing one of two overlapping faults (a node
// killed and partitioned) leaves it down. Whenever the set of unavailable
// server nodes changes, the ledger records an availability op
// (history.FAvailability) at once, under its lock, so the records are in the
// order of the changes: a fault takes nodes down before it acts on them
// (takeDownWhile records it with the time from before the act, once the act
// said which nodes it did take down, so a fault that failed takes nothing
// down) and a heal brings them back after they are back (a heal that failed
// brings nothing back), so a record never shows a node up while it was not.
// Its zero value is ready to use.
type outages struct {
	mu   sync.Mutex
	held []*outage // every outage that still holds a node
	down []string  // the unavailable server nodes as last recorded
}

// outage is one fault's hold on the nodes it made unavailable.
type outage struct {
	env     *Env
	nodes   []string // the nodes still held
	network bool     // the nodes are cut off, not down: a network sweep ends it
}

// takeDown declares nodes unavailable from now until the returned outage
// gives them back, and records the change; a fault whose facts f declare no
// Unavailable takes nothing down. network says that they are cut off
// by link faults rather than down, so that sweeping the network ends the
// outage. A fault calls it before it acts on the nodes.
func (env *Env) takeDown(f Facts, nodes []string, network bool) *outage {
	if f.Unavailable == "" {
		nodes = nil
	}
	o := &outage{env: env, nodes: slices.Clone(nodes), network: network}
	l := &env.outages
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(o.nodes) > 0 {
		l.held = append(l.held, o)
	}
	l.recordLocked(env)
	return o
}

// takeDownWhile declares nodes unavailable from before act runs, and keeps
// only those act took down: act returns the nodes it failed on, which were
// never down. The Recorder is held while act runs (history.Recorder.Hold),
// so the availability record, if the set changed, bears the time from before
// act and is written only once act has said what it did: a node whose fault
// failed is never recorded down. A fault whose act is quick (a kill, a
// pause) calls it instead of takeDown; act must not record. As with
// takeDown, a fault whose facts declare no Unavailable takes nothing down.
func (env *Env) takeDownWhile(f Facts, nodes []string, network bool, act func() (failed []string)) *outage {
	if f.Unavailable == "" {
		nodes = nil
	}
	o := &outage{env: env, nodes: slices.Clone(nodes), network: network}
	l := &env.outages
	l.mu.Lock()
	defer l.mu.Unlock()
	var held *history.Held
	if env.Recorder != nil {
		held = env.Recorder.Hold()
	}
	failed := act()
	o.nodes = slices.DeleteFunc(o.nodes, func(n string) bool { return slices.Contains(failed, n) })
	if len(o.nodes) > 0 {
		l.held = append(l.held, o)
	}
	a := l.stateLocked(env)
	switch {
	case slices.Equal(a.Down, l.down):
		if held != nil {
			held.Release()
		}
	default:
		l.down = a.Down
		if held != nil {
			held.Commit(history.AvailabilityOp(a))
		}
	}
	return o
}

// bringUp gives back the named nodes and records the change. A heal calls it
// after the nodes are back, and a fault for the nodes it failed to act on; it
// is safe to call more than once.
func (o *outage) bringUp(nodes []string) {
	if len(nodes) > 0 {
		o.end(func(n string) bool { return slices.Contains(nodes, n) })
	}
}

// bringUpAll gives back every node the outage still holds and records the
// change.
func (o *outage) bringUpAll() { o.end(func(string) bool { return true }) }

// end gives back the nodes that match.
func (o *outage) end(match func(string) bool) {
	l := &o.env.outages
	l.mu.Lock()
	defer l.mu.Unlock()
	o.nodes = slices.DeleteFunc(o.nodes, match)
	if len(o.nodes) == 0 {
		l.held = slices.DeleteFunc(l.held, func(x *outage) bool { return x == o })
	}
	l.recordLocked(o.env)
}

// endNetwork ends every outage of cut-off nodes, after the whole network
// was healed, and records the change.
func (l *outages) endNetwork(env *Env) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held = slices.DeleteFunc(l.held, func(o *outage) bool {
		if o.network {
			o.nodes = nil
		}
		return o.network
	})
	l.recordLocked(env)
}

// Availability returns the server nodes counted for a majority and those
// unavailable now, as the next availability record would say.
func (env *Env) Availability() history.Availability {
	l := &env.outages
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stateLocked(env)
}

// stateLocked computes the availability from the outages held. Only server
// nodes count (sentinels are not lock nodes: a sentinel named in a kill is
// not counted as a server node down), in the cluster's order.
func (l *outages) stateLocked(env *Env) history.Availability {
	var servers []string
	if env.Cluster != nil {
		servers = nodeNames(serverNodes(env.Cluster.Nodes()))
	}
	a := history.Availability{Nodes: len(servers), Down: []string{}}
	for _, n := range servers {
		if slices.ContainsFunc(l.held, func(o *outage) bool { return slices.Contains(o.nodes, n) }) {
			a.Down = append(a.Down, n)
		}
	}
	return a
}

// recordLocked records an availability op when the set of unavailable server
// nodes differs from the one last recorded.
func (l *outages) recordLocked(env *Env) {
	a := l.stateLocked(env)
	if slices.Equal(a.Down, l.down) {
		return
	}
	l.down = a.Down
	if env.Recorder != nil {
		env.Recorder.Record(history.AvailabilityOp(a))
	}
}
