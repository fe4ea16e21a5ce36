package checker

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// liveStream is the liveness report (docs/history.md §4.5, §4.6, §4.7) of a
// well-formed history fed to it op by op, in order (add), whose result comes
// once the history has ended (result). It gives what Liveness gave when it
// read the whole history (liveness_batch_test.go keeps that report).
//
// What decides a key k is known only at the end: k's longest lease (a later
// grant, or a later renewal of a grant, can lengthen or shorten it), whether
// some grant of k never expires and whether every such grant is a session
// lock (a later grant can say so). So the stream takes as covered only the
// excuses that are certain whatever comes: a grant's from its call to its
// return (outside the down stretches) while its holder may still hold it,
// and to its end once its process released it, crashed or took k again (or
// a later grant caps it);
// an acquire of unknown outcome's from its invoke to its latest arrival as
// far as it is known (a cut in force holds it until the heal; it is late,
// and holds compaction back, while its arrival may move), or to its
// client's close once known; a clock fault's to its end plus the
// longest lease known for good (liveUnknown.certain). Every refused acquire
// of k that nothing certain covers is kept, about 40 bytes, in a region: a
// stretch between certain excuses (liveRegion). A region that has ended
// goes when, at the least the excuses can still cover, no part of it in a
// majority period is opts.UnavailableWindow long with opts.Attempts
// refusals (candidate): excuses only grow, so it never will. Once nothing
// open can reach it (stable), it keeps only its unavailable stretches under
// each reading of k still possible (compact), when a longer lease cannot
// change them. Its memory is so bounded by:
//   - per worker process: its outstanding op, its crash, and per key it was
//     granted its latest grant and belief;
//   - per key: the grants whose excuse end is not yet known (held, or
//     crashed with a lease still running until a later grant caps them),
//     the acquires outstanding, the acquires of unknown outcome whose client
//     a kept crash left open, while every grant of it is a session lock its
//     acquires of unknown outcome with a ttl (a down stretch may move their
//     session lease's end), the refusals since the last certain excuse
//     ended (in a lock that works, those while its current holder holds
//     it), and the regions kept: compact ones, a few stretches each (one
//     for each unavailable stretch reported, and one for each acquire of
//     unknown outcome with a ttl followed by refusals until the next grant,
//     which a later grant whose lease is −1 would leave unexcused), and ones
//     with their refusals (those a longer lease could still change: in a
//     majority period that came back, or after a clock fault);
//   - the faults in force, every clock fault's, cut's and down stretch, the
//     acquires of unknown outcome whose latest arrival may still move, the
//     crashed holders' session grants whose lease's end a down stretch may
//     still move, and every majority period with its availability records.
//
// Its worst case is a key that nobody takes any more, or that its holder
// keeps to the end: every refusal from then on is kept, since the holder's
// excuse may end anywhere after its grant, and a longer lease learned later
// moves the start of the stuck window past any of them. The lost-task rule
// reads a queue stream of its own (queueStream.lost), which holds what
// docs/history.md §6 says of the queue check.
type liveStream struct {
	opts    LivenessOptions // with the defaults filled in
	n       int
	end     time.Duration
	now     time.Duration
	version int
	grants  int
	procs   procTable[liveProc]
	kept    map[int]*liveClient // worker → the client its kept crashes left open
	keys    map[string]*liveKey
	ended   bool // the history has ended (result)
	faults  liveFaults
	avail   liveAvail
	queue   *queueStream // the queue's stream, for lost-task; nil when the caller judges the queue from its own facts
	// expiring are the grants of session locks whose holder crashed and
	// whose lease's end a down stretch may still move (docs/history.md
	// §4.5, "Sessions kept by a leader"); expiringKept is their number
	// after the last pruning.
	expiring     []*liveGrant
	expiringKept int
}

// minTime is a moment before every moment of a history.
const minTime = time.Duration(math.MinInt64)

// liveLife is whether, and when, a process crashed.
type liveLife struct {
	crashed bool
	at      time.Duration
}

// liveClient is a worker's lock client as the processes that used it
// leave it: closed at a crash that did not keep it (docs/history.md §1).
type liveClient struct {
	closed bool
	at     time.Duration
	// waiting are the acquires of unknown outcome whose excuse waits for
	// the close.
	waiting []*liveUnknown
}

// liveProc is what liveStream keeps of one worker process.
type liveProc struct {
	client  int
	life    *liveLife
	cl      *liveClient // set at its crash
	pending livePending
	keys    []liveProcKey
}

// livePending is a process's outstanding invoke.
type livePending struct {
	ok     bool
	index  int
	at     time.Duration
	f, key string
	ttl    time.Duration
	client int
}

// liveProcKey is a process's state of one key: its latest grant (whose
// renewals, release and belief the ops of the process read) and belief.
type liveProcKey struct {
	key       *liveKey
	grant     *liveGrant
	releasing bool
	renewing  bool
	renewAt   time.Duration
	renewTTL  time.Duration
	open      bool // the belief of grant is open
	until     time.Duration
}

// of returns p's state of key k, creating it.
func (p *liveProc) of(k *liveKey) *liveProcKey {
	for i := range p.keys {
		if p.keys[i].key == k {
			return &p.keys[i]
		}
	}
	p.keys = append(p.keys, liveProcKey{key: k})
	return &p.keys[len(p.keys)-1]
}

// liveFaults follows the faults and heals that took effect
// (docs/history.md §3, "Records and faults").
type liveFaults struct {
	any     bool
	last    time.Duration
	inForce []history.Op // copies of the faults in force
	skewing bool
	since   time.Duration
	skews   []span // the stretches in which a clock fault was in force, ended ones
	// cutting is set while a cut (history.Op.HoldsRequests) is in force,
	// since cutSince; cuts are the ended stretches in which one was, in
	// order.
	cutting  bool
	cutSince time.Duration
	cuts     []span
	// late are the requests of unknown outcome whose latest arrival may
	// still move, lateMin the earliest arrival among those no cut holds
	// now.
	late    []*liveLate
	lateMin time.Duration
}

// liveLate is a request of unknown outcome, an acquire or a renewal, whose
// latest arrival (docs/history.md §4.5, "Requests held back by a cut") may
// still move: while a cut holds it, or until the history passes it
// without a cut beginning.
type liveLate struct {
	invAt, arrive time.Duration
	held          bool
	key           *liveKey
	u             *liveUnknown // the acquire, or
	g             *liveGrant   // the grant the renewal renews, with
	ttl           time.Duration
}

// liveAvail follows the majority periods (docs/history.md §4.6).
type liveAvail struct {
	periods []upPeriod // ended periods
	cur     *upPeriod  // the period in progress, nil when no majority is up
	done    bool       // a history before version 3 had its first fault
	note    string
	// downs are the ended down stretches (docs/history.md §4.5, "Sessions
	// kept by a leader"), in order; down is set while one is in force,
	// since downSince.
	downs     []span
	down      bool
	downSince time.Duration
}

func newLiveStream(opts LivenessOptions) *liveStream {
	if opts.Window <= 0 {
		opts.Window = DefaultStuckWindow
	}
	if opts.Attempts <= 0 {
		opts.Attempts = DefaultStuckAttempts
	}
	if opts.UnavailableWindow <= 0 {
		opts.UnavailableWindow = DefaultUnavailableWindow
	}
	if opts.RetransmitFirst <= 0 {
		opts.RetransmitFirst = DefaultRetransmitFirst
	}
	if opts.RetransmitMax <= 0 {
		opts.RetransmitMax = DefaultRetransmitMax
	}
	return &liveStream{opts: opts, version: 1, kept: map[int]*liveClient{}, keys: map[string]*liveKey{},
		avail: liveAvail{cur: &upPeriod{}}, queue: newQueueStream(), faults: liveFaults{lateMin: Forever}}
}

// add feeds the history's next op.
func (s *liveStream) add(op *history.Op) {
	i := s.n
	s.n++
	s.end, s.now = op.Time, op.Time
	if len(s.faults.late) > 0 && op.Time > s.faults.lateMin {
		s.arrived()
	}
	if i == 0 {
		s.version = history.Version(history.History{*op})
	}
	if s.queue != nil {
		s.queue.add(op)
	}
	if op.IsNemesis() {
		s.nemesis(op)
		return
	}
	p := s.procs.get(op.Process)
	if p == nil {
		p = &liveProc{client: op.Client, life: &liveLife{}}
		s.procs.set(op.Process, p)
	}
	if op.Type == history.Invoke {
		s.invoke(p, op, i)
		return
	}
	inv := p.pending
	p.pending = livePending{}
	if !inv.ok {
		return // not well-formed
	}
	if op.Type == history.Info {
		s.crashed(p, op)
	}
	switch op.F {
	case history.FAcquire:
		s.acquired(p, op, inv, i)
	case history.FRelease, history.FLeaseLost, history.FRenew:
		s.lockOp(p, op, inv)
	}
	if op.Type == history.Info {
		s.died(p, op)
	}
}

// invoke takes an invoke of process p.
func (s *liveStream) invoke(p *liveProc, op *history.Op, i int) {
	p.pending = livePending{ok: true, index: i, at: op.Time, f: op.F, key: op.Key, ttl: op.TTL, client: op.Client}
	switch op.F {
	case history.FAcquire:
		k := s.key(op.Key)
		k.outstanding = append(k.outstanding, p.pending)
	case history.FRelease, history.FLeaseLost:
		k := s.keys[op.Key]
		if k == nil {
			return
		}
		pk := p.of(k)
		s.closeBelief(pk, op.Time)
		if op.F == history.FRelease && pk.grant != nil {
			pk.releasing = true
		}
	case history.FRenew:
		if k := s.keys[op.Key]; k != nil {
			if pk := p.of(k); pk.grant != nil {
				pk.renewing, pk.renewAt, pk.renewTTL = true, op.Time, op.TTL
			}
		}
	}
}

// closeBelief ends the open belief of pk at, or at its until when that
// came first (Analyze's closeB).
func (s *liveStream) closeBelief(pk *liveProcKey, at time.Duration) {
	if !pk.open {
		return
	}
	pk.open = false
	g := pk.grant
	g.beliefEnd = at
	if pk.until != 0 && pk.until < at {
		g.beliefEnd = max(pk.until, g.ret)
	}
}

// lockOp takes the completion of a release, lease-lost or renewal: what it
// says about the end of its process's latest grant of the key (its hold
// end, docs/history.md §4.5) and the grant's renewals (§3).
func (s *liveStream) lockOp(p *liveProc, op *history.Op, inv livePending) {
	k := s.keys[op.Key]
	if k == nil {
		return
	}
	pk := p.of(k)
	g := pk.grant
	releasing, renewing := pk.releasing, pk.renewing
	pk.releasing, pk.renewing = false, false
	if g == nil {
		return
	}
	switch op.F {
	case history.FRelease:
		switch {
		case op.Type == history.OK && releasing && g.released < 0:
			g.released = op.Time
			s.finishGrant(g)
		case op.Type == history.Fail && releasing && strings.Contains(op.Error, NotHeldError) && g.lost < 0:
			g.lost = op.Time
		}
	case history.FLeaseLost:
		if op.Type == history.OK && g.lost < 0 {
			g.lost = op.Time
		}
	case history.FRenew:
		switch op.Type {
		case history.OK:
			inOp := history.Op{TTL: inv.ttl}
			g.renewed, g.rCall, g.rLease = true, inv.at, renewLease(&inOp, op, g.lease)
			if pk.open && op.Until != 0 && (pk.until == 0 || op.Time <= pk.until) {
				pk.until = op.Until
			}
		case history.Info:
			if renewing {
				s.unknownRenewal(g, pk.renewAt, op.Time, pk.renewTTL)
			}
		}
	}
}

// crashed takes the first info of process p: its crash, and the close of
// its client unless the crash kept it, together with the clients its
// worker's kept crashes left open.
func (s *liveStream) crashed(p *liveProc, op *history.Op) {
	if p.life.crashed {
		return
	}
	p.life.crashed, p.life.at = true, op.Time
	cl := s.kept[op.Client]
	if cl == nil {
		cl = &liveClient{}
	}
	p.cl = cl
	if op.Kept {
		s.kept[op.Client] = cl
		return
	}
	delete(s.kept, op.Client)
	s.closeClient(cl, op.Time)
}

// died ends what process p left: its beliefs end at its crash and its
// grants' excuses and leases are now known; it issues nothing more.
func (s *liveStream) died(p *liveProc, op *history.Op) {
	for j := range p.keys {
		pk := &p.keys[j]
		if pk.grant == nil {
			continue
		}
		s.closeBelief(pk, op.Time)
		s.finishGrant(pk.grant)
		pk.key.leaseKnown(s, pk.grant)
	}
	p.keys = nil
	s.procs.set(op.Process, nil)
}

// closeClient closes client cl at time at: the acquires of unknown outcome
// that waited for it now have their excuses.
func (s *liveStream) closeClient(cl *liveClient, at time.Duration) {
	cl.closed, cl.at = true, at
	for _, u := range cl.waiting {
		k := u.key
		k.pendingU = slices.DeleteFunc(k.pendingU, func(x *liveUnknown) bool { return x == u })
		if u.ttl <= 0 {
			k.maxEnd = max(k.maxEnd, at)
		}
		k.cover(s, u.invAt, u.certain(k))
	}
	cl.waiting = nil
}

// key returns the state of key k, creating it.
func (s *liveStream) key(name string) *liveKey {
	if k := s.keys[name]; k != nil {
		return k
	}
	k := &liveKey{name: name, sessions: true, maxEnd: minTime,
		regions: []*liveRegion{{from: 0, to: Forever, open: true}}}
	if n := len(s.faults.skews); n > 0 {
		sk := s.faults.skews[n-1]
		k.cover(s, sk.from, sk.to)
	}
	s.keys[name] = k
	return k
}

// liveGrant is one grant as the liveness report reads it: its excuse
// (docs/history.md §4.5, "Excuses"), which is known once its process
// released it, crashed or took its key again (or at the end), and its lease
// (for the longest lease of its key), known once its process crashed or
// took the key again.
type liveGrant struct {
	key            *liveKey
	life           *liveLife
	client         int
	invoke, ok     int
	call, ret      time.Duration
	lease          time.Duration
	session        bool
	okLease        bool // its ok records `lease`
	renewed        bool // some renewal ok; rCall and rLease are the latest's
	rCall, rLease  time.Duration
	released, lost time.Duration // -1 when none (holdFacts)
	extended       time.Duration
	unkLease       time.Duration
	unkRenewed     bool
	beliefEnd      time.Duration // Forever while open or when it never ends
	xKnown         bool          // x is known: nothing its process does changes it
	x              time.Duration // the latest of its return, hold end and belief end
	capped         bool          // a grant of the key invoked after its ok returned, at cap
	cap            time.Duration
	settled        bool // its excuse end is known and taken
	end            time.Duration
	leaseFinal     bool
	// parts are the parts of [call, ret) outside every down stretch, which
	// alone it excuses before its return (docs/history.md §4.5); nil when
	// that is the whole of it.
	parts []span
}

// unknownRenewal takes a renewal of g of unknown outcome whose latest
// arrival is at, with ttl ttl (docs/history.md §4.5: it may have moved the
// lease's end to at plus its lease).
func (g *liveGrant) unknownRenewal(at, ttl time.Duration) {
	lease := ttl
	if lease <= 0 {
		lease = g.lease
	}
	to := Forever
	if lease >= 0 {
		to = at + lease
	}
	if !g.unkRenewed || lease < 0 || g.unkLease >= 0 && lease > g.unkLease {
		g.unkLease = lease
	}
	g.unkRenewed = true
	g.extended = max(g.extended, to)
}

// holdX is the latest of g's return, its hold end (§4.5) and the end of
// its belief when that ends: its excuse ends there unless a later grant
// caps it. A crashed holder's session lease is moved on by the down
// stretches downs.
func (g *liveGrant) holdX(downs []span) time.Duration {
	lease := g.lease
	e := g.ret
	if g.okLease {
		e = g.call
	}
	if g.renewed {
		lease, e = g.rLease, g.rCall
	}
	if lease < 0 {
		e = Forever
	} else {
		e += lease
	}
	if g.unkRenewed {
		e = max(e, g.extended)
		if lease >= 0 && (g.unkLease < 0 || g.unkLease > lease) {
			lease = g.unkLease
		}
	}
	c, dead := g.life.at, g.life.crashed
	var end time.Duration
	switch {
	case g.released >= 0:
		end = g.released
	case dead && g.session && lease < 0:
		end = c
	case dead && g.session:
		end = sessionEnd(c+lease, lease, downs)
	case dead && e == Forever:
		end = c
	case dead:
		end = e
	case g.session:
		end = Forever
	default:
		end = e
	}
	if g.lost >= 0 {
		end = min(end, g.lost)
	}
	to := max(g.ret, end)
	if g.beliefEnd != Forever {
		to = max(to, g.beliefEnd)
	}
	return to
}

// contribution is g's lease as the longest lease of its key counts it:
// its latest renewal's, else its own; -1 when it never expires.
func (g *liveGrant) contribution() time.Duration {
	if g.renewed {
		return g.rLease
	}
	return g.lease
}

// liveUnknown is an acquire of unknown outcome (info) of a key.
type liveUnknown struct {
	key           *liveKey
	inv, done     int
	invAt, doneAt time.Duration
	ttl           time.Duration
	client        int
	cl            *liveClient // its process's client
	// arrive is its latest arrival (docs/history.md §4.5): its completion,
	// or later when a cut may have held its request back. It moves while
	// late (liveLate).
	arrive time.Duration
	late   bool
}

// final is u's excuse end (docs/history.md §4.5) under reading rg.
func (u *liveUnknown) final(rg liveRegime) time.Duration {
	switch {
	case u.ttl > 0 && !rg.never:
		return u.arrive + max(u.ttl, rg.L)
	case u.ttl <= 0 || rg.sessions:
		if u.cl.closed {
			return u.cl.at
		}
	}
	return Forever
}

// certain is the least end u's excuse can still have: under every reading
// the rest of the history allows of k's never, sessions and longest lease
// (which is at least k.lfixed), with its client closed at the latest
// moment known.
func (u *liveUnknown) certain(k *liveKey) time.Duration {
	closeAt := u.doneAt
	if u.cl.closed {
		closeAt = u.cl.at
	}
	if u.ttl <= 0 {
		return closeAt
	}
	end := Forever
	if k.sessions {
		end = closeAt
	}
	if !k.never {
		end = min(end, u.arrive+max(u.ttl, k.lfixed))
	}
	return end
}

// liveReach is how far the excuses of the acquires of unknown outcome with
// a ttl invoked before a moment reach: the latest completion plus ttl and
// completion (for a lock that expires), and client close (for one that
// does not).
type liveReach struct {
	any     bool
	doneTTL time.Duration // the latest arrival plus ttl
	done    time.Duration // the latest arrival
	closed  time.Duration
	pending []*liveClient  // clients not closed when their acquire was added
	late    []*liveUnknown // acquires whose arrival could still move when added
}

func (r *liveReach) add(u *liveUnknown) {
	if !r.any {
		r.any, r.doneTTL, r.done, r.closed = true, minTime, minTime, minTime
	}
	r.doneTTL = max(r.doneTTL, u.arrive+u.ttl)
	r.done = max(r.done, u.arrive)
	if u.late {
		r.late = append(slices.Clip(r.late), u)
	}
	switch {
	case u.cl.closed:
		r.closed = max(r.closed, u.cl.at)
	case !slices.Contains(r.pending, u.cl):
		r.pending = append(slices.Clip(r.pending), u.cl)
	}
}

// final is the reach under reading rg; minTime when r holds no acquire.
func (r *liveReach) final(rg liveRegime) time.Duration {
	switch {
	case !r.any:
		return minTime
	case !rg.never:
		return r.arrivals(rg.L)
	case !rg.sessions:
		return Forever
	}
	end := r.closed
	for _, cl := range r.pending {
		if !cl.closed {
			return Forever
		}
		end = max(end, cl.at)
	}
	return end
}

// certain is the least the reach can still be (liveUnknown.certain).
func (r *liveReach) certain(k *liveKey) time.Duration {
	if !r.any {
		return minTime
	}
	end := Forever
	if k.sessions {
		end = r.closed
		for _, cl := range r.pending {
			if cl.closed {
				end = max(end, cl.at)
			}
		}
	}
	if !k.never {
		end = min(end, r.arrivals(k.lfixed))
	}
	return end
}

// arrivals is how far the reach's acquires excuse a lock that expires,
// with L the longest lease: the latest arrival plus the larger of its ttl
// and L.
func (r *liveReach) arrivals(L time.Duration) time.Duration {
	end := max(r.doneTTL, r.done+L)
	for _, u := range r.late {
		end = max(end, u.arrive+max(u.ttl, L))
	}
	return end
}

// liveFail is a refused acquire: its invoke and fail and its worker.
type liveFail struct {
	at        time.Duration
	inv, done int
	client    int
}

// liveRegion is a stretch [from, to] of a key that no certain excuse
// covers, with the refusals in it and what the excuses that are not yet
// certain need to judge it at the end (liveStream).
type liveRegion struct {
	from, to time.Duration
	open     bool // the last region, open to the end (to is Forever)
	decided  bool // judged worth keeping once its to had passed
	gone     bool // cut away
	fails    []liveFail
	ctx      liveReach      // the acquires of unknown outcome with a ttl invoked before from
	inner    []*liveUnknown // those invoked in it, in order
	last     *liveGrant     // the last grant that returned at or before from
	grants   []*liveGrant   // the grants that returned after from, in order
	// compact is set once nothing still open can reach the region: found
	// then holds its unavailable stretches under each of readings, and
	// fails, ctx and inner are dropped.
	compact  bool
	readings []liveRegime
	found    [][]liveStretch
}

// count returns the number of refusals of r at or after a and at or before
// b, and the range of them in r.fails.
func (r *liveRegion) count(a, b time.Duration) (int, int) {
	i, _ := slices.BinarySearchFunc(r.fails, a, func(f liveFail, t time.Duration) int { return cmpDur(f.at, t) })
	j, found := slices.BinarySearchFunc(r.fails, b, func(f liveFail, t time.Duration) int { return cmpDur(f.at, t) })
	for found && j < len(r.fails) && r.fails[j].at == b {
		j++
	}
	return i, j
}

// cmpDur compares two durations.
func cmpDur(a, b time.Duration) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// before returns the part of r before the certain excuse [from, to) that
// overlaps it: [r.from, from], nil when empty.
func (r *liveRegion) before(from time.Duration) *liveRegion {
	if from <= r.from {
		return nil
	}
	left := &liveRegion{from: r.from, to: from, ctx: r.ctx, last: r.last}
	_, j := r.count(minTime, from)
	left.fails = slices.Clone(r.fails[:j])
	for _, u := range r.inner {
		if u.invAt < from {
			left.inner = append(left.inner, u)
		}
	}
	for _, g := range r.grants {
		if g.ret <= from {
			left.grants = append(left.grants, g)
		}
	}
	return left
}

// after makes r the part of itself after the certain excuse [from, to)
// that overlaps it, [to, r.to], and reports whether anything is left: the
// open region always is.
func (r *liveRegion) after(to time.Duration) bool {
	if !r.open && to >= r.to {
		return false
	}
	i, _ := r.count(to, Forever)
	r.fails = r.fails[:copy(r.fails, r.fails[i:])]
	inner := r.inner[:0:0]
	for _, u := range r.inner {
		if u.invAt < to {
			r.ctx.add(u)
		} else {
			inner = append(inner, u)
		}
	}
	r.inner = inner
	grants := r.grants[:0:0]
	for _, g := range r.grants {
		if g.ret <= to {
			r.last = g
		} else {
			grants = append(grants, g)
		}
	}
	r.from, r.grants = to, grants
	return true
}

// liveKey is what liveStream keeps of one key.
type liveKey struct {
	name     string
	lfixed   time.Duration  // the longest lease of the grants whose lease is known for good
	never    bool           // some grant's lease is -1
	sessions bool           // every grant with lease -1 is a session lock
	last     *liveGrant     // the latest grant
	open     []*liveGrant   // the grants whose excuse end is not yet taken, in the order of their oks
	maxEnd   time.Duration  // the latest end of an excuse that no lease changes
	all      liveReach      // every acquire of unknown outcome with a ttl
	firstTTL *liveUnknown   // the first of them to complete
	pendingU []*liveUnknown // acquires of unknown outcome whose client is still open, in order
	regions  []*liveRegion  // in order; the last is open
	// undecided are the regions that ended at a moment the history has
	// not yet passed: refusals may still come at their end.
	undecided []*liveRegion
	// outstanding are the acquires of the key outstanding, in order.
	outstanding []livePending
	// compactable are the ended regions worth keeping that are not yet
	// compact, in the order of their ends.
	compactable []*liveRegion
	waiting     []livePending // at the end: the acquires still pending, in order
	heldGrant   *liveGrant    // at the end: the first grant whose excuse never ends
	lend        time.Duration // at the end: the longest lease, also of the grants whose lease was not known for good
	// nonSession is set once some grant of the key is no session lock;
	// until then, unknowns are its acquires of unknown outcome with a ttl,
	// whose session lease the down stretches may move (docs/history.md
	// §4.5, "Sessions kept by a leader").
	nonSession bool
	unknowns   []*liveUnknown
}

// openRegion returns k's open region, the last.
func (k *liveKey) openRegion() *liveRegion { return k.regions[len(k.regions)-1] }

// cover cuts the certain excuse [from, to) out of k's regions: the
// refusals strictly inside it can count for nothing, a region it splits
// ends at from (its refusals at from stay) and what is left begins at to.
func (k *liveKey) cover(s *liveStream, from, to time.Duration) {
	if to <= from {
		return
	}
	i, _ := slices.BinarySearchFunc(k.regions, from, func(r *liveRegion, t time.Duration) int {
		if r.open || r.to > t {
			return 1
		}
		return -1
	})
	j := i
	for j < len(k.regions) && k.regions[j].from < to {
		j++
	}
	if i == j {
		return
	}
	if r := k.regions[i]; j == i+1 && r.open && !k.keepsBefore(s, r, from) {
		r.after(to) // the common cut: the open region's start moves on
		return
	}
	var parts []*liveRegion
	for _, r := range k.regions[i:j] {
		if r.compact {
			parts = append(parts, r)
			continue
		}
		if k.keepsBefore(s, r, from) {
			if left := r.before(from); left != nil {
				parts = append(parts, left)
			}
		}
		if r.after(to) && (r.open || r.to > r.from) {
			parts = append(parts, r)
			r.decided = false
		} else {
			r.gone = true
		}
	}
	k.regions = slices.Replace(k.regions, i, j, parts...)
	for _, part := range parts {
		if !part.open && !part.compact && !part.decided {
			k.judge(s, part)
		}
	}
}

// keepsBefore reports whether the part of region r before from is worth
// taking apart when an excuse from from on cuts r: a part that ended
// before now with fewer refusals than opts.Attempts would go at once.
func (k *liveKey) keepsBefore(s *liveStream, r *liveRegion, from time.Duration) bool {
	if from <= r.from {
		return false
	}
	_, n := r.count(minTime, from)
	return n >= s.opts.Attempts || from >= s.now || s.ended
}

// judge decides whether the ended region r is worth keeping, once the
// history has passed its end; until then it waits among the undecided.
func (k *liveKey) judge(s *liveStream, r *liveRegion) {
	if r.to >= s.now && !s.ended {
		k.undecided = append(k.undecided, r)
		return
	}
	r.decided = true
	if !k.candidate(s, r) {
		k.drop(r)
		return
	}
	k.toCompact(r)
}

// drop removes region r.
func (k *liveKey) drop(r *liveRegion) {
	r.gone = true
	if i := slices.Index(k.regions, r); i >= 0 {
		k.regions = slices.Delete(k.regions, i, i+1)
	}
}

// candidate reports whether the ended region r may still hold an
// unavailable stretch: whether some part of it inside a majority period,
// after the period's settling by the longest lease known for good, is at
// least opts.UnavailableWindow long with at least opts.Attempts refusals.
// Excuses only grow and the longest lease only lengthens the settling, so
// a region that has none never will.
func (k *liveKey) candidate(s *liveStream, r *liveRegion) bool {
	if len(r.fails) < s.opts.Attempts {
		return false
	}
	ok := false
	s.avail.each(r.from, r.to, func(_ int, p *upPeriod, to time.Duration) bool {
		lo := p.from
		if p.back {
			lo += k.lfixed
		}
		a, b := max(r.from, lo), min(r.to, to)
		if i, j := r.count(a, b); b-a >= s.opts.UnavailableWindow && j-i >= s.opts.Attempts {
			ok = true
		}
		return !ok
	})
	return ok
}

// decide takes what the passing of time tells about k: a grant whose
// excuse waits for a cap ends no earlier than now (at its hold end, when
// that has passed), and the regions that ended before now are judged.
func (k *liveKey) decide(s *liveStream) {
	for i := 0; i < len(k.open); i++ {
		if g := k.open[i]; g.xKnown && !g.capped {
			k.trySettle(s, g)
			if g.settled {
				i--
			}
		}
	}
	kept := k.undecided[:0]
	for _, r := range k.undecided {
		switch {
		case r.gone:
		case r.to >= s.now && !s.ended:
			kept = append(kept, r)
		default:
			r.decided = true
			if !k.candidate(s, r) {
				k.drop(r)
			} else {
				k.toCompact(r)
			}
		}
	}
	clear(k.undecided[len(kept):])
	k.undecided = kept
	k.compactAll(s)
}

// trySettle takes the excuse end of grant g when it is known: its x capped
// by the return of the first grant of the key invoked after its ok, or x
// once the history has passed it (a later cap comes no earlier); otherwise
// g excuses at least up to now.
func (k *liveKey) trySettle(s *liveStream, g *liveGrant) {
	if g.settled || !g.xKnown {
		return
	}
	switch {
	case g.capped:
		k.settle(s, g, max(min(g.x, g.cap), g.ret))
	case g.x <= s.now || s.ended:
		k.settle(s, g, g.x)
	default:
		k.coverGrant(s, g, s.now)
	}
}

// settle takes end as the end of grant g's excuse.
func (k *liveKey) settle(s *liveStream, g *liveGrant, end time.Duration) {
	g.settled, g.end = true, end
	k.open = slices.DeleteFunc(k.open, func(x *liveGrant) bool { return x == g })
	k.maxEnd = max(k.maxEnd, end)
	k.coverGrant(s, g, end)
}

// extended takes what a renewal of grant g of unknown outcome, held back by
// a cut, moved on: g's x, and its excuse end when that was already taken.
func (k *liveKey) extended(s *liveStream, g *liveGrant) {
	if !g.xKnown {
		return
	}
	x := g.holdX(s.avail.downs)
	if x <= g.x {
		return
	}
	g.x = x
	if !g.settled {
		k.trySettle(s, g)
		return
	}
	end := x
	if g.capped {
		end = max(min(x, g.cap), g.ret)
	}
	if end > g.end {
		g.end = end
		k.maxEnd = max(k.maxEnd, end)
		k.coverGrant(s, g, end)
	}
}

// leaseKnown takes grant g's lease, which nothing changes any more, into
// the longest lease of its key.
func (k *liveKey) leaseKnown(s *liveStream, g *liveGrant) {
	if g.leaseFinal {
		return
	}
	g.leaseFinal = true
	if c := g.contribution(); c >= 0 && c > k.lfixed {
		k.lfixed = c
		k.recertify(s)
	}
}

// recertify cuts out of k's regions what became certain when k's longest
// lease known for good grew or a grant's lease of -1 ruled a reading out:
// the reach of the acquires of unknown outcome before each region and in
// it, and the clock faults' stretches; then it judges the ended regions
// again (a majority's settling grew too).
func (k *liveKey) recertify(s *liveStream) {
	type cut struct{ from, to time.Duration }
	var cuts []cut
	for _, r := range k.regions {
		if r.compact {
			continue
		}
		cuts = append(cuts, cut{r.from, r.ctx.certain(k)})
		for _, u := range r.inner {
			cuts = append(cuts, cut{u.invAt, u.certain(k)})
		}
		for _, sk := range s.faults.skews {
			if sk.from < r.to && sk.to+k.lfixed > r.from {
				cuts = append(cuts, cut{sk.from, sk.to + k.lfixed})
			}
		}
	}
	for _, c := range cuts {
		k.cover(s, c.from, c.to)
	}
	for _, r := range slices.Clone(k.regions) {
		switch {
		case r.compact && !k.mayFind(r):
			k.drop(r)
		case !r.decided || r.gone || r.compact:
		case !k.candidate(s, r):
			k.drop(r)
		default:
			k.toCompact(r)
		}
	}
}

// toCompact puts the ended region r, worth keeping, among those to make
// compact once nothing open can reach it.
func (k *liveKey) toCompact(r *liveRegion) {
	if slices.Contains(k.compactable, r) {
		return
	}
	i, _ := slices.BinarySearchFunc(k.compactable, r.to, func(x *liveRegion, t time.Duration) int { return cmpDur(x.to, t) })
	k.compactable = slices.Insert(k.compactable, i, r)
}

// stable returns the moment up to which nothing still open can change
// the certain excuses of k: the call of a grant whose excuse end is not
// yet taken, the invoke of an acquire outstanding or of one of unknown
// outcome without a ttl whose client is still open, the start of a clock
// fault in force, the call of a crashed holder's grant whose session lease
// the down stretch in force moves on, now.
func (k *liveKey) stable(s *liveStream) time.Duration {
	f := s.now
	for _, g := range k.open {
		f = min(f, g.call)
	}
	if len(k.outstanding) > 0 {
		f = min(f, k.outstanding[0].at)
	}
	for _, u := range k.pendingU {
		if u.ttl <= 0 {
			f = min(f, u.invAt)
		}
	}
	for _, l := range s.faults.late {
		switch {
		case l.u != nil && l.key == k:
			f = min(f, l.invAt)
		case l.g != nil && l.key == k:
			f = min(f, l.g.call)
		}
	}
	if s.faults.skewing {
		f = min(f, s.faults.since)
	}
	if a := &s.avail; a.down {
		for _, g := range s.expiring {
			if g.key == k && g.x > a.downSince {
				f = min(f, g.call) // the down stretch in force moves its end on
			}
		}
	}
	return f
}

// compactAll makes compact the regions waiting to be that nothing open
// can reach any more.
func (k *liveKey) compactAll(s *liveStream) {
	if len(k.compactable) == 0 {
		return
	}
	f := k.stable(s)
	n := 0
	for n < len(k.compactable) && k.compactable[n].to <= f {
		if r := k.compactable[n]; !r.gone && !r.compact {
			k.compact(s, r)
		}
		n++
	}
	k.compactable = slices.Delete(k.compactable, 0, n)
}

// compact judges region r, which nothing open can reach any more, under
// every reading of k the rest of the history can still make true: when
// none finds an unavailable stretch, r goes; when a longer lease (which
// only shortens stretches) cannot change what each finds, r keeps only
// that. Otherwise r stays as it is; so does it while a reading needs the
// close of a client still open.
func (k *liveKey) compact(s *liveStream, r *liveRegion) {
	rgs := k.readings()
	found := make([][]liveStretch, len(rgs))
	some := false
	for i, rg := range rgs {
		if rg.never && rg.sessions && r.waitsForClose() {
			return
		}
		found[i] = s.regionStretches(k, r, rg)
		if len(found[i]) == 0 {
			continue
		}
		if s.lengthens(r, rg) {
			return
		}
		some = true
	}
	if !some {
		k.drop(r)
		return
	}
	r.compact, r.readings, r.found = true, rgs, found
	r.fails, r.ctx, r.inner, r.last, r.grants = nil, liveReach{}, nil, nil, nil
}

// mayFind reports whether the compact region r holds an unavailable
// stretch under a reading of k still possible.
func (k *liveKey) mayFind(r *liveRegion) bool {
	for i, rg := range r.readings {
		possible := !rg.sessions || rg.never && k.sessions || !k.never
		if len(r.found[i]) > 0 && possible {
			return true
		}
	}
	return false
}

// waitsForClose reports whether an acquire of unknown outcome that reaches
// into r has a client still open.
func (r *liveRegion) waitsForClose() bool {
	for _, cl := range r.ctx.pending {
		if !cl.closed {
			return true
		}
	}
	return slices.ContainsFunc(r.inner, func(u *liveUnknown) bool { return !u.cl.closed })
}

// lengthens reports whether a longer lease than rg's could change the
// stretches of region r under rg: through the reach of the acquires of
// unknown outcome before it or in it (for a lock that expires), a clock
// fault that began before its end, or the settling of a majority period
// that came back and overlaps it.
func (s *liveStream) lengthens(r *liveRegion, rg liveRegime) bool {
	if !rg.never && (r.ctx.any || len(r.inner) > 0) {
		return true
	}
	if len(s.faults.skews) > 0 && s.faults.skews[0].from <= r.to {
		return true
	}
	back := false
	s.avail.each(r.from, r.to, func(_ int, p *upPeriod, _ time.Duration) bool {
		back = back || p.back
		return !back
	})
	return back
}

// fail takes a refused acquire: into the open region, or the region that
// ended at its moment; one inside a certain excuse counts for nothing.
func (k *liveKey) fail(f liveFail) {
	if open := k.openRegion(); f.at >= open.from {
		open.fails = append(open.fails, f)
		return
	}
	for i := len(k.regions) - 2; i >= 0 && k.regions[i].to >= f.at; i-- {
		if r := k.regions[i]; r.from <= f.at {
			r.fails = append(r.fails, f)
			return
		}
	}
}

// unknown takes an acquire of unknown outcome of k.
func (k *liveKey) unknown(s *liveStream, u *liveUnknown) {
	if u.ttl > 0 && !k.nonSession {
		k.unknowns = append(k.unknowns, u)
	}
	if u.ttl > 0 {
		k.all.add(u)
		if k.firstTTL == nil {
			k.firstTTL = u
		}
	}
	switch {
	case !u.cl.closed:
		u.cl.waiting = append(u.cl.waiting, u)
		k.pendingU = append(k.pendingU, u)
	case u.ttl <= 0:
		k.maxEnd = max(k.maxEnd, u.cl.at)
	}
	k.cover(s, u.invAt, u.certain(k))
	if u.ttl > 0 {
		open := k.openRegion()
		if u.invAt < open.from {
			open.ctx.add(u)
		} else {
			open.inner = append(open.inner, u)
		}
	}
}

// each calls f with every majority period that overlaps [from, to], its
// index among the periods (that the one in progress will have) and its
// end (Forever for the one in progress), in order, until f returns false.
func (a *liveAvail) each(from, to time.Duration, f func(i int, p *upPeriod, end time.Duration) bool) {
	i, _ := slices.BinarySearchFunc(a.periods, from, func(p upPeriod, t time.Duration) int {
		if p.to > t {
			return 1
		}
		return -1
	})
	for ; i < len(a.periods) && a.periods[i].from < to; i++ {
		if !f(i, &a.periods[i], a.periods[i].to) {
			return
		}
	}
	if a.cur != nil && a.cur.from < to {
		cur := *a.cur
		cur.to = Forever // not known yet: after every ended region
		f(len(a.periods), &cur, Forever)
	}
}

// acquired takes the completion of an acquire.
func (s *liveStream) acquired(p *liveProc, op *history.Op, inv livePending, i int) {
	k := s.key(op.Key)
	k.decide(s)
	switch op.Type {
	case history.Fail:
		k.fail(liveFail{at: op.Time, inv: inv.index, done: i, client: inv.client})
	case history.Info:
		u := &liveUnknown{key: k, inv: inv.index, done: i, invAt: inv.at, doneAt: op.Time, ttl: inv.ttl, client: inv.client, cl: p.cl}
		s.arrival(u)
		k.unknown(s, u)
	case history.OK:
		s.granted(p, k, op, inv, i)
	}
	// only now: until its excuse was taken, it held the regions after its
	// invoke open
	if j, ok := slices.BinarySearchFunc(k.outstanding, inv.index, func(x livePending, i int) int { return x.index - i }); ok {
		k.outstanding = slices.Delete(k.outstanding, j, j+1)
	}
}

// granted takes a grant: it caps the excuses of the grants of its key
// invoked before it returned, ends its process's previous grant of the
// key, and excuses from its call to its return at least.
func (s *liveStream) granted(p *liveProc, k *liveKey, op *history.Op, inv livePending, i int) {
	s.grants++
	pk := p.of(k)
	prev := pk.grant
	if prev != nil {
		s.closeBelief(pk, op.Time)
	}
	for j := 0; j < len(k.open); j++ {
		if g := k.open[j]; !g.capped && g.ok < inv.index {
			g.capped, g.cap = true, op.Time
			k.trySettle(s, g)
			if g.settled {
				j--
			}
		}
	}
	if prev != nil {
		s.finishGrant(prev)
		k.leaseKnown(s, prev)
	}
	inOp := history.Op{TTL: inv.ttl}
	lease, session := grantLease(&inOp, op)
	g := &liveGrant{key: k, life: p.life, client: op.Client, invoke: inv.index, ok: i, call: inv.at, ret: op.Time,
		lease: lease, session: session, okLease: op.Lease != 0, released: -1, lost: -1, extended: -1, beliefEnd: Forever,
		parts: s.grantParts(inv.at, op.Time)}
	*pk = liveProcKey{key: k, grant: g, open: true, until: op.Until}
	k.open = append(k.open, g)
	k.last = g
	if !session {
		k.nonSession, k.unknowns = true, nil
	}
	k.coverGrant(s, g, g.ret)
	if open := k.openRegion(); g.ret <= open.from {
		open.last = g
	} else {
		open.grants = append(open.grants, g)
	}
	if lease < 0 && (!k.never || k.sessions && !session) {
		k.never = true
		k.sessions = k.sessions && session
		k.recertify(s)
	}
}

// finishGrant takes grant g's x once nothing its process does changes it.
func (s *liveStream) finishGrant(g *liveGrant) {
	if g.xKnown {
		return
	}
	g.xKnown, g.x = true, g.holdX(s.avail.downs)
	if g.life.crashed && g.session && g.released < 0 {
		s.expire(g)
	}
	g.key.trySettle(s, g)
}

// nemesis takes a nemesis op: the faults and heals that took effect, and
// the availability records.
func (s *liveStream) nemesis(op *history.Op) {
	s.availability(op)
	if op.IsRecord() || op.Type == history.Invoke || op.NemesisFailed(s.version) {
		return
	}
	fs := &s.faults
	fs.any, fs.last = true, op.Time
	if op.IsHealOp(s.version) || op.F == JepsenStop {
		fs.inForce = slices.DeleteFunc(fs.inForce, func(f history.Op) bool {
			return op.F == JepsenStop || op.Heals(f, s.version)
		})
	} else if heal, _ := op.FaultOf(s.version); heal != "" {
		fs.inForce = append(fs.inForce, history.Op{Process: op.Process, Type: op.Type, F: op.F, Heal: op.Heal, Class: op.Class, Time: op.Time})
	}
	before, after := fs.skewing, false
	for _, f := range fs.inForce {
		if _, class := f.FaultOf(s.version); class.SkewsClocks() {
			after = true
		}
	}
	fs.skewing = after
	switch {
	case !before && after:
		fs.since = op.Time
	case before && !after:
		sk := span{fs.since, op.Time}
		fs.skews = append(fs.skews, sk)
		for _, k := range s.keys {
			k.cover(s, sk.from, sk.to+k.lfixed)
		}
	}
	cutting := slices.ContainsFunc(fs.inForce, func(f history.Op) bool { return f.HoldsRequests(s.version) })
	switch {
	case !fs.cutting && cutting:
		fs.cutting, fs.cutSince = true, op.Time
		for _, l := range fs.late {
			l.held = true
		}
	case fs.cutting && !cutting:
		fs.cutting = false
		fs.cuts = append(fs.cuts, span{fs.cutSince, op.Time})
		s.healed(op.Time)
	}
}

// arrivalOf returns the latest arrival, as far as the cuts that have ended
// tell, of a request invoked at invAt and completed at doneAt
// (docs/history.md §4.5, "Requests held back by a cut"): its completion,
// moved on by every ended cut in force at some moment from its invoke to
// its arrival. A cut in force now may hold it further (healed).
func (s *liveStream) arrivalOf(invAt, doneAt time.Duration) time.Duration {
	fs := &s.faults
	arrive := doneAt
	i, _ := slices.BinarySearchFunc(fs.cuts, invAt, func(c span, t time.Duration) int { return cmpDur(c.to, t) })
	for _, c := range fs.cuts[i:] {
		if c.from > arrive {
			break
		}
		arrive = max(arrive, s.opts.heldUntil(invAt, c.to))
	}
	return arrive
}

// arrival sets the latest arrival of the acquire of unknown outcome u,
// completed now, and keeps it late while it may still move.
func (s *liveStream) arrival(u *liveUnknown) {
	u.arrive = s.arrivalOf(u.invAt, u.doneAt)
	if s.faults.cutting || u.arrive > s.now {
		u.late = true
		s.late(&liveLate{invAt: u.invAt, arrive: u.arrive, held: s.faults.cutting, key: u.key, u: u})
	}
}

// unknownRenewal takes a renewal of grant g of unknown outcome, invoked at
// invAt with ttl and completed at doneAt (the end of the history when it
// is still pending): its lease may run from its latest arrival.
func (s *liveStream) unknownRenewal(g *liveGrant, invAt, doneAt, ttl time.Duration) {
	arrive := s.arrivalOf(invAt, doneAt)
	g.unknownRenewal(arrive, ttl)
	if s.faults.cutting || arrive > s.now {
		s.late(&liveLate{invAt: invAt, arrive: arrive, held: s.faults.cutting, key: g.key, g: g, ttl: ttl})
	}
}

// late keeps l among the requests whose arrival may still move.
func (s *liveStream) late(l *liveLate) {
	s.faults.late = append(s.faults.late, l)
	if !l.held {
		s.faults.lateMin = min(s.faults.lateMin, l.arrive)
	}
}

// healed moves on, at the heal of the cuts in force, the arrival of every
// request they held, and takes what that excuses.
func (s *liveStream) healed(at time.Duration) {
	fs := &s.faults
	var keys []*liveKey
	var grants []*liveGrant
	for _, l := range fs.late {
		if !l.held {
			continue
		}
		l.held = false
		l.arrive = max(l.arrive, s.opts.heldUntil(l.invAt, at))
		if l.u != nil {
			l.u.arrive = l.arrive
			if !slices.Contains(keys, l.key) {
				keys = append(keys, l.key)
			}
		} else {
			l.g.unknownRenewal(l.arrive, l.ttl)
			if !slices.Contains(grants, l.g) {
				grants = append(grants, l.g)
			}
		}
	}
	s.arrived()
	for _, g := range grants {
		g.key.extended(s, g)
	}
	for _, k := range keys {
		k.recertify(s)
	}
}

// arrived takes the requests whose arrival the history has passed, with no
// cut holding them, off the late list: nothing moves it any more.
func (s *liveStream) arrived() {
	fs := &s.faults
	fs.lateMin = Forever
	fs.late = slices.DeleteFunc(fs.late, func(l *liveLate) bool {
		if l.held || l.arrive >= s.now && !s.ended {
			if !l.held {
				fs.lateMin = min(fs.lateMin, l.arrive)
			}
			return false
		}
		if l.u != nil {
			l.u.late = false
		}
		return true
	})
}

// availability follows the majority periods (docs/history.md §4.6).
func (s *liveStream) availability(op *history.Op) {
	a := &s.avail
	if a.done || op.IsHeader() || op.NemesisFailed(s.version) {
		return
	}
	if s.version < 3 {
		a.cur.to = op.Time
		a.periods = append(a.periods, *a.cur)
		a.cur, a.done = nil, true
		a.note = fmt.Sprintf("the history (format version %d) does not record which nodes were up: unavailable judged only before its first fault at %s", s.version, secs(op.Time))
		return
	}
	if !op.IsAvailability() {
		return
	}
	av, ok := history.AvailabilityOf(*op)
	s.downRecord(op.Time, !ok || len(av.Down) > 0)
	switch {
	case ok && av.Majority() && a.cur != nil:
		a.cur.records = append(a.cur.records, timedAvailability{op.Time, av})
	case ok && av.Majority():
		a.cur = &upPeriod{from: op.Time, back: true, records: []timedAvailability{{op.Time, av}}}
	case a.cur != nil:
		a.cur.to = op.Time
		a.periods = append(a.periods, *a.cur)
		a.cur = nil
	}
}

// result ends the history and returns its liveness report.
func (s *liveStream) result() LivenessResult {
	return s.report(s.queue.lost)
}

// report ends the history and returns its liveness report, the queue's
// part (whether the history has a capture op, the captures and the lost
// tasks) from queue.
func (s *liveStream) report(queue func() (bool, int, []Anomaly)) LivenessResult {
	res := LivenessResult{Grants: s.grants, Anomalies: []Anomaly{}}
	if s.n == 0 {
		res.Verdict, res.Note = Unknown, "the history is empty"
		return res
	}
	s.finishAll()
	names := make([]string, 0, len(s.keys))
	for k := range s.keys {
		names = append(names, k)
	}
	slices.Sort(names)
	upAtEnd := s.avail.cur != nil || s.avail.done
	if s.avail.cur != nil {
		s.avail.cur.to = s.end
		s.avail.periods = append(s.avail.periods, *s.avail.cur)
		s.avail.cur = nil
	}
	judged := 0
	var notes []string
	if s.avail.note != "" {
		notes = append(notes, s.avail.note)
	}
	for _, name := range names {
		k := s.keys[name]
		rg := liveRegime{never: k.never, sessions: k.sessions, L: max(k.lfixed, k.lend)}
		rg.extra = s.sessionReach(k, rg)
		stuck, ok, note := s.stuck(k, rg, upAtEnd)
		if ok {
			judged++
		}
		if stuck != nil {
			res.Anomalies = append(res.Anomalies, *stuck)
		}
		if note != "" {
			notes = append(notes, note)
		}
		as, ok := s.unavailable(k, rg)
		if ok {
			judged++
		}
		res.Anomalies = append(res.Anomalies, as...)
	}
	captured, captures, lost := queue()
	if captured {
		judged++
		res.Captures = captures
		res.Anomalies = append(res.Anomalies, lost...)
	}
	switch {
	case len(res.Anomalies) > 0:
		res.Verdict = Invalid
	case judged > 0:
		res.Verdict = Valid
	default:
		res.Verdict = Unknown
	}
	if len(notes) > 0 {
		res.Note = strings.Join(notes, "; ")
	}
	if res.Grants == 0 && !captured {
		res.Note = strings.TrimPrefix(res.Note+"; no acquire succeeded in the whole run", "; ")
	}
	return res
}

// finishAll ends the history: a renewal still outstanding is of unknown
// outcome, a belief still open runs to its until or on without end, every
// grant's excuse end is now known, a client still open never closes and a
// clock fault still in force lasts to the end.
func (s *liveStream) finishAll() {
	s.procs.each(func(_ int, p *liveProc) {
		for j := range p.keys {
			pk := &p.keys[j]
			g := pk.grant
			if g == nil {
				continue
			}
			if p.pending.ok && p.pending.f == history.FRenew && p.pending.key == pk.key.name && pk.renewing && g.ok < p.pending.index {
				s.unknownRenewal(g, pk.renewAt, s.end, pk.renewTTL)
			}
			if pk.open {
				g.beliefEnd = Forever
				if pk.until != 0 {
					g.beliefEnd = max(pk.until, g.ret)
				}
			}
			if c := g.contribution(); !g.leaseFinal && c >= 0 {
				pk.key.lend = max(pk.key.lend, c)
			}
			s.finishGrant(g)
		}
		if p.pending.ok && p.pending.f == history.FAcquire {
			k := s.keys[p.pending.key]
			k.waiting = append(k.waiting, p.pending)
		}
	})
	s.ended = true
	if s.faults.cutting {
		s.faults.cutting = false
		s.faults.cuts = append(s.faults.cuts, span{s.faults.cutSince, s.end})
		s.healed(s.end)
	}
	if s.avail.down {
		s.downRecord(s.end, false) // a down stretch in force runs to the end
	}
	s.arrived()
	for _, k := range s.keys {
		slices.SortFunc(k.waiting, func(a, b livePending) int { return a.index - b.index })
		for _, g := range slices.Clone(k.open) {
			k.trySettle(s, g)
			if g.end == Forever && k.heldGrant == nil {
				k.heldGrant = g
			}
		}
		for _, u := range k.pendingU {
			if u.ttl <= 0 {
				k.maxEnd = Forever
				k.cover(s, u.invAt, Forever)
			}
		}
	}
	if s.faults.skewing {
		s.faults.skews = append(s.faults.skews, span{s.faults.since, s.end})
	}
}

// held says who may rightly hold k for ever, "" when nobody: an acquire of
// unknown outcome whose excuse never ends (the first to complete), else a
// grant whose excuse never ends (the first).
func (k *liveKey) held() string {
	var u *liveUnknown
	for _, x := range k.pendingU {
		if x.ttl <= 0 || k.never {
			u = x
			break
		}
	}
	if f := k.firstTTL; k.never && !k.sessions && f != nil && (u == nil || f.done < u.done) {
		u = f
	}
	switch {
	case u != nil:
		return fmt.Sprintf("worker %d's acquire of unknown outcome at %s may have taken it for ever", u.client, secs(u.invAt))
	case k.heldGrant != nil:
		return fmt.Sprintf("worker %d, granted it at %s, may rightly hold it still", k.heldGrant.client, secs(k.heldGrant.ret))
	}
	return ""
}

// text describes g for an anomaly's sentence: "worker 1's at 2.005s,
// whose process crashed at 2.010s".
func (g *liveGrant) text() string {
	t := fmt.Sprintf("worker %d's at %s", g.client, secs(g.ret))
	if g.life.crashed {
		t += fmt.Sprintf(", whose process crashed at %s", secs(g.life.at))
	}
	return t
}

// stuck judges whether key k, under its final reading rg, is stuck at the
// end of the history (docs/history.md §4.5): the anomaly when it is,
// whether k could be judged, and a note.
func (s *liveStream) stuck(k *liveKey, rg liveRegime, upAtEnd bool) (*Anomaly, bool, string) {
	fs := &s.faults
	if n := len(fs.inForce); n > 0 {
		op := &fs.inForce[n-1]
		return nil, false, fmt.Sprintf("%s not judged for stuck: a fault (%s at %s) was still in force at the end", k.name, op.F, secs(op.Time))
	}
	if !upAtEnd {
		return nil, false, fmt.Sprintf("%s not judged for stuck: no majority of the server nodes was up at the end", k.name)
	}
	var settled time.Duration
	if fs.any {
		settled = fs.last + rg.L
	}
	if s.end-settled < s.opts.Window {
		if !fs.any {
			return nil, false, fmt.Sprintf("%s not judged for stuck: the run is shorter than %s", k.name, s.opts.Window)
		}
		return nil, false, fmt.Sprintf("%s not judged for stuck: the last fault at %s and its longest lease leave less than %s of the run", k.name, secs(fs.last), s.opts.Window)
	}
	if held := k.held(); held != "" {
		return nil, true, fmt.Sprintf("%s held at the end: %s", k.name, held)
	}
	start := max(settled, k.maxEnd, k.all.final(rg))
	for _, e := range rg.extra {
		start = max(start, e.to)
	}
	if n := len(fs.skews); n > 0 {
		start = max(start, fs.skews[n-1].to+rg.L)
	}
	if s.end-start < s.opts.Window {
		return nil, true, ""
	}
	return s.stuckIn(k, start), true, ""
}

// stuckIn returns the stuck anomaly of k from start to the end, when
// enough acquires were refused at or after start or were still waiting at
// the end, having waited the window; nil otherwise.
func (s *liveStream) stuckIn(k *liveKey, start time.Duration) *Anomaly {
	open := k.openRegion()
	i, _ := open.count(start, Forever)
	failed := open.fails[i:]
	workers := map[int]bool{}
	for _, f := range failed {
		workers[f.client] = true
	}
	var still []livePending
	for _, w := range k.waiting {
		if s.end-w.at >= s.opts.Window {
			still = append(still, w)
			workers[w.client] = true
		}
	}
	if len(failed)+len(still) < s.opts.Attempts {
		return nil
	}
	var ops []int
	if n := len(failed); n > 0 {
		ops = []int{failed[0].inv, failed[0].done, failed[n-1].inv, failed[n-1].done}
	}
	for _, w := range still {
		ops = append(ops, w.index)
	}
	last := "no grant of it was ever recorded"
	if g := k.last; g != nil {
		ops = append([]int{g.invoke, g.ok}, ops...)
		last = "the last grant was " + g.text()
	}
	after := "every lease had run out"
	if s.faults.any {
		after = fmt.Sprintf("the last fault (at %s) and every lease were over", secs(s.faults.last))
	}
	return &Anomaly{
		Kind:   Stuck,
		Key:    k.name,
		Ops:    ops,
		Window: &Window{Start: start, End: s.end},
		Message: fmt.Sprintf("%s stuck from %s to the end at %s, nobody took it again: %s asked in vain (%s), once %s and with nobody believing it held %s; %s",
			k.name, secs(start), secs(s.end), plural(len(workers), "worker"), askedText(len(failed), len(still)), after, k.name, last),
	}
}

// liveRegime is a reading of what decides a key's excuses at the end:
// whether some grant of it never expires, whether every such grant is a
// session lock, and its longest lease.
type liveRegime struct {
	never, sessions bool
	L               time.Duration
	// extra are the excuses of the acquires of unknown outcome whose
	// session lease the down stretches moved on (sessionReach); only at
	// the end.
	extra []span
}

// readings returns the readings of k that the rest of the history can
// still make true, with k's longest lease known for good: a lock whose
// grants all expire so far may yet get a grant that never expires, a
// session lock or not.
func (k *liveKey) readings() []liveRegime {
	var out []liveRegime
	if !k.never {
		out = append(out, liveRegime{never: false, sessions: true, L: k.lfixed})
	}
	if k.sessions {
		out = append(out, liveRegime{never: true, sessions: true, L: k.lfixed})
	}
	return append(out, liveRegime{never: true, sessions: false, L: k.lfixed})
}

// liveStretch is an unavailable stretch of a region, with what its anomaly
// names.
type liveStretch struct {
	from, to    time.Duration
	period      int // the index of its majority period
	n, workers  int
	first, last liveFail
	grant       *liveGrant // the last grant that returned at or before from
}

// unavailable finds the stretches in which k was unavailable
// (docs/history.md §4.6) under k's final reading rg, region by region:
// each region lies between certain excuses, so every stretch that may be
// unavailable lies in one. It also reports whether k could be judged (some
// period left a stretch that long).
func (s *liveStream) unavailable(k *liveKey, rg liveRegime) ([]Anomaly, bool) {
	judged := false
	for i := range s.avail.periods {
		p := &s.avail.periods[i]
		lo := p.from
		if p.back {
			lo += rg.L
		}
		if p.to-lo >= s.opts.UnavailableWindow {
			judged = true
			break
		}
	}
	var out []Anomaly
	for _, r := range k.regions {
		var sts []liveStretch
		if r.compact {
			sts = r.found[slices.IndexFunc(r.readings, func(x liveRegime) bool { return x.never == rg.never && x.sessions == rg.sessions })]
		} else {
			sts = s.regionStretches(k, r, rg)
		}
		for _, st := range sts {
			out = append(out, s.stretchAnomaly(k, st))
		}
	}
	return out, judged
}

// regionStretches returns the unavailable stretches of region r of k
// under reading rg: the walk over its maximal stretches between the
// excuses that decide r, in every majority period that overlaps it.
func (s *liveStream) regionStretches(k *liveKey, r *liveRegion, rg liveRegime) []liveStretch {
	if len(r.fails) < s.opts.Attempts {
		return nil
	}
	excused := mergeSpans(s.regionSpans(r, rg))
	var out []liveStretch
	s.avail.each(r.from, r.to, func(i int, p *upPeriod, _ time.Duration) bool {
		out = append(out, s.stretches(r, i, p, excused, rg.L)...)
		return true
	})
	return out
}

// regionSpans returns the excuses of a key at the end, under reading rg,
// as far as they decide region r: what reaches from before its start (and
// the certain excuses before it), what began in it, and from its end on
// (the certain excuse that ended it) when it ended.
func (s *liveStream) regionSpans(r *liveRegion, rg liveRegime) []span {
	reach := max(r.from, r.ctx.final(rg))
	skews := s.faults.skews
	j, _ := slices.BinarySearchFunc(skews, r.from, func(sk span, t time.Duration) int { return cmpDur(sk.from, t) })
	if j > 0 {
		reach = max(reach, skews[j-1].to+rg.L)
	}
	spans := []span{{minTime, reach}}
	for _, u := range r.inner {
		spans = append(spans, span{u.invAt, u.final(rg)})
	}
	spans = append(spans, rg.extra...)
	for ; j < len(skews) && (r.open || skews[j].from <= r.to); j++ {
		spans = append(spans, span{skews[j].from, skews[j].to + rg.L})
	}
	if !r.open {
		spans = append(spans, span{r.to, Forever})
	}
	return spans
}

// stretches finds the unavailable stretches of majority period p, of
// index period, inside region r, whose excuses are excused, the longest
// lease L.
func (s *liveStream) stretches(r *liveRegion, period int, p *upPeriod, excused []span, L time.Duration) []liveStretch {
	lo := p.from
	if p.back {
		lo += L
	}
	if p.to-lo < s.opts.UnavailableWindow {
		return nil
	}
	var out []liveStretch
	j, _ := slices.BinarySearchFunc(excused, lo, func(sp span, t time.Duration) int {
		if sp.to > t {
			return 1
		}
		return -1
	})
	for a := lo; a < p.to; {
		b := p.to
		if j < len(excused) && excused[j].from < b {
			b = max(excused[j].from, a)
		}
		if b-a >= s.opts.UnavailableWindow {
			if st, ok := s.unavailableIn(r, period, a, b); ok {
				out = append(out, st)
			}
		}
		if j >= len(excused) || excused[j].from >= p.to {
			break
		}
		a = excused[j].to
		j++
	}
	return out
}

// unavailableIn returns the unavailable stretch [from, to] of the majority
// period of index period, inside region r, when enough acquires were
// refused in it (unavailableIn).
func (s *liveStream) unavailableIn(r *liveRegion, period int, from, to time.Duration) (liveStretch, bool) {
	i, j := r.count(from, to)
	if j-i < s.opts.Attempts {
		return liveStretch{}, false
	}
	workers := map[int]bool{}
	for _, f := range r.fails[i:j] {
		workers[f.client] = true
	}
	st := liveStretch{from: from, to: to, period: period, n: j - i, workers: len(workers), first: r.fails[i], last: r.fails[j-1], grant: r.last}
	for _, g := range r.grants {
		if g.ret <= from {
			st.grant = g
		}
	}
	return st, true
}

// stretchAnomaly is the unavailable anomaly of k over stretch st.
func (s *liveStream) stretchAnomaly(k *liveKey, st liveStretch) Anomaly {
	ops := []int{st.first.inv, st.first.done, st.last.inv, st.last.done}
	before := "no grant of it came before"
	if g := st.grant; g != nil {
		ops = append([]int{g.invoke, g.ok}, ops...)
		before = "the last grant before it was " + g.text()
	}
	return Anomaly{
		Kind:   Unavailable,
		Key:    k.name,
		Ops:    ops,
		Window: &Window{Start: st.from, End: st.to},
		Message: fmt.Sprintf("%s unavailable from %s to %s with %s: %s by %s failed and none succeeded, with no lease left, no acquire of unknown outcome in doubt and nobody believing it held %s; %s",
			k.name, secs(st.from), secs(st.to), s.avail.periods[st.period].nodesText(st.from, st.to), plural(st.n, "acquire"), plural(st.workers, "worker"), k.name, before),
	}
}
