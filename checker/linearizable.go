package checker

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/jepsen-lite/jepsen-lite/checker/anomaly"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// LinearizabilityChecker is the checker "linearizability". It checks, per
// key, that the grants, releases and renewals can be ordered as the lease
// model of docs/history.md §4.1 allows.
//
// The model's state is the holder (a process, or none), the holder's grant,
// the earliest moment E the holder's lease could have expired on a correct
// server, and the instant of the last op. Its rules:
//   - a grant to q is possible when the lock is free or q holds it; while p
//     holds it, only when q's acquire returned no earlier than E, or p's
//     grant is a session lock and p's client was closed before q's acquire
//     returned: at p's crash, or for a crash that kept the client (`kept`)
//     at the next crash of p's worker that closed it.
//     q's lease then may end from base + lease × (1 − Drift), where base
//     is q's call when the ok records its `lease` (counted from the
//     acquire's invoke, whenever the grant took effect), and the grant's
//     instant when the invoke's ttl stands for the lease (the server's
//     lease begins when it grants); a lease of -1 never ends;
//   - a release succeeds only for the holder, and frees the lock;
//   - a renewal that succeeded moves E to its call + lease × (1 − Drift)
//     when its process holds the lock, and changes nothing otherwise;
//   - failed ops change nothing and are dropped; an op of unknown outcome
//     may take effect at any instant after its call, or never.
//
// Tokens are not part of the model: their order is the fencing-tokens
// checker's business. A key's ops are cut at quiescent points (the lock
// free in every order) and at held points (one known holder holding it in
// every order) into pieces, each starting from a free lock or from that
// hold (lincut.go). Pieces whose ops do not overlap are stepped through
// directly; the others are decided by orderSearch (linsearch.go), in
// parallel. In a piece that cannot be ordered, the culprit is the op whose
// completion first makes the ops completed so far impossible to order
// (found by a search over completion times, never by a tie-break on op
// ids): an early-grant for a grant, a foreign-release for a release; of
// the pieces between two quiescent points only the first with a culprit
// reports it. When the check fails and OutDir is set, porcupine's
// visualization of the first failing piece (after the piece before it) is
// written to OutDir/linearizability.html, with the nemesis's ops as
// annotations.
type LinearizabilityChecker struct {
	// Drift is the relative clock drift allowed, in [0, 1); see
	// Options.Drift, except that here zero means no drift (Checkers fills in
	// DefaultDrift).
	Drift float64
	// OutDir is where linearizability.html goes; empty for nowhere.
	OutDir string
}

var _ Checker = (*LinearizabilityChecker)(nil)

// VisualizationFile is the name of the file LinearizabilityChecker writes
// into OutDir.
const VisualizationFile = "linearizability.html"

// visualizationBudget bounds porcupine's search for the visualization of
// the first failing piece, which the decision has already judged: past
// it, the check's note says the file could not be written.
const visualizationBudget = 10 * time.Second

// Name returns "linearizability".
func (c *LinearizabilityChecker) Name() string { return anomaly.CheckerLinearizability }

// Check checks h against the lease mutex model.
func (c *LinearizabilityChecker) Check(ctx context.Context, h history.History) Result {
	return runValidated(ctx, c.Name(), h, c.checkValid)
}

const open = int64(math.MaxInt64)

type opKind uint8

const (
	kindGrant opKind = iota
	kindRelease
	kindRenew
)

// lockOp is one grant, release or renewal, as the model sees it. Its times
// (call, ret, crash) serve the lease arithmetic; its history indexes
// (invoke, retIdx, crashIdx) order it against other ops (docs/history.md §3:
// the history's order settles ties of time).
type lockOp struct {
	kind     opKind
	proc     int
	client   int
	call     int64
	ret      int64 // open for unknown outcomes
	lease    int64 // lease × (1 − drift) in ns; -1 for never
	session  bool
	crash    int64 // when the process crashed, open if never
	freed    int64 // when its client was closed, freeing its sessions: its crash, later for a kept one; open if never
	freedIdx int64 // history index of that close, open if never
	invoke   int   // history index of the invoke
	done     int   // history index of the completion, -1 when none
	retIdx   int64 // done, or open for unknown outcomes
	crashIdx int64 // history index of the process's crash, open if never
	asked    time.Duration
	// fromCall: a grant's lease is its ok's `lease`, counted from its
	// call; otherwise (the invoke's ttl) it counts from its instant
	fromCall bool
	// ends, while a history is read as a stream (linStream), is its
	// process's crash and client close as known so far; sync copies them
	// into crash, crashIdx, freed and freedIdx. nil when those were known
	// from the start.
	ends *ends
	// state is the op's state in its key's queue while the stream waits
	// for it (slotPending, slotDone, slotDropped).
	state uint8
	// heldBefore: its process may have held the lock when it invoked it
	// (keyCutter).
	heldBefore bool
}

// sync copies o's process's crash and client close, as known so far, into
// o (docs/history.md §3: a crash or close is only ever compared with the
// indexes of ops before it, so one not known yet reads as never).
func (o *lockOp) sync() {
	if o.ends != nil {
		o.crash, o.crashIdx, o.freed, o.freedIdx = o.ends.crash, o.ends.crashIdx, o.ends.freed, o.ends.freedIdx
	}
}

func (o *lockOp) isOpen() bool { return o.ret == open }

// index is the op that best names o: its completion, else its invoke.
func (o *lockOp) index() int {
	if o.done >= 0 {
		return o.done
	}
	return o.invoke
}

type lockState struct {
	holder int // -1: free
	by     *lockOp
	expiry int64 // open: never
	now    int64 // the instant of the last op applied (0 before any)
}

// step applies o to s. why is set when o cannot be applied: "early" or
// "foreign". Each op takes effect at one instant in [call, return] (from its
// call on, for an unknown outcome), and the instants follow the order in
// which the ops are applied: s.now is the instant of the last op applied, so
// an op applied after it takes effect no earlier, and a grant that takes the
// lock over takes effect no earlier than the moment the hold it ends could
// have ended.
func step(s lockState, o *lockOp) (ok bool, next lockState, why string) {
	return stepUntil(s, o, open)
}

// stepUntil is step, where the holder's hold may also have ended at
// until (a fold of its process's release or renewal of unknown outcome,
// orderSearch; open for none) for a grant that takes the lock over.
func stepUntil(s lockState, o *lockOp, until int64) (ok bool, next lockState, why string) {
	at := max(s.now, o.call) // o's instant, at the earliest
	switch o.kind {
	case kindGrant:
		if s.holder >= 0 && s.holder != o.proc {
			// the earliest instant at which p's hold may have ended: its
			// lease's expiry, or its crash for a session lock
			end := open
			if s.expiry != open {
				end = s.expiry
			}
			if s.by.session && s.by.freedIdx < o.retIdx {
				end = min(end, s.by.freed)
			}
			end = min(end, until)
			if end == open || max(at, end) > o.ret {
				if o.isOpen() {
					return true, s, "" // it may not have taken effect
				}
				return false, s, "early"
			}
			at = max(at, end)
		} else if at > o.ret {
			return false, s, "early"
		}
		// a recorded lease counts from the grant's call, whenever the
		// grant took effect; a ttl standing for it, from the grant's
		// instant (the server's lease begins when it grants)
		n := lockState{holder: o.proc, by: o, expiry: open, now: at}
		if o.lease >= 0 {
			base := at
			if o.fromCall {
				base = o.call
			}
			n.expiry = satAdd(base, o.lease)
		}
		return true, n, ""
	case kindRenew:
		if at > o.ret {
			return false, s, "" // not at this point: its instant has passed
		}
		s.now = at
		if s.holder == o.proc {
			s.expiry = open
			if o.lease >= 0 {
				s.expiry = satAdd(o.call, o.lease)
			}
		}
		return true, s, ""
	}
	if at > o.ret {
		return false, s, "foreign"
	}
	if s.holder == o.proc {
		return true, lockState{holder: -1, now: at}, ""
	}
	if o.isOpen() {
		s.now = at
		return true, s, ""
	}
	return false, s, "foreign"
}

func satAdd(a, b int64) int64 {
	if a > open-b {
		return open
	}
	return a + b
}

func scaleLease(l time.Duration, drift float64) int64 {
	if l < 0 {
		return -1
	}
	return int64(float64(l) * (1 - drift))
}

// piece is an independent stretch of one key's lock ops.
type piece struct {
	key string
	ops []*lockOp
	seq bool // no two ops overlap: the only linearization is time order
	// prev are the ops of the piece of the same key before it, if any
	// (for the visualization).
	prev []*lockOp
	// held is the state the piece starts from when it was cut where one
	// known holder held the lock (docs/history.md §4.1, "Cuts where the
	// lock is held"); nil for a free lock.
	held *lockState
	// chain and link place the piece among those of its key: its chain is
	// the number of quiescent points before it, its link the number of
	// held points since the last.
	chain, link int
}

// start is the state p starts from.
func (p piece) start() lockState {
	if p.held != nil {
		return *p.held
	}
	return lockState{holder: -1}
}

type pieceResult struct {
	verdict   Verdict
	anomalies []Anomaly
	info      *porcupine.LinearizationInfo
	timedOut  bool
}

func (c *LinearizabilityChecker) checkValid(ctx context.Context, h history.History) Result {
	return c.checkHolds(ctx, h, followHistory(h))
}

// checkHolds reads h, and its crashes and client closes from the
// Follower's events over h.
func (c *LinearizabilityChecker) checkHolds(ctx context.Context, h history.History, holds []HoldEvent) Result {
	ls := c.newStream(ctx)
	feedHoldsFirst(h, holds, ls.add, ls.hold)
	return ls.result()
}

// ends are when a process crashed and when its client was closed (the same
// op unless the crash kept the client), as times and history indexes.
type ends struct{ crash, crashIdx, freed, freedIdx int64 }

// lockOpOf describes the lock op whose invoke in is at history index inv
// and whose completion out is at index done (the zero op and -1 when there
// is none), or reports that it is none (a read, a write). granted is the
// lease of its process's latest grant of the key (0: none), which a
// renewal's lease falls back on (docs/history.md §3).
func lockOpOf(in, out *history.Op, inv, done int, e ends, drift float64, granted time.Duration) (lockOp, bool) {
	lo := lockOp{proc: in.Process, client: in.Client, call: int64(in.Time), ret: open, retIdx: open,
		crash: e.crash, crashIdx: e.crashIdx, freed: e.freed, freedIdx: e.freedIdx, invoke: inv, done: done}
	if done >= 0 && out.Type == history.OK {
		lo.ret, lo.retIdx = int64(out.Time), int64(done)
	}
	switch in.F {
	case history.FAcquire:
		lease, session := grantLease(in, out)
		lo.kind, lo.lease, lo.session, lo.asked = kindGrant, scaleLease(lease, drift), session, lease
		lo.fromCall = out.Type == history.OK && out.Lease != 0
	case history.FRenew:
		lease := renewalLease(in.TTL, out, granted)
		if lease == 0 {
			// a renewal by a process with no grant of the key: it can never
			// take effect, but it is an op of the model all the same
			lease = history.NoLease
		}
		lo.kind, lo.lease, lo.asked = kindRenew, scaleLease(lease, drift), lease
	case history.FRelease:
		lo.kind = kindRelease
	default:
		return lo, false
	}
	return lo, true
}

// checkPiece decides one piece: directly when its ops are sequential, with
// porcupine otherwise. verbose asks for porcupine's linearization info.
func checkPiece(ctx context.Context, p piece, verbose bool) pieceResult {
	if p.seq && !verbose {
		s := p.start()
		for _, o := range p.ops {
			ok, n, why := step(s, o)
			if !ok {
				return pieceResult{verdict: Invalid, anomalies: []Anomaly{describe(p, o, why)}}
			}
			s = n
		}
		return pieceResult{verdict: Valid}
	}
	if !verbose {
		switch ok, undecided := decideOrder(ctx, p, p.ops); {
		case undecided:
			return pieceResult{verdict: Unknown, timedOut: true}
		case ok:
			return pieceResult{verdict: Valid}
		}
		as, unknown := culprits(ctx, p)
		if unknown {
			return pieceResult{verdict: Unknown, timedOut: true}
		}
		return pieceResult{verdict: Invalid, anomalies: as}
	}
	res, info, timedOut := linearize(ctx, p, verbose)
	switch {
	case timedOut:
		return pieceResult{verdict: Unknown, timedOut: true, info: info}
	case res:
		return pieceResult{verdict: Valid, info: info}
	}
	as, unknown := culprits(ctx, p)
	if unknown {
		return pieceResult{verdict: Unknown, timedOut: true, info: info}
	}
	return pieceResult{verdict: Invalid, anomalies: as, info: info}
}

// linearize runs porcupine over ops; ok is its answer, timedOut whether it
// ran out of time or ctx ended. porcupine takes no context: once ctx ends,
// every step the model is asked for fails, which ends the search within a
// step, and its answer, unless it found an order, is not taken.
func linearize(ctx context.Context, p piece, verbose bool) (ok bool, info *porcupine.LinearizationInfo, timedOut bool) {
	if ctx.Err() != nil {
		return false, nil, true
	}
	ops := withoutIdleUnknownGrants(p.ops, p.start().holder)
	var stopped atomic.Bool
	stopSearch := context.AfterFunc(ctx, func() { stopped.Store(true) })
	defer stopSearch()
	model := pieceModel(p.key, p.start(), &stopped)
	pops := make([]porcupine.Operation, len(ops))
	for i, o := range ops {
		pops[i] = porcupine.Operation{ClientId: o.client, Input: o, Call: int64(o.invoke), Output: nil, Return: o.retIdx, Metadata: o.index()}
	}
	timeout := time.Duration(0)
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
		if timeout <= 0 {
			return false, nil, true
		}
	}
	if !verbose {
		switch res := porcupine.CheckOperationsTimeout(model, pops, timeout); {
		case res == porcupine.Ok:
			return true, nil, false
		case res == porcupine.Unknown || stopped.Load():
			return false, nil, true
		}
		return false, nil, false
	}
	res, li := porcupine.CheckOperationsVerbose(model, pops, timeout)
	if res != porcupine.Ok && stopped.Load() {
		return false, nil, true
	}
	return res == porcupine.Ok, &li, res == porcupine.Unknown
}

// withoutIdleUnknownGrants returns ops (in invoke order) without the
// acquires of unknown outcome of processes that hold no lock when they
// invoke them (no grant of theirs in ops, or their own release, ok, after
// their last one), when no renewal may take effect after they are invoked
// (docs/history.md §4.1, "Acquires of unknown outcome"). Such an acquire
// can only add a holder and move the instants on: the one thing a new
// holder makes possible is another process's renewal passing as a no-op
// instead of extending a lease that ran out, hence the renewals' rule. It
// can always be taken last, so leaving it out changes no answer; it spares
// the search the places each could take, which grow exponentially with
// their number (a server paused while workers time out leaves dozens). ops
// is returned as it is when nothing is left out. holder is the process
// holding the lock at the start (-1: none).
func withoutIdleUnknownGrants(ops []*lockOp, holder int) []*lockOp {
	idle := idleUnknownGrants(ops, holder, func(*lockOp) bool { return true })
	if !slices.Contains(idle, true) {
		return ops
	}
	out := make([]*lockOp, 0, len(ops))
	for i, o := range ops {
		if !idle[i] {
			out = append(out, o)
		}
	}
	return out
}

// idleUnknownGrants reports, for each of ops (in invoke order), whether it
// is an acquire of unknown outcome that only adds a holder (docs/history.md
// §4.1, "Acquires of unknown outcome"): its process holds no lock when it
// invokes it (no grant of its own in ops, or its own release, ok, after
// its last one; holder, the process holding the lock at the start, -1 for
// none, holds one), and every renewal that counts (those counts reports)
// returned before its call. A renewal of unknown outcome returns never.
func idleUnknownGrants(ops []*lockOp, holder int, counts func(*lockOp) bool) []bool {
	lastRenew := int64(-1) // the latest instant at which a renewal that counts may take effect
	for _, o := range ops {
		if o.kind == kindRenew && counts(o) {
			lastRenew = max(lastRenew, o.ret)
		}
	}
	mayHold := map[int]bool{holder: holder >= 0}
	idle := make([]bool, len(ops))
	for i, o := range ops {
		switch {
		case o.kind == kindGrant && o.isOpen():
			idle[i] = !mayHold[o.proc] && lastRenew < o.call
		case o.kind == kindGrant:
			mayHold[o.proc] = true
		case o.kind == kindRelease && !o.isOpen():
			mayHold[o.proc] = false
		}
	}
	return idle
}

// upTo returns the ops of p as they stood at the completion of history op
// c: those completed at or before c, and those invoked before c and still
// outstanding there (or of unknown outcome), as of unknown outcome.
func upTo(p piece, c int64) []*lockOp {
	var out []*lockOp
	for _, o := range p.ops {
		switch {
		case int64(o.invoke) > c:
		case o.retIdx <= c:
			out = append(out, o)
		default:
			u := *o
			u.ret, u.retIdx, u.done = open, open, -1
			out = append(out, &u)
		}
	}
	return out
}

// culprits finds the op whose completion first made p impossible to
// linearize (docs/history.md §4.1), by binary search over the completions
// (an order of the ops as they stood at a later completion is one of those
// as they stood at an earlier one, so the answer only goes from possible to
// impossible). unknown is set when porcupine ran out of time.
func culprits(ctx context.Context, p piece) (as []Anomaly, unknown bool) {
	var done []*lockOp
	for _, o := range p.ops {
		if !o.isOpen() {
			done = append(done, o)
		}
	}
	slices.SortFunc(done, func(a, b *lockOp) int { return cmp.Compare(a.retIdx, b.retIdx) })
	lo, hi := 0, len(done)-1 // as of done[hi], the ops are impossible
	for lo < hi {
		mid := (lo + hi) / 2
		ok, timedOut := decideOrder(ctx, p, upTo(p, done[mid].retIdx))
		if timedOut {
			return nil, true
		}
		if ok {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	o := done[lo]
	why := "early"
	if o.kind == kindRelease {
		why = "foreign"
	}
	return []Anomaly{describe(p, o, why)}, false
}

// pieceModel is the lock of key as porcupine's model. Once stopped is set
// (nil: never), every step fails, so that a search ends at once.
func pieceModel(key string, init lockState, stopped *atomic.Bool) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return init },
		Step: func(state, input, _ any) (bool, any) {
			if stopped != nil && stopped.Load() {
				return false, state
			}
			ok, n, _ := step(state.(lockState), input.(*lockOp))
			return ok, n
		},
		Equal: func(a, b any) bool {
			x, y := a.(lockState), b.(lockState)
			return x == y
		},
		Hash: func(state any) uint64 {
			s := state.(lockState)
			return uint64(s.holder)*0x9e3779b97f4a7c15 ^ uint64(s.expiry) ^ uint64(s.now)*0xbf58476d1ce4e5b9
		},
		DescribeOperation: func(input, _ any) string {
			o := input.(*lockOp)
			verb := [...]string{kindGrant: "acquire", kindRelease: "release", kindRenew: "renew"}[o.kind]
			out := "ok"
			if o.isOpen() {
				out = "unknown"
			}
			return fmt.Sprintf("%s %s by p%d → %s", verb, key, o.proc, out)
		},
		DescribeState: func(state any) string {
			s := state.(lockState)
			if s.holder < 0 {
				return "free"
			}
			exp := "never expires"
			if s.expiry != open {
				exp = "may expire from " + secs(time.Duration(s.expiry))
			}
			return fmt.Sprintf("held by p%d, %s", s.holder, exp)
		},
		DescribeOperationMetadata: func(m any) string {
			if m == nil {
				return ""
			}
			return fmt.Sprintf("op %d", m)
		},
	}
}

// blocker finds the grant whose hold o overran (docs/history.md §4.1, the
// culprit's sentence): a grant g of another process in p, completed before
// o, such that in no order of the ops could o have taken effect before g
// (g returned before o was invoked, or o's lease could not have ended by
// g's return), nor after g's hold ended (g's hold could not have ended by
// o's return: holdFloor). Among such grants it prefers the latest one that
// returned before o was invoked, else the latest to return. It returns nil
// when there is none.
func blocker(p piece, o *lockOp) *lockOp {
	var best *lockOp
	better := func(g *lockOp) bool {
		if best == nil {
			return true
		}
		gb, bb := g.retIdx < int64(o.invoke), best.retIdx < int64(o.invoke)
		if gb != bb {
			return gb
		}
		return g.retIdx > best.retIdx
	}
	grants := p.ops
	if p.held != nil {
		grants = append([]*lockOp{p.held.by}, p.ops...) // the hold the piece starts from
	}
	for _, g := range grants {
		if g.kind != kindGrant || g == o || g.proc == o.proc || g.isOpen() || g.retIdx >= o.retIdx {
			continue
		}
		if g.retIdx > int64(o.invoke) && leaseFloor(o, o.call) <= g.ret {
			continue // o may have taken effect first
		}
		if f, _ := holdFloor(p, g, o.retIdx); f <= o.ret {
			continue // g's hold may have ended before o returned
		}
		if better(g) {
			best = g
		}
	}
	return best
}

// leaseFloor is the earliest moment a grant's lease, counted from base,
// may end: open for a lease that never does.
func leaseFloor(g *lockOp, base int64) int64 {
	if g.lease < 0 {
		return open
	}
	return satAdd(base, g.lease)
}

// holdFloor is the earliest moment at which grant g's hold may have ended
// in any order of the ops of p, as seen by an op that returned at history
// index before: its lease's end, counted from its call when the ok recorded
// its lease, else from the earliest instant its grant can take (grantFloor,
// returned as base); the call of its process's release, and the call plus
// lease of its process's renewal or re-acquisition, invoked after it and
// before that return, except that a renewal that succeeded and returned
// before the hold could end took effect while the process held the lock
// and sets the lease anew; and, when g or such a re-acquisition is a
// session lock, the close of its client before that return.
func holdFloor(p piece, g *lockOp, before int64) (floor, base int64) {
	base = g.call
	if !g.fromCall {
		base = grantFloor(p, g, before)
	}
	floor = leaseFloor(g, base)
	if p.held != nil && g == p.held.by {
		floor = p.held.expiry // the expiry in force where the piece was cut
	}
	for _, x := range p.ops {
		if x.proc != g.proc || x == g || int64(x.invoke) <= g.retIdx || int64(x.invoke) >= before {
			continue
		}
		switch {
		case x.kind == kindRelease:
			floor = min(floor, x.call)
		case x.kind == kindRenew && x.retIdx < before && x.ret < floor:
			// it returned before the hold could end, so it took effect
			// while g's process held the lock, and set the lease anew
			floor = leaseFloor(x, x.call)
		default:
			floor = min(floor, leaseFloor(x, x.call))
		}
		if x.kind == kindGrant && x.session && g.freedIdx < before {
			floor = min(floor, g.freed) // a re-acquisition as a session lock, freed with the client
		}
	}
	if g.session && g.freedIdx < before {
		floor = min(floor, g.freed)
	}
	return floor, base
}

// grantFloor is the earliest instant at which grant g can take effect: its
// call, and, for each grant h of another process that returned before g was
// invoked (g takes effect after h's hold ended), the call of h's process's
// release that succeeded (before history index before) after h with no
// other lock op of that process between but renewals (h's process still
// held the lock there, so g took it later), else the earliest end of h's
// lease counted from its call, of its renewals, the call of its process's
// next release or grant, and its session's close, all before g returned.
func grantFloor(p piece, g *lockOp, before int64) int64 {
	at := g.call
	for _, h := range p.ops {
		if h.kind != kindGrant || h.isOpen() || h.proc == g.proc || h.retIdx >= int64(g.invoke) {
			continue
		}
		end := leaseFloor(h, h.call)
		if h.session && h.freedIdx < g.retIdx {
			end = min(end, h.freed)
		}
		for _, x := range p.ops {
			if x.proc != h.proc || x == h || int64(x.invoke) <= h.retIdx {
				continue
			}
			if int64(x.invoke) >= g.retIdx {
				break // it takes effect after g, if at all
			}
			if x.kind == kindRelease && !x.isOpen() && x.retIdx < before {
				end = x.call // h's process held it until this release
				break
			}
			if x.kind != kindRenew {
				end = min(end, x.call) // a re-acquisition, or a release that may not have succeeded
				break
			}
			end = min(end, leaseFloor(x, x.call))
		}
		at = max(at, end)
	}
	return at
}

// describe writes the anomaly of op o that could not be placed in piece p.
func describe(p piece, o *lockOp, why string) Anomaly {
	key := p.key
	who := fmt.Sprintf("worker %d", o.client)
	at := secs(time.Duration(o.ret))
	if why == "foreign" {
		return Anomaly{Kind: ForeignRelease, Key: key, Ops: []int{o.index()},
			Message: fmt.Sprintf("%s's release of %s succeeded at %s (asked at %s), but in no order of the ops of %s before it did %s hold the lock",
				who, key, at, secs(time.Duration(o.call)), key, who)}
	}
	g := blocker(p, o)
	if g == nil {
		return Anomaly{Kind: EarlyGrant, Key: key, Ops: []int{o.index()},
			Message: fmt.Sprintf("%s was granted %s at %s (asked at %s), but no order of the grants and releases of %s before it leaves the lock free for it",
				who, key, at, secs(time.Duration(o.call)), key)}
	}
	holder := fmt.Sprintf("worker %d", g.client)
	if g.client == o.client {
		// two processes of one worker: the earlier crashed
		who, holder = fmt.Sprintf("worker %d (process %d)", o.client, o.proc), fmt.Sprintf("worker %d (process %d)", g.client, g.proc)
	}
	msg := fmt.Sprintf("%s was granted %s at %s (asked at %s) while %s held it since %s (asked at %s)",
		who, key, at, secs(time.Duration(o.call)), holder, secs(time.Duration(g.ret)), secs(time.Duration(g.call)))
	if g.retIdx > int64(o.invoke) {
		mine := fmt.Sprintf("%s's lease of %s could not have ended before %s, after %s's grant returned", who, o.asked, secs(time.Duration(leaseFloor(o, o.call))), holder)
		if o.lease < 0 {
			mine = fmt.Sprintf("%s's lock never expires on its own", who)
		}
		msg = fmt.Sprintf("%s was granted %s at %s (asked at %s) and %s at %s (asked at %s): neither grant could come after the other: %s",
			who, key, at, secs(time.Duration(o.call)), holder, secs(time.Duration(g.ret)), secs(time.Duration(g.call)), mine)
	}
	floor, base := holdFloor(p, g, o.retIdx)
	renewed := false
	for _, x := range p.ops {
		if x.proc == g.proc && x != g && int64(x.invoke) > g.retIdx && x.retIdx < o.retIdx && x.kind != kindRelease {
			renewed = true
		}
	}
	switch {
	case floor != open && renewed:
		msg += fmt.Sprintf(", and %s's hold, renewed since, could not have ended before %s", holder, secs(time.Duration(floor)))
	case floor != open && base > g.call:
		msg += fmt.Sprintf(", and %s's lease of %s, counted from its grant, which could not take effect before %s, could not have expired before %s",
			holder, g.asked, secs(time.Duration(base)), secs(time.Duration(floor)))
	case floor != open:
		msg += fmt.Sprintf(", and %s's lease of %s could not have expired before %s", holder, g.asked, secs(time.Duration(floor)))
	case g.session:
		msg += fmt.Sprintf(", and %s's session lock never expires on its own", holder)
	default:
		msg += fmt.Sprintf(", and %s's lock never expires on its own", holder)
	}
	if g.session {
		if g.crashIdx < o.retIdx {
			msg += fmt.Sprintf("; its process crashed at %s but kept its client, whose session lived on", secs(time.Duration(g.crash)))
		} else {
			msg += "; its process had not crashed"
		}
	}
	msg += fmt.Sprintf("; %s had not released it", holder)
	return Anomaly{Kind: EarlyGrant, Key: key, Ops: []int{o.index(), g.index()}, Message: msg}
}

// visualize writes porcupine's visualization of piece p to OutDir, with the
// nemesis ops during the piece (of nemesis, the history's nemesis ops in
// order) as annotations.
func (c *LinearizabilityChecker) visualize(ctx context.Context, nemesis []history.Op, p piece) error {
	ctx, cancel := context.WithTimeout(ctx, visualizationBudget)
	defer cancel()
	r := checkPiece(ctx, p, true)
	if r.info == nil {
		if r.timedOut {
			return fmt.Errorf("checker: porcupine could not order the ops of key %s in %v", p.key, visualizationBudget)
		}
		return fmt.Errorf("checker: no linearization info for key %s", p.key)
	}
	// porcupine orders the ops by their history indexes, so the nemesis's
	// annotations are placed by index too.
	from, to := int64(p.ops[0].invoke), int64(0)
	for _, o := range p.ops {
		to = max(to, int64(o.index()))
	}
	var notes []porcupine.Annotation
	nemesisStart := map[string]history.Op{}
	for _, op := range nemesis {
		i := op.Index
		if op.IsHeader() || int64(i) < from || int64(i) > to {
			continue
		}
		if op.Type == history.Invoke {
			nemesisStart[op.F] = op
			continue
		}
		startI := int64(i)
		if inv, ok := nemesisStart[op.F]; ok {
			startI = int64(inv.Index)
			delete(nemesisStart, op.F)
		}
		notes = append(notes, porcupine.Annotation{Tag: "nemesis", Start: startI, End: int64(i),
			Description: op.F, Details: fmt.Sprintf("op %d at %s: %s %s", op.Index, secs(op.Time), op.Type, string(op.Value)), BackgroundColor: "#f7d9c4"})
	}
	r.info.AddAnnotations(notes)
	if err := os.MkdirAll(c.OutDir, 0o755); err != nil {
		return fmt.Errorf("checker: %w", err)
	}
	f, err := os.Create(filepath.Join(c.OutDir, VisualizationFile))
	if err != nil {
		return fmt.Errorf("checker: %w", err)
	}
	if err := porcupine.Visualize(pieceModel(p.key, p.start(), nil), *r.info, f); err != nil {
		f.Close()
		return fmt.Errorf("checker: visualize: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("checker: %w", err)
	}
	return nil
}
