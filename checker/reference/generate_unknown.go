package reference

import (
	"github.com/jepsen-lite/jepsen-lite/history"
	"github.com/jepsen-lite/jepsen-lite/nemesis/faultkind"
)

// generate_unknown.go holds the generator's ops of unknown outcome as
// faults make them (GenOptions.Unknowns): a partition that holds back the
// requests sent while it is in force, whose clients time out, each request
// taking effect or not at the heal; waiting acquires that time out at
// their wait bound and may be granted later; renewals and releases lost in
// flight. Kills are the crashes every history has, at a higher rate.

// unknownState is the partition of Unknowns and the requests whose
// outcome is still to be decided.
type unknownState struct {
	inForce  bool
	held     []lateRequest // requests sent while the partition is in force
	queued   []lateRequest // waiting acquires whose client gave up: the service may still grant them
	lostRate float64       // the probability that a renewal or release is lost in flight
	holdRate float64       // the probability that a request sent during the partition is held
}

// lateRequest is a request that reached the service, or may yet, after its
// client stopped waiting for it: the process that sent it and its op.
type lateRequest struct {
	proc int
	o    *outstanding
	inv  history.Op
}

// unknownShape draws the shape of an Unknowns history and returns its
// number of workers: three workers (two now and then), mostly on one key,
// kills at a high rate, and the rates of lost and held requests.
func (g *gen) unknownShape() int {
	if g.chance(0.8) {
		g.keys = []string{"k"}
	}
	g.infoRate = []float64{0.1, 0.2, 0.3}[g.pick(3)]
	g.unk.lostRate = []float64{0.2, 0.4}[g.pick(2)]
	g.unk.holdRate = []float64{0.6, 0.9}[g.pick(2)]
	return 3 - b2i(g.chance(0.2))
}

// unknownStep is Unknowns' step of the nemesis and the service: it starts
// a partition or heals the one in force (healing it, sooner or later, once
// the budget is spent (done)), and lets the service grant the acquires of
// clients that gave up waiting. It reports whether the step is used up.
func (g *gen) unknownStep(done bool) bool {
	g.grantQueued()
	switch {
	case g.unk.inForce && (g.chance(0.1) || done && g.chance(0.3)):
		g.heal()
		return true
	case !g.unk.inForce && !done && g.chance(0.08):
		f := faultkind.Partition()
		op := g.faultOp(history.Info, f, false)
		op.Value = history.JSONValue(map[string]any{"nodes": []string{"n1"}})
		g.emit(op)
		g.unk.inForce = true
		return true
	}
	return false
}

// heal heals the partition: each request it held takes effect, in a drawn
// order, or never.
func (g *gen) heal() {
	g.emit(history.Op{Process: history.NemesisProcess, Type: history.Info, F: faultkind.Partition().Heal,
		Value: history.JSONValue(map[string]any{"nodes": []string{"n1"}})})
	g.unk.inForce = false
	g.r.Shuffle(len(g.unk.held), func(i, j int) { g.unk.held[i], g.unk.held[j] = g.unk.held[j], g.unk.held[i] })
	for _, l := range g.unk.held {
		if g.chance(0.5) {
			g.takeEffect(l)
		}
	}
	g.unk.held = nil
}

// maybeHold holds w's request o back when a partition is in force (but a
// lease-lost, which asks nothing of the service): its client times out a
// few steps later, and its effect is decided at the heal.
func (g *gen) maybeHold(w *worker, o *outstanding) {
	if !g.unk.inForce || o.f == history.FLeaseLost || !g.chance(g.unk.holdRate) {
		return
	}
	o.held = true
	o.notBefore = g.now + (80+g.r.Int64N(200))*ms
	if o.applied || o.rejected {
		return // a write that reached the register before the partition
	}
	g.unk.held = append(g.unk.held, lateRequest{proc: w.proc, o: o, inv: g.h[o.inv]})
}

// timesOut decides whether the op of c ends in a client's timeout: a
// request held by a partition (its effect is decided at the heal), or a
// renewal or release lost in flight (its effect is decided now, as a
// crash's is). It reports whether c is then to be recorded as it is.
func (g *gen) timesOut(c *completion) bool {
	switch {
	case c.o.held:
		c.crash, c.timeout = true, true
		return true
	case (c.o.f == history.FRenew || c.o.f == history.FRelease) && g.chance(g.unk.lostRate):
		c.crash, c.timeout = true, true
	}
	return false
}

// waitTimesOut decides whether an acquire that reached its wait bound
// ends in its client's timeout rather than failing: its request stays
// queued at the service, which may grant it later. It reports whether it
// timed out.
func (g *gen) waitTimesOut(c *completion) bool {
	if !g.chance(0.6) {
		return false
	}
	c.crash, c.timeout = true, true
	g.unk.queued = append(g.unk.queued, lateRequest{proc: c.w.proc, o: c.o, inv: c.inv})
	return true
}

// grantQueued lets the service grant, now and then, the acquires still
// queued whose clients gave up waiting, or drop them.
func (g *gen) grantQueued() {
	keep := g.unk.queued[:0]
	for _, l := range g.unk.queued {
		switch {
		case g.chance(0.1):
			// dropped: never granted
		case g.chance(0.3) && g.grantable(l.o.key, l.proc):
			g.grant(&worker{proc: l.proc}, l.o, true)
		default:
			keep = append(keep, l)
		}
	}
	g.unk.queued = keep
}

// grantable reports whether the service grants k to proc now: when it is
// free to (or misbehaves), a majority is up and no outage is on.
func (g *gen) grantable(k string, proc int) bool {
	ok := g.available(k, proc) || g.chance(g.misbehave)
	return ok && g.majority() && (g.outFrom < 0 || g.now < g.outFrom || g.now >= g.outTo)
}

// takeEffect applies the late request l as the service does when it
// arrives: as its ok would (an honest service's acquire only when the lock
// is free, release and renewal only by the holder), by the rules the
// crash paths of complete follow for ops of unknown outcome.
func (g *gen) takeEffect(l lateRequest) {
	o, svc := l.o, g.svc[l.o.key]
	mine := svc.holder == l.proc
	switch o.f {
	case history.FAcquire:
		if g.grantable(o.key, l.proc) {
			g.grant(&worker{proc: l.proc}, o, true)
		}
	case history.FRelease:
		if mine {
			svc.holder = -1
		}
	case history.FRenew:
		exp := never
		if o.lease != -1 {
			exp = g.now + o.lease
		}
		if mine && (l.inv.TTL != 0 || exp >= svc.expiry || g.misbehave > 0) {
			svc.expiry = exp
		}
	case history.FWrite:
		g.applyWrite(o.key, o.value, o.token)
	}
}
