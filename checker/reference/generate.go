package reference

import (
	"math/rand/v2"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// GenOptions shape the histories Generate writes. The zero value lets
// Generate draw every choice from its random source.
type GenOptions struct {
	// Ops is the number of client ops (invocations) to issue, at most; 0
	// draws it from [7, 12] ([7, 19] with Outages or Faults, but for
	// Unknowns).
	Ops int
	// Honest, when set, makes the lock service and the register behave
	// correctly (an op of unknown outcome takes effect, or not, only as §4.1
	// allows it to), so the history is valid
	// for §4.1 under drift up to 0.01; only double-hold (no until),
	// stale-write (slow writes, no fencing), lost-update and the token kinds
	// (token modes) can still come out. When unset, Generate draws whether
	// the service misbehaves.
	Honest bool
	// Ties allows ops at the same time; otherwise every op is strictly later
	// than the one before it.
	Ties bool
	// Kept makes some crashes keep their worker's client (docs/history.md
	// §1, `kept`): the service then frees a crashed holder's session lock
	// only at the worker's next crash that is not kept.
	Kept bool
	// Waits makes acquires wait (`lock.acquire: wait`) for up to a dozen
	// steps while the lock is not free before they give up (fail) at their
	// wait bound; otherwise an acquire waits a few steps at most.
	Waits bool
	// Faults puts the workload on a cluster of three or five server
	// nodes: the nemesis's faults take effect, or fail (a `fail` op from
	// format version 4 on, an `info` with an `error` before), are healed
	// (by their own heal or heal-all, which may fail too) or stay in force
	// to the end; from version 3 on it records which nodes are unavailable
	// (availability records), and the service refuses every acquire while
	// no majority of the nodes is up.
	Faults bool
	// Outages makes the service refuse, for a stretch of the history
	// (sometimes to its end), every acquire it could grant: a lock that
	// nobody can take, so that stuck and unavailable come out.
	Outages bool
	// Unknowns makes ops of unknown outcome as faults make them, several
	// often outstanding at once on one key (generate_unknown.go): kills
	// that end processes mid-call; partitions that hold back the requests
	// sent while they are in force, whose workers time out (`info`), each
	// held request taking effect or not when the partition heals; waiting
	// acquires that time out at their wait bound (`info`) and may still be
	// granted later; renewals and releases lost in flight (`info`, taken
	// effect or not). The lock service honours the lock, or not, as
	// Generate draws it (Honest).
	Unknowns bool
}

// Generate returns a random small well-formed history of a lock workload:
// two or three workers, one or two keys, up to a dozen client ops of every
// kind the format has (acquire, release, renew, read, write, lease-lost;
// ok, fail, info and pending), crashes after which the worker goes on under
// a new process number, nemesis ops and sometimes the header op. It
// simulates a lock service that may honour the lock or misbehave (grant
// early, let a non-holder release, renew for a non-holder, hand out equal or
// falling tokens) and an atomic register, so reads are consistent with the
// writes applied. With opts.Unknowns, ops of unknown outcome come from kills,
// partitions, waits that time out and lost renewals and releases, several
// often outstanding at once on one key, within the same budget of client
// ops. Every choice comes from r.
func Generate(r *rand.Rand, opts GenOptions) history.History {
	g := &gen{r: r, opts: opts}
	return g.run()
}

const ms = int64(time.Millisecond)

// notHeld is the error a client records when the service refused a release
// or renewal because the lock was not held (clients.ErrNotHeld's text).
const notHeld = "clients: lock not held"

// b2i is 1 for true, 0 for false.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

type tokenMode int

const (
	tokNone tokenMode = iota
	tokRising
	tokEqual
	tokFalling
	tokRandom
)

// lockSvc is the simulated service's view of one key.
type lockSvc struct {
	holder  int // -1: free
	expiry  int64
	session bool
	tok     uint64
}

// register is the simulated resource of one key.
type register struct {
	value  int64
	maxTok uint64
	past   []int64 // earlier values, for a misbehaving register's stale reads
}

type outstanding struct {
	inv       int
	f, key    string
	lease     int64 // an acquire's or renew's effective lease (-1: never)
	style     int   // an acquire's lease style
	value     int64
	token     uint64
	applied   bool // a write already applied (at its invoke)
	rejected  bool // a write already rejected (at its invoke)
	appliedAt int64
	waited    int
	notBefore int64 // a paused op does not complete before this time
	held      bool  // held back by a partition (Unknowns): its client times out
}

type worker struct {
	client, proc int
	kept         []int // processes whose crash kept this worker's client, still open
	out          *outstanding
	held         map[string]*heldLease
	lastRead     map[string]int64
	key          string
}

type heldLease struct {
	token uint64
	until int64 // 0: none
	lease int64
}

type deferredWrite struct {
	key   string
	value int64
	token uint64
}

type gen struct {
	r        *rand.Rand
	opts     GenOptions
	h        history.History
	now      int64
	workers  []*worker
	keys     []string
	svc      map[string]*lockSvc
	reg      map[string]*register
	crashed  map[int]bool // processes whose client was closed: their sessions are over
	nextProc int
	deferred []deferredWrite

	misbehave float64 // probability of each misbehaviour
	infoRate  float64
	tokens    tokenMode
	exact     bool // writes carry applied
	fenced    bool // the register rejects writes with a token below the highest seen
	untilRate float64
	shortTTL  int64
	longTTL   int64
	slowRate  float64 // a write that lingers before completing
	pauseRate float64 // a write paused (as by a GC pause) past its lease
	shortOnly bool    // every acquire asks for a short lease

	version int           // the history's format version: 4 with the header op, else 1
	nodes   int           // the server nodes (Faults)
	active  []activeFault // the faults in force (Faults)
	down    []string      // the nodes last recorded unavailable (Faults)
	outFrom int64         // the service refuses every acquire from outFrom (Outages; -1: never) ...
	outTo   int64         // ... to outTo

	unk unknownState // the partition and the requests it holds (Unknowns)
}

// activeFault is a fault in force and the nodes it makes unavailable.
type activeFault struct {
	f    string
	heal string
	down []string
}

func (g *gen) chance(p float64) bool { return g.r.Float64() < p }

func (g *gen) pick(n int) int { return g.r.IntN(n) }

func (g *gen) tick() {
	if g.opts.Ties && g.chance(0.15) {
		return
	}
	g.now += (1 + g.r.Int64N(50)) * ms
}

func (g *gen) emit(op history.Op) int {
	op.Index = len(g.h)
	op.Time = time.Duration(g.now)
	g.h = append(g.h, op)
	return op.Index
}

// run draws the history's shape (workers, keys, rates, cluster), then
// steps the workers and the nemesis until the budget of client ops is spent
// and every op has completed or been left pending.
func (g *gen) run() history.History {
	nw, budget := g.drawShape()
	g.drawRates()
	if g.chance(0.25) {
		nw = g.resourceShape()
	}
	if g.opts.Unknowns {
		nw = g.unknownShape()
	}
	g.initService()
	g.drawCluster()
	g.addWorkers(nw)
	g.steps(budget)
	return g.h
}

// drawShape draws the number of workers, the keys and the budget of client
// ops.
func (g *gen) drawShape() (nw, budget int) {
	nw = 2 + g.pick(2)
	if g.chance(0.65) {
		g.keys = []string{"k"}
	} else {
		g.keys = []string{"k0", "k1"}
	}
	budget = g.opts.Ops
	if budget == 0 {
		budget = 7 + g.pick(6)
		if (g.opts.Outages || g.opts.Faults) && !g.opts.Unknowns {
			budget += g.pick(8) // more asks, for liveness
		}
	}
	return nw, budget
}

// drawRates draws how the service misbehaves, how often ops end unknown,
// the tokens, the register's fencing, the leases and the slow and paused
// writes.
func (g *gen) drawRates() {
	if !g.opts.Honest && g.chance(0.6) {
		g.misbehave = []float64{0.1, 0.25, 0.5}[g.pick(3)]
	}
	g.infoRate = []float64{0, 0.08, 0.2}[g.pick(3)]
	switch x := g.r.Float64(); {
	case x < 0.25:
		g.tokens = tokNone
	case x < 0.75 || g.opts.Honest:
		g.tokens = tokRising
	case x < 0.85:
		g.tokens = tokEqual
	case x < 0.93:
		g.tokens = tokFalling
	default:
		g.tokens = tokRandom
	}
	g.exact = g.chance(0.6)
	g.fenced = g.chance(0.4)
	g.untilRate = []float64{0, 0.6, 0.95}[g.pick(3)]
	g.shortTTL = (50 + g.r.Int64N(250)) * ms
	g.longTTL = (1000 + g.r.Int64N(4000)) * ms
	if g.opts.Outages || g.opts.Faults {
		g.longTTL = (300 + g.r.Int64N(500)) * ms // leases that run out within the history
		// fewer ops of unknown outcome among the extra acquires: the
		// reference's lease model is exponential in them
		g.infoRate = min(g.infoRate, 0.1)
	}
	g.slowRate = []float64{0, 0.15}[g.pick(2)]
	g.pauseRate = []float64{0, 0.2, 0.5}[g.pick(3)]
}

// resourceShape makes the history one about the resource, and returns its
// number of workers: two workers on one key with short leases, writes paused
// past them, no fencing.
func (g *gen) resourceShape() int {
	g.keys = []string{"k"}
	g.infoRate = min(g.infoRate, 0.08)
	g.exact = g.chance(0.8)
	g.fenced = false
	g.pauseRate = 0.5
	g.untilRate = 0.95
	g.shortOnly = true
	return 2
}

// initService sets up the lock service and the register of every key.
func (g *gen) initService() {
	g.svc = map[string]*lockSvc{}
	g.reg = map[string]*register{}
	g.crashed = map[int]bool{}
	for _, k := range g.keys {
		g.svc[k] = &lockSvc{holder: -1}
		g.reg[k] = &register{}
	}
	g.tokensInit()
}

// drawCluster draws the format version (with the header op), the cluster's
// nodes (Faults) and the outage (Outages).
func (g *gen) drawCluster() {
	g.version = 1
	if g.chance(0.5) || g.opts.Faults && g.chance(0.6) {
		g.emit(history.Header())
		g.version = history.FormatVersion
	}
	if g.opts.Faults {
		g.nodes = []int{3, 5}[g.pick(2)]
	}
	g.outFrom = -1
	if g.opts.Outages && g.chance(0.85) {
		g.outFrom = g.r.Int64N(300) * ms
		g.outTo = never
		if g.chance(0.5) {
			g.outTo = g.outFrom + (100+g.r.Int64N(1000))*ms
		}
	}
}

// addWorkers adds nw workers, each on the first key or, but for the first
// worker, half the time on one drawn.
func (g *gen) addWorkers(nw int) {
	for i := range nw {
		w := &worker{client: i, proc: i, held: map[string]*heldLease{}, lastRead: map[string]int64{}}
		w.key = g.keys[0]
		if i > 0 && g.chance(0.5) {
			w.key = g.keys[g.pick(len(g.keys))]
		}
		g.workers = append(g.workers, w)
	}
	g.nextProc = nw
}

// steps steps the workers and the nemesis until budget client ops have
// been issued and none is outstanding, or 400 steps have passed.
func (g *gen) steps(budget int) {
	issued := 0
	for steps := 0; steps < 400; steps++ {
		busy := false
		for _, w := range g.workers {
			if w.out != nil {
				busy = true
			}
		}
		if issued >= budget && !busy {
			break
		}
		g.tick()
		g.applyDeferred()
		if g.opts.Unknowns && g.unknownStep(issued >= budget) {
			continue
		}
		if g.opts.Faults && issued == budget/2 && len(g.active) > 0 && g.chance(0.3) {
			g.healAll() // a final heal halfway, so that the rest can be judged
			continue
		}
		if g.chance(0.04) && (!g.opts.Faults || issued < budget/2) {
			if g.opts.Faults {
				g.fault()
			} else {
				g.nemesis()
			}
			continue
		}
		w := g.workers[g.pick(len(g.workers))]
		if w.out != nil {
			if issued >= budget && g.chance(0.2) {
				w.out = nil // left pending: the history ends before it completes
				continue
			}
			if g.now >= w.out.notBefore {
				g.complete(w)
			}
			continue
		}
		if issued < budget {
			g.invoke(w)
			issued++
		}
	}
}

// healAll heals every fault in force, as a test's final heal does.
func (g *gen) healAll() {
	g.emit(history.Op{Process: history.NemesisProcess, Type: history.Info, F: history.FHealAll})
	g.active = nil
	g.record()
}

func (g *gen) tokensInit() {
	for _, k := range g.keys {
		switch g.tokens {
		case tokFalling:
			g.svc[k].tok = 20
		case tokEqual:
			g.svc[k].tok = 7
		}
	}
}

func (g *gen) nextToken(k string) uint64 {
	s := g.svc[k]
	switch g.tokens {
	case tokNone:
		return 0
	case tokRising:
		if g.misbehave > 0 && g.chance(g.misbehave/3) && s.tok > 1 {
			return s.tok - uint64(g.pick(2)) // a repeated or regressed token
		}
		s.tok++
		return s.tok
	case tokEqual:
		if g.chance(0.3) {
			s.tok++
		}
		return s.tok
	case tokFalling:
		if s.tok > 1 {
			s.tok--
		}
		return s.tok
	default:
		return uint64(1 + g.pick(4))
	}
}

// believes reports whether w still considers itself the holder of k.
func (g *gen) believes(w *worker, k string) *heldLease {
	hl := w.held[k]
	if hl == nil || hl.until != 0 && g.now >= hl.until {
		return nil
	}
	return hl
}

// invoke issues w's next op, on its key or one drawn, and leaves it
// outstanding.
func (g *gen) invoke(w *worker) {
	k := w.key
	if len(g.keys) > 1 && g.chance(0.3) {
		k = g.keys[g.pick(len(g.keys))]
	}
	f := g.drawF(w, k)
	op := history.Op{Process: w.proc, Client: w.client, Type: history.Invoke, F: f, Key: k}
	o := &outstanding{f: f, key: k}
	switch f {
	case history.FAcquire:
		g.invokeAcquire(&op, o)
	case history.FRenew:
		g.invokeRenew(w, &op, o)
	case history.FRelease:
		if hl := w.held[k]; hl != nil {
			op.Token = hl.token
		}
		delete(w.held, k)
	case history.FLeaseLost:
		delete(w.held, k)
	case history.FWrite:
		g.invokeWrite(w, &op, o)
	}
	o.inv = g.emit(op)
	w.out = o
	if g.opts.Unknowns {
		g.maybeHold(w, o)
	}
}

// drawF draws the f of w's next op on key k, by what w believes it holds
// and whether it has read k.
func (g *gen) drawF(w *worker, k string) string {
	var f string
	held := g.believes(w, k) != nil
	_, hasRead := w.lastRead[k]
	x := g.r.Float64()
	pickF := func(choices ...any) string {
		for i := 0; i < len(choices); i += 2 {
			if x -= choices[i+1].(float64); x < 0 {
				return choices[i].(string)
			}
		}
		return choices[len(choices)-2].(string)
	}
	switch {
	case held && hasRead:
		f = pickF(history.FWrite, 0.7, history.FRead, 0.05, history.FRenew, 0.08, history.FRelease, 0.12, history.FLeaseLost, 0.03, history.FAcquire, 0.02)
	case held:
		f = pickF(history.FRead, 0.6, history.FRenew, 0.1, history.FRelease, 0.2, history.FLeaseLost, 0.05, history.FAcquire, 0.05)
	case hasRead:
		// a write from a lease its worker no longer trusts, or from none
		f = pickF(history.FWrite, 0.3, history.FAcquire, 0.55, history.FRead, 0.05, history.FRelease, 0.07, history.FRenew, 0.03)
	default:
		f = pickF(history.FAcquire, 0.75, history.FRead, 0.1, history.FRelease, 0.1, history.FRenew, 0.05)
	}
	if (g.opts.Outages || g.opts.Faults) && !held && g.chance(0.5) {
		f = history.FAcquire // liveness wants asks
	}
	if g.opts.Unknowns && held && f != history.FRenew && g.chance(0.25) {
		f = history.FRenew // renewals, for some of them to be lost
	}
	return f
}

// invokeAcquire draws an acquire's lease style, its ttl and its lease.
func (g *gen) invokeAcquire(op *history.Op, o *outstanding) {
	o.style = g.pick(6)
	if g.shortOnly {
		o.style = []int{0, 1, 4}[g.pick(3)]
	}
	switch o.style {
	case 0, 1: // ttl and lease (short)
		op.TTL = time.Duration(g.shortTTL)
		o.lease = g.shortTTL
	case 2: // ttl and lease (long)
		op.TTL = time.Duration(g.longTTL)
		o.lease = g.longTTL
	case 3: // a lease that never expires (-1), no ttl asked
		o.lease = -1
	case 4: // legacy: ttl only, the ok carries no lease
		op.TTL = time.Duration(g.shortTTL)
		o.lease = g.shortTTL
	case 5: // legacy session lock: neither ttl nor lease
		o.lease = -1
	}
}

// invokeRenew draws a renewal's lease and whether it asks for a ttl.
func (g *gen) invokeRenew(w *worker, op *history.Op, o *outstanding) {
	k := o.key
	if hl := w.held[k]; hl != nil {
		o.lease = hl.lease
	} else {
		o.lease = g.shortTTL
	}
	if g.chance(0.15) { // a renewal for another length than the grant's
		o.lease = []int64{g.shortTTL / 2, g.shortTTL, g.longTTL, -1}[g.pick(4)]
	}
	if o.lease != -1 && g.chance(0.7) {
		op.TTL = time.Duration(o.lease)
	}
}

// invokeWrite draws a write's value, token, and whether it is paused or
// applied (or refused) as soon as it is sent.
func (g *gen) invokeWrite(w *worker, op *history.Op, o *outstanding) {
	k := o.key
	o.value = w.lastRead[k] + 1
	if !g.chance(0.03) { // rarely, a write whose value the history does not say
		op.Value = history.IntValue(o.value)
	}
	if hl := w.held[k]; hl != nil {
		o.token = hl.token
	}
	op.Token = o.token
	if g.chance(g.pauseRate) {
		o.notBefore = g.now + 2*g.shortTTL + g.r.Int64N(2*g.shortTTL)
	} else if g.chance(0.3) { // applied (or refused) as soon as it is sent
		o.applied, o.rejected = g.applyWrite(k, o.value, o.token)
		o.appliedAt = g.now
	}
}

// applyWrite applies a write to the register unless fencing refuses it.
func (g *gen) applyWrite(k string, v int64, tok uint64) (applied, rejected bool) {
	reg := g.reg[k]
	if g.fenced && tok < reg.maxTok {
		return false, true
	}
	reg.past = append(reg.past, reg.value)
	reg.value = v
	reg.maxTok = max(reg.maxTok, tok)
	return true, false
}

func (g *gen) applyDeferred() {
	keep := g.deferred[:0]
	for _, d := range g.deferred {
		if g.chance(0.3) {
			g.applyWrite(d.key, d.value, d.token)
			continue
		}
		keep = append(keep, d)
	}
	g.deferred = keep
}

// available reports whether the service may honestly grant k to proc now.
func (g *gen) available(k string, proc int) bool {
	s := g.svc[k]
	return s.holder == -1 || s.holder == proc || s.expiry != never && g.now >= s.expiry || s.session && g.crashed[s.holder]
}

// complete completes w's outstanding op, or leaves it waiting (a blocking
// acquire, a slow write), as the simulated service and register decide.
func (g *gen) complete(w *worker) {
	o := w.out
	c := &completion{w: w, o: o, k: o.key, inv: g.h[o.inv], crash: g.chance(g.infoRate), svc: g.svc[o.key]}
	c.op = &history.Op{Process: w.proc, Client: w.client, F: o.f, Key: o.key, Type: history.OK}
	if g.opts.Unknowns && g.timesOut(c) {
		g.finish(c) // held back by a partition: its effect comes at the heal
		return
	}
	waits := false
	switch o.f {
	case history.FAcquire:
		waits = g.completeAcquire(c)
	case history.FRelease:
		g.completeRelease(c)
	case history.FRenew:
		g.completeRenew(c)
	case history.FRead:
		g.completeRead(c)
	case history.FWrite:
		waits = g.completeWrite(c)
	case history.FLeaseLost:
	}
	if !waits {
		g.finish(c)
	}
}

// completion is one op being completed: its worker, the op outstanding and
// its invoke, the op to record, whether the worker crashed, and the
// service's view of the op's key.
type completion struct {
	w       *worker
	o       *outstanding
	k       string
	inv     history.Op
	op      *history.Op
	crash   bool
	timeout bool // the crash is a client's timeout (Unknowns)
	svc     *lockSvc
}

// completeAcquire completes an acquire: granted, refused, or of unknown
// outcome and maybe granted; it reports whether a blocking acquire waits on.
func (g *gen) completeAcquire(c *completion) bool {
	w, o, k, inv, op, crash, svc := c.w, c.o, c.k, c.inv, c.op, c.crash, c.svc
	grantable := g.available(k, w.proc) || g.chance(g.misbehave)
	if !g.majority() || g.outFrom >= 0 && g.now >= g.outFrom && g.now < g.outTo {
		grantable = false // no quorum, or an outage: nobody can take it
	}
	if crash {
		// an acquire of unknown outcome may have taken effect (§4.1: as
		// its ok would, or never), also one that renews its process's
		// hold with a shorter lease
		if grantable && g.chance(0.5) {
			g.grant(w, o, true)
		}
		return false
	}
	if !grantable {
		if bound := 4 + 8*b2i(g.opts.Waits); o.waited < bound && g.chance(0.7+0.15*float64(b2i(g.opts.Waits))) {
			o.waited++ // a blocking acquire waits on
			return true
		}
		if g.opts.Unknowns && g.waitTimesOut(c) {
			return false
		}
		op.Type = history.Fail
		op.Error = "held"
		return false
	}
	sess := g.grant(w, o, false)
	op.Token = svc.tok
	if g.tokens == tokNone {
		op.Token = 0
	}
	hl := &heldLease{token: op.Token, lease: o.lease}
	switch o.style {
	case 0, 1, 2:
		op.Lease = time.Duration(o.lease)
		op.Session = sess
	case 3:
		op.Lease = history.NoLease
		op.Session = sess
	}
	if o.lease != -1 && g.chance(g.untilRate) {
		hl.until = int64(inv.Time) + int64(float64(o.lease)*0.99)
		if g.chance(0.1) {
			hl.until = int64(inv.Time) + 2*o.lease // a client that trusts too long
		}
		op.Until = time.Duration(hl.until)
	}
	w.held[k] = hl
	return false
}

// completeRelease completes a release: the holder's frees the lock, unless
// the algorithm does not release on the server; another's fails, or, from a
// misbehaving service, frees it.
func (g *gen) completeRelease(c *completion) {
	w, inv, op, crash, svc := c.w, c.inv, c.op, c.crash, c.svc
	mine := svc.holder == w.proc
	if crash {
		if mine && g.chance(0.5) {
			svc.holder = -1
		}
		return
	}
	switch {
	case mine && g.chance(0.1):
		// a release the algorithm does not perform on the server: the
		// lock frees itself when its lease ends
		op.Type = history.Fail
		op.Error = "clients: release does nothing on the server: the lock frees itself when its lease ends"
	case mine:
		svc.holder = -1
	case g.chance(g.misbehave):
		if g.chance(0.5) {
			svc.holder = -1 // a foreign release that frees the lock
		}
	default:
		op.Type = history.Fail
		op.Error = notHeld
	}
	op.Token = inv.Token
}

// completeRenew completes a renewal: the holder's extends the lease; another's
// fails, or, from a misbehaving service, succeeds.
func (g *gen) completeRenew(c *completion) {
	w, o, k, inv, op, crash, svc := c.w, c.o, c.k, c.inv, c.op, c.crash, c.svc
	mine := svc.holder == w.proc
	exp := never
	if o.lease != -1 {
		exp = g.now + o.lease
	}
	if crash {
		// an unknown renew may have taken effect (§4.1: as its ok would,
		// or never); without a ttl on its invoke the model takes its
		// grant's lease for it, so then the honest service applies it
		// only when it does not shorten the lease
		if mine && g.chance(0.5) && (inv.TTL != 0 || exp >= svc.expiry || g.misbehave > 0) {
			svc.expiry = exp
		}
		return
	}
	switch {
	case mine:
		svc.expiry = exp
	case g.chance(g.misbehave):
		// renewed for a process that does not hold the lock
	default:
		op.Type = history.Fail
		op.Error = notHeld
	}
	if op.Type == history.OK {
		if hl := w.held[k]; hl != nil && g.tokens != tokNone && g.chance(0.5) {
			// the ok carries the lease's token: mostly its grant's, or
			// (pg-timeout) a new one the renewal hands out
			op.Token = hl.token
			if g.chance(0.4) {
				hl.token = g.nextToken(k)
				op.Token = hl.token
			}
		}
		if g.chance(0.6) {
			op.Lease = time.Duration(o.lease)
		}
		if hl := w.held[k]; inv.TTL == 0 && op.Lease == 0 && (hl == nil || hl.lease != o.lease) {
			// the grant's lease would stand for it: say what it is
			op.Lease = time.Duration(o.lease)
		}
		if hl := w.held[k]; hl != nil && o.lease != -1 && (hl.until != 0 && g.chance(0.8) || g.chance(0.05)) {
			// (rarely an until on the renewal of a grant that had none)
			hl.until = int64(inv.Time) + int64(float64(o.lease)*0.99)
			op.Until = time.Duration(hl.until)
		}
	}
}

// completeRead completes a read with the register's value, or a stale one
// from a misbehaving register.
func (g *gen) completeRead(c *completion) {
	w, k, op, crash := c.w, c.k, c.op, c.crash
	if !crash && g.chance(0.05) {
		op.Type = history.Fail
		op.Error = "timeout"
		return
	}
	if !crash {
		v := g.reg[k].value
		if past := g.reg[k].past; len(past) > 0 && g.chance(g.misbehave/4) {
			v = past[g.pick(len(past))] // a stale read: the register is not linearizable
		}
		op.Value = history.IntValue(v)
		w.lastRead[k] = v
	}
}

// completeWrite completes a write: applied, refused by fencing, or of
// unknown outcome and applied now, later or never; it reports whether a slow
// write is still in flight.
func (g *gen) completeWrite(c *completion) bool {
	w, o, k, inv, op, crash := c.w, c.o, c.k, c.inv, c.op, c.crash
	if !o.applied && !o.rejected && !crash && g.slowRate > 0 && o.waited < 4 && g.chance(g.slowRate*2) {
		o.waited++ // a slow write: still in flight
		return true
	}
	op.Value = inv.Value
	op.Token = o.token
	if crash {
		if !o.applied && !o.rejected {
			switch x := g.r.Float64(); {
			case x < 0.4:
				g.applyWrite(k, o.value, o.token)
			case x < 0.7:
				g.deferred = append(g.deferred, deferredWrite{k, o.value, o.token})
			}
		}
		return false
	}
	if !o.applied && !o.rejected {
		if g.chance(0.05) {
			op.Type = history.Fail
			op.Error = "timeout"
			return false
		}
		o.applied, o.rejected = g.applyWrite(k, o.value, o.token)
		o.appliedAt = g.now
	}
	if o.rejected {
		op.Type = history.Fail
		op.Error = "stale token"
	}
	if g.exact {
		op.Applied = time.Duration(o.appliedAt)
	}
	delete(w.lastRead, k)
	return false
}

// finish records the completed op and, after a crash, closes the worker's
// client (unless the crash kept it) and gives it a new process.
func (g *gen) finish(c *completion) {
	w, op, crash := c.w, c.op, c.crash
	kept := crash && g.opts.Kept && g.chance(0.4)
	if crash {
		op.Type = history.Info
		op.Error = "crashed"
		if c.timeout {
			op.Error = "timeout"
		}
		op.Lease, op.Until, op.Session, op.Applied = 0, 0, false, 0
		op.Kept = kept
	}
	g.emit(*op)
	w.out = nil
	if crash {
		// A kept crash leaves the client, and its sessions, open until a
		// later crash of the worker closes it.
		if kept {
			w.kept = append(w.kept, w.proc)
		} else {
			g.crashed[w.proc] = true
			for _, p := range w.kept {
				g.crashed[p] = true
			}
			w.kept = nil
		}
		w.proc = g.nextProc
		g.nextProc++
		clear(w.held)
		clear(w.lastRead)
	}
}

// grant makes w the service's holder of o.key and returns the session flag
// of the grant. An acquire of unknown outcome (unknown) has no ok to say
// whether it is a session lock: §3 then takes one without a ttl for a
// session lock and one with a ttl for none, and so does the honest service.
func (g *gen) grant(w *worker, o *outstanding, unknown bool) bool {
	s := g.svc[o.key]
	s.holder = w.proc
	s.expiry = never
	if o.lease != -1 {
		s.expiry = g.now + o.lease
	}
	s.session = o.style == 5 || (o.style != 4 && g.chance(0.3))
	if unknown && g.misbehave == 0 {
		s.session = o.style == 5 || o.style == 3 && s.session
	}
	s.tok = g.nextToken(o.key)
	return s.session
}
