// resource_grants.go holds what the resource stream keeps of each worker
// process's grants, read from the Follower's events: the latest grant of
// each key, the Later ops that bound each hold (Facts.HoldEnd), and the
// client closes of crashed processes.

package checker

import (
	"slices"
	"sort"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// resProc is what the stream keeps of one live worker process.
type resProc struct {
	pending bool
	inv     resInvoke
	keys    []resProcKey
	// grants are its grants still kept somewhere, for its client's close.
	grants []*resGrant
	pruned int // len(grants) after the last pruning
}

// resProcKey is a process's state of one key it locked: its latest grant.
type resProcKey struct {
	key    *resKey
	latest *resGrant
}

// resGrant is one grant (Facts.Grants' entry) as the stream keeps it.
type resGrant struct {
	owner           *resProc // nil once its process crashed
	key             *resKey
	invoke, okIndex int
	call, ret       time.Duration
	lease           time.Duration
	session         bool
	// steps are HoldEnd's state after each Later op that changed it, in
	// invoke order.
	steps    []holdStep
	closed   int
	closedAt time.Duration
	// collecting is set while its Later ops are collected; latestLive
	// while it is the latest grant of a live process (it may get writes).
	collecting, latestLive bool
	// hasWrite is set once it has an accepted write: it is then among its
	// key's live grants until it retires (dropped).
	hasWrite bool
	// dropped is set once nothing needs its Later ops any more.
	dropped bool
	writes  []*resWrite // its live accepted writes
	// retiredFirst is its first write (smallest hi, then order) once retired.
	retiredFirst *resWrite
	// Its live writes of the two smallest (hiMax, order) and of the two
	// smallest (hiMin, order) in the current view (nil: none), and the
	// smallest hi it surely has and may have.
	firstByMax, secondByMax, firstByMin, secondByMin *resWrite
	minHiSure, minHiMaybe                            time.Duration
}

// holdStep is HoldEnd of a grant for the ops invoked after invoke: the
// earliest end and whether a client close may end the hold.
type holdStep struct {
	invoke  int
	end     time.Duration
	session bool
}

// keyOf returns p's state of key k, made on first use.
func (p *resProc) keyOf(s *resourceStream, k string) *resProcKey {
	for i := range p.keys {
		if p.keys[i].key.name == k {
			return &p.keys[i]
		}
	}
	p.keys = append(p.keys, resProcKey{key: s.key(k)})
	return &p.keys[len(p.keys)-1]
}

// latestOf returns p's latest grant of key k, nil when none.
func (p *resProc) latestOf(k string) *resGrant {
	for i := range p.keys {
		if p.keys[i].key.name == k {
			return p.keys[i].latest
		}
	}
	return nil
}

// pendingLock reports whether p has an acquire, release or renewal of key
// k outstanding that was invoked before op index before.
func (p *resProc) pendingLock(k string, before int) bool {
	if !p.pending || p.inv.key != k || p.inv.index >= before {
		return false
	}
	switch p.inv.fn {
	case history.FAcquire, history.FRelease, history.FRenew:
		return true
	}
	return false
}

// hold feeds the Follower's events of the next op, before the op: the
// grants, their Later ops until they are settled, the crashes and the
// client closes.
func (s *resourceStream) hold(e *HoldEvent) {
	switch e.Kind {
	case HoldGranted:
		if p := s.procs.get(e.Process); p != nil {
			s.grant(p, e)
		}
	case HoldLater:
		g := s.collecting[e.Grant]
		if g == nil {
			return
		}
		if g.dropped { // nothing asks for its Later ops any more
			g.collecting = false
			delete(s.collecting, e.Grant)
			return
		}
		g.addLater(LaterOp{Invoke: e.Invoke, Call: e.Call, Release: e.Release, Lease: e.Lease, Session: e.Session}, s.drift)
		if e.Release { // a release settles it
			g.collecting = false
			delete(s.collecting, e.Grant)
		}
	case HoldSettled:
		if g := s.collecting[e.Grant]; g != nil {
			g.collecting = false
			delete(s.collecting, e.Grant)
		}
	case HoldCrashed:
		if p := s.procs.get(e.Process); p != nil {
			s.crash(p, e.Process)
		}
	case HoldClosed:
		for _, g := range s.crashed[e.Process] {
			g.closed, g.closedAt = e.Index, e.Time
		}
		delete(s.crashed, e.Process)
	}
}

// grant takes the grant e of p.
func (s *resourceStream) grant(p *resProc, e *HoldEvent) {
	pk := p.keyOf(s, e.Key)
	g := &resGrant{owner: p, key: pk.key, invoke: e.Invoke, okIndex: e.OK(), call: e.Call, ret: e.Time,
		lease: e.Lease, session: e.Session, closed: -1, collecting: true, latestLive: true}
	if old := pk.latest; old != nil {
		old.latestLive = false
		old.dropped = old.dropped || !old.hasWrite
	}
	pk.latest = g
	pk.key.latest[e.Process] = g
	s.collecting[e.Grant] = g
	if len(p.grants) >= 2*p.pruned+16 {
		p.grants = slices.DeleteFunc(p.grants, func(g *resGrant) bool { return g.dropped })
		p.pruned = len(p.grants)
	}
	p.grants = append(p.grants, g)
}

// addLater adds the Later op x to g's HoldEnd steps under drift d.
func (g *resGrant) addLater(x LaterOp, d float64) {
	end, session := leaseEnd(g.call, g.lease, d), g.session
	if n := len(g.steps); n > 0 {
		end, session = g.steps[n-1].end, g.steps[n-1].session
	}
	e := x.Call
	if !x.Release {
		e = leaseEnd(x.Call, x.Lease, d)
	}
	if ne, ns := min(end, e), session || x.Session; ne != end || ns != session {
		g.steps = append(g.steps, holdStep{invoke: x.Invoke, end: ne, session: ns})
	}
}

// holdEnd is Facts.HoldEnd of g as seen by an op that returned at index
// before, under drift d, from the Later ops and the close known so far.
func (g *resGrant) holdEnd(before int, d float64) time.Duration {
	end, session := leaseEnd(g.call, g.lease, d), g.session
	if i := sort.Search(len(g.steps), func(i int) bool { return g.steps[i].invoke >= before }); i > 0 {
		end, session = g.steps[i-1].end, g.steps[i-1].session
	}
	if session && g.closed >= 0 && g.closed < before {
		end = min(end, g.closedAt)
	}
	return end
}

// laterKnown reports whether every Later op of g invoked before op index
// before is known: none of its process's lock ops of its key invoked
// before then is still outstanding (the close before then is known).
func (g *resGrant) laterKnown(before int) bool {
	return !g.collecting || g.owner == nil || !g.owner.pendingLock(g.key.name, before)
}

// crash takes the crash of p (process proc): its latest grants get no
// more writes, and the grants kept wait for its client's close
// (HoldClosed).
func (s *resourceStream) crash(p *resProc, proc int) {
	for _, pk := range p.keys {
		if g := pk.latest; g != nil {
			g.latestLive = false
			g.dropped = g.dropped || !g.hasWrite
			delete(pk.key.latest, proc)
		}
	}
	gs := slices.DeleteFunc(p.grants, func(g *resGrant) bool { return g.dropped })
	for _, g := range gs {
		g.owner = nil
	}
	s.crashed[proc] = gs
}
