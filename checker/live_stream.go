// live_stream.go holds the streaming liveness report (docs/history.md §4.5,
// §4.6, §4.7): its state, the op-by-op feed, and what each worker process
// leaves: its outstanding op, its beliefs, its crash and its client's close.

package checker

import (
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
	ops     int
	end     time.Duration
	now     time.Duration
	version int
	grants  int
	procs   procTable[liveProc]
	// byNum are the latest grants of the live processes, by their
	// number (the Follower's); clients are the clients of crashed
	// processes the Follower has not said closed, by process.
	byNum   map[int]*liveGrant
	clients map[int]*liveClient
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
	client     int
	life       *liveLife
	lockClient *liveClient // set at its crash
	grantNum   int         // the number of its grant being taken (HoldGranted, before its ok)
	pending    livePending
	keys       []liveProcKey
}

// livePending is a process's outstanding invoke.
type livePending struct {
	valid   bool
	index   int
	at      time.Duration
	fn, key string
	ttl     time.Duration
	client  int
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

// newLiveStream starts the liveness report under opts, the defaults
// filled in where opts leaves them zero.
func newLiveStream(opts LivenessOptions) *liveStream {
	opts = opts.withDefaults()
	return &liveStream{opts: opts, version: 1, byNum: map[int]*liveGrant{}, clients: map[int]*liveClient{}, keys: map[string]*liveKey{},
		avail: liveAvail{current: &upPeriod{}}, queue: newQueueStream(), faults: liveFaults{lateMin: Forever}}
}

// withDefaults returns o with the default of every bound it leaves zero or
// negative.
func (o LivenessOptions) withDefaults() LivenessOptions {
	if o.Window <= 0 {
		o.Window = DefaultStuckWindow
	}
	if o.Attempts <= 0 {
		o.Attempts = DefaultStuckAttempts
	}
	if o.UnavailableWindow <= 0 {
		o.UnavailableWindow = DefaultUnavailableWindow
	}
	if o.RetransmitFirst <= 0 {
		o.RetransmitFirst = DefaultRetransmitFirst
	}
	if o.RetransmitMax <= 0 {
		o.RetransmitMax = DefaultRetransmitMax
	}
	return o
}

// add feeds the history's next op.
func (s *liveStream) add(op *history.Op) {
	i := s.ops
	s.ops++
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
	if !inv.valid {
		return // not well-formed
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
	p.pending = livePending{valid: true, index: i, at: op.Time, fn: op.F, key: op.Key, ttl: op.TTL, client: op.Client}
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
		case history.Info: // an ok's renewal came with the Follower's events
			if renewing {
				s.unknownRenewal(g, pk.renewAt, op.Time, pk.renewTTL)
			}
		}
	}
}

// hold feeds the Follower's events of the next op, before the op: which
// grant an ok is (HoldGranted), the end of a belief, a renewal's lease, a
// process's crash and its client's close.
func (s *liveStream) hold(e *HoldEvent) {
	switch e.Kind {
	case HoldGranted:
		if p := s.procs.get(e.Process); p != nil {
			p.grantNum = e.Grant
		}
	case HoldEnded:
		if g := s.byNum[e.Grant]; g != nil {
			g.beliefEnd = e.Time
		}
	case HoldRenewed:
		if g := s.byNum[e.Grant]; g != nil {
			g.renewed, g.renewedCall, g.renewedLease = true, e.Call, e.Lease
		}
	case HoldCrashed:
		if p := s.procs.get(e.Process); p != nil && !p.life.crashed {
			p.life.crashed, p.life.at = true, e.Time
			p.lockClient = &liveClient{}
			s.clients[e.Process] = p.lockClient
		}
		if s.queue != nil {
			s.queue.holdEvent(e)
		}
	case HoldClosed:
		if cl := s.clients[e.Process]; cl != nil {
			delete(s.clients, e.Process)
			s.closeClient(cl, e.Time)
		}
	}
}

// died ends what process p left: its beliefs end at its crash and its
// grants' excuses and leases are now known; it issues nothing more.
func (s *liveStream) died(p *liveProc, op *history.Op) {
	for j := range p.keys {
		pk := &p.keys[j]
		if pk.grant == nil {
			continue
		}
		delete(s.byNum, pk.grant.num)
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
		k.unknownsAwaitingClose = slices.DeleteFunc(k.unknownsAwaitingClose, func(x *liveUnknown) bool { return x == u })
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
