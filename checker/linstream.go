package checker

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// linStream is the linearizability check of a well-formed history fed to
// it op by op, in order (add), whose result comes once the history has
// ended (result). It holds only what is open:
//   - each live worker process's outstanding invoke, and its crash and
//     client close once the Follower says they happened (a crashed
//     process's, while its lock ops wait to be cut off);
//   - each key's lock ops from its earliest one still outstanding (ops of
//     a key are cut in invoke order, so an op still outstanding holds back
//     the cutting of every op invoked after it), and its open piece;
//   - the pieces cut off and not yet decided (at most a few per core: add
//     waits for the deciders), the last piece of each key, and the first
//     failing piece with the piece before it, for the visualization;
//   - the history's nemesis ops, for the visualization's annotations.
//
// So its memory is bounded by the largest open piece, not by the history's
// length (docs/history.md §6, "Memory"). Pieces that are sequential are
// stepped through at once; the others go to porcupine on every core.
type linStream struct {
	c     *LinearizabilityChecker
	ctx   context.Context
	start time.Time
	drift float64
	n     int

	procs procTable[linProc]
	// crashed are the ends of the processes that crashed and whose client
	// the Follower has not said closed, by process.
	crashed map[int]*ends
	keys    map[string]*linKey
	nemesis []history.Op
	chunk   []lockOp // lock ops are allocated from chunks of this

	work chan piece
	wg   sync.WaitGroup
	// observe, when set, sees every piece cut off, before it is decided.
	observe func(piece)

	mu      sync.Mutex
	pieces  int
	unknown int
	// bad are, for each chain of pieces with a culprit (pieces cut where
	// the lock was held, between two quiescent points), its first piece
	// with one and its culprit.
	bad map[chainID]badPiece
}

// linProc is what linStream keeps of one worker process.
type linProc struct {
	pending history.Op // the outstanding invoke, when it is a lock op
	// slot is the outstanding invoke's place among its key's lock ops, nil
	// for a read or a write.
	slot        *lockOp
	key         *linKey // the key of the slot
	outstanding bool
	// ends are its crash and client close, shared with its lock ops until
	// they are cut off.
	ends *ends
	// granted are the leases of its latest grant of each key it was
	// granted, from the Follower's events, for its renewals: in grantedIn
	// for its first few keys, so that a process makes no allocation of
	// its own for them.
	granted   []keyLease
	grantedIn [4]keyLease
}

// keyLease is the lease of a process's latest grant of a key.
type keyLease struct {
	key   string
	lease time.Duration
}

// grantedLease returns the lease of p's latest grant of key k, 0 when it
// has none.
func (p *linProc) grantedLease(k string) time.Duration {
	for _, g := range p.granted {
		if g.key == k {
			return g.lease
		}
	}
	return 0
}

// grant records the lease of p's latest grant of key k.
func (p *linProc) grant(k string, lease time.Duration) {
	for i := range p.granted {
		if p.granted[i].key == k {
			p.granted[i].lease = lease
			return
		}
	}
	if p.granted == nil {
		p.granted = p.grantedIn[:0]
	}
	p.granted = append(p.granted, keyLease{key: k, lease: lease})
}

// linKey is what linStream keeps of one key.
type linKey struct {
	cut *keyCutter
	// queue are the key's lock ops in invoke order, from the earliest not
	// yet cut: each is filled in when it completes (slotDone), or left out
	// when it failed (slotDropped).
	queue []*lockOp
	kept  int       // len(queue) when failed ops were last taken out of it
	prev  []*lockOp // the ops of the key's last piece
}

// The states of a lock op in its key's queue.
const (
	slotPending uint8 = iota
	slotDone
	slotDropped
)

// newStream starts the streaming check; its deciders run until result.
func (c *LinearizabilityChecker) newStream(ctx context.Context) *linStream {
	drift := c.Drift
	if drift < 0 || drift >= 1 {
		drift = 0
	}
	workers := runtime.GOMAXPROCS(0)
	s := &linStream{c: c, ctx: ctx, start: time.Now(), drift: drift, crashed: map[int]*ends{}, bad: map[chainID]badPiece{},
		keys: map[string]*linKey{}, work: make(chan piece, 2*workers)}
	for range workers {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			for p := range s.work {
				s.decide(p)
			}
		}()
	}
	return s
}

// add feeds the history's next op.
func (s *linStream) add(op *history.Op) {
	i := s.n
	s.n++
	if op.IsNemesis() {
		s.nemesis = append(s.nemesis, *op)
		return
	}
	p := s.procs.get(op.Process)
	if p == nil {
		p = &linProc{ends: &ends{open, open, open, open}}
		s.procs.set(op.Process, p)
	}
	if op.Type == history.Invoke {
		p.outstanding, p.slot, p.key = true, nil, nil
		switch op.F {
		case history.FAcquire, history.FRelease, history.FRenew:
			p.pending = *op
			p.slot, p.key = s.newSlot(), s.key(op.Key)
			p.key.queue = append(p.key.queue, p.slot)
		}
		return
	}
	slot, k := p.slot, p.key
	p.outstanding, p.slot, p.key = false, nil, nil
	if op.Type == history.Info {
		s.procs.set(op.Process, nil) // it issues nothing more
	}
	if slot == nil {
		return
	}
	inv := &p.pending
	if op.Type == history.Fail {
		slot.state = slotDropped
	} else {
		*slot, _ = lockOpOf(inv, op, inv.Index, i, *p.ends, s.drift, p.grantedLease(inv.Key))
		slot.ends, slot.state = p.ends, slotDone
	}
	s.advance(k)
}

// hold feeds the Follower's events of the next op, before the op: a
// grant's lease, which its process's renewals fall back on, a process's
// crash, and the close of its client (docs/history.md §1: a kept crash
// leaves the client open, and its sessions end at the later crash that
// closes it).
func (s *linStream) hold(e *HoldEvent) {
	switch e.Kind {
	case HoldGranted:
		if p := s.procs.get(e.Process); p != nil {
			p.grant(e.Key, e.Lease)
		}
	case HoldCrashed:
		if p := s.procs.get(e.Process); p != nil && p.ends.crash == open {
			p.ends.crash, p.ends.crashIdx = int64(e.Time), int64(e.Index)
			s.crashed[e.Process] = p.ends
		}
	case HoldClosed:
		if en := s.crashed[e.Process]; en != nil {
			en.freed, en.freedIdx = int64(e.Time), int64(e.Index)
			delete(s.crashed, e.Process)
		}
	}
}

// newSlot allocates a lock op, pending.
func (s *linStream) newSlot() *lockOp {
	if len(s.chunk) == cap(s.chunk) {
		s.chunk = make([]lockOp, 0, 1024)
	}
	s.chunk = s.chunk[:len(s.chunk)+1]
	return &s.chunk[len(s.chunk)-1]
}

// key returns the state of key k, made on first use.
func (s *linStream) key(k string) *linKey {
	lk := s.keys[k]
	if lk == nil {
		lk = &linKey{}
		lk.cut = newKeyCutter(k, func(p piece) { s.emit(lk, p) })
		s.keys[k] = lk
	}
	return lk
}

// advance cuts the key's lock ops that have completed, with every op
// invoked before them.
func (s *linStream) advance(k *linKey) {
	n := 0
	for _, o := range k.queue {
		if o.state == slotPending {
			break
		}
		n++
		if o.state == slotDone {
			k.cut.add(o)
		}
	}
	if n > 0 {
		k.queue = slices.Delete(k.queue, 0, n)
	}
	if len(k.queue) >= 2*k.kept+64 {
		// An op still outstanding holds back the ops behind it; the failed
		// ones among them are left out, so they need not wait.
		k.queue = slices.DeleteFunc(k.queue, func(o *lockOp) bool { return o.state == slotDropped })
		k.kept = len(k.queue)
	}
}

// emit hands a piece cut off to the deciders: it fixes its ops' crashes and
// closes as known now, and decides a sequential piece at once.
func (s *linStream) emit(k *linKey, p piece) {
	for _, o := range p.ops {
		o.sync()
		o.ends = nil
	}
	if p.held != nil {
		p.held.by.sync()
		p.held.by.ends = nil
	}
	p.prev, k.prev = k.prev, p.ops
	if s.observe != nil {
		s.observe(p)
	}
	if p.seq {
		s.decide(p)
		return
	}
	s.work <- p
}

// decide checks one piece and keeps what its result says.
func (s *linStream) decide(p piece) {
	var r pieceResult
	if s.ctx.Err() == nil {
		r = checkPiece(s.ctx, p, false)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pieces++
	switch {
	case len(r.anomalies) > 0:
		id := chainID{key: p.key, chain: p.chain}
		if b, ok := s.bad[id]; !ok || p.link < b.p.link {
			s.bad[id] = badPiece{p: p, anomalies: r.anomalies}
		}
	case r.verdict != Valid:
		s.unknown++
	}
}

// result ends the history: the ops still outstanding are of unknown
// outcome; it cuts and decides what is left and returns the check's result.
func (s *linStream) result() Result {
	var ids []int
	s.procs.each(func(id int, p *linProc) {
		if p.outstanding && p.slot != nil {
			ids = append(ids, id)
		}
	})
	sort.Ints(ids)
	for _, id := range ids {
		p := s.procs.get(id)
		*p.slot, _ = lockOpOf(&p.pending, &history.Op{}, p.pending.Index, -1, *p.ends, s.drift, p.grantedLease(p.pending.Key))
		p.slot.ends, p.slot.state = p.ends, slotDone
	}
	names := make([]string, 0, len(s.keys))
	for k := range s.keys {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		s.advance(s.keys[k])
		s.keys[k].cut.flush()
	}
	close(s.work)
	s.wg.Wait()
	anomalies, firstBad := culpritsOfChains(s.bad)
	note := ""
	if firstBad != nil && s.c.OutDir != "" && s.ctx.Err() == nil {
		// Show the failing piece after the one before it on the same key,
		// so the reader sees how the lock got there. Two consecutive pieces
		// together are still a valid piece.
		p := *firstBad
		if p.prev != nil && p.held == nil {
			p = piece{key: p.key, ops: append(slices.Clip(p.prev), p.ops...)}
		}
		if err := s.c.visualize(s.ctx, s.nemesis, p); err != nil {
			note = "could not write " + VisualizationFile + ": " + err.Error()
		} else {
			note = fmt.Sprintf("%s shows key %s, ops %d to %d", filepath.Join(s.c.OutDir, VisualizationFile), p.key, p.ops[0].invoke, p.ops[len(p.ops)-1].index())
		}
	}
	r := finish(s.c.Name(), s.start, anomalies, note)
	if r.Verdict == Valid && s.unknown > 0 {
		r.Verdict = Unknown
		r.Note = fmt.Sprintf("%d of %d pieces could not be decided in time", s.unknown, s.pieces)
		if s.ctx.Err() != nil {
			r.Note += ": " + stopNote(s.ctx)
		}
	}
	return r
}

// chainID names a chain of pieces: those of one key between two quiescent
// points, cut where the lock was held.
type chainID struct {
	key   string
	chain int
}

// badPiece is a piece with a culprit, and its culprit.
type badPiece struct {
	p         piece
	anomalies []Anomaly
}

// culpritsOfChains returns the culprit of the first piece with one of each
// chain, and the earliest such piece (nil when none). A chain's pieces
// after its first with a culprit start from a hold that no order of the
// ops before them reaches, so what they say is left out: at most one
// culprit is reported between two quiescent points (docs/history.md
// §4.1), as if the chain were one piece.
func culpritsOfChains(bad map[chainID]badPiece) ([]Anomaly, *piece) {
	var out []Anomaly
	var first *piece
	for _, b := range bad {
		out = append(out, b.anomalies...)
		if first == nil || b.p.ops[0].invoke < first.ops[0].invoke {
			first = &b.p
		}
	}
	return out, first
}
