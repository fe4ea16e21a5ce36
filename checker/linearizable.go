package checker

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// LinearizabilityChecker is the checker "linearizability". It checks, per
// key, that the acquires and releases are linearizable against a lease-aware,
// owner-aware, fenced mutex, with porcupine.
//
// The model's state is the holder (a process, or none), the earliest moment
// the holder's lease could have expired on a correct server, and the highest
// fencing token granted so far. Its rules:
//   - an acquire by q succeeds when the lock is free or q holds it; while p
//     holds it, only when q's acquire returned no earlier than the earliest
//     expiry of p's lease. That expiry is p's acquire call + ttl × (1 −
//     Drift), counted from the latest of p's call, the call of the release
//     that freed the lock before p got it, and the earliest expiry of the
//     lease p took over (p's lease cannot have begun before any of them);
//     for an acquire without ttl
//     (a session lock), it is the time p crashed (its info op) or never;
//   - with fencing tokens, a granted token must exceed every token granted
//     before it in the linearization;
//   - a release succeeds only for the holder, and frees the lock;
//   - failed acquires and failed releases change nothing and are dropped;
//   - an op whose outcome is unknown (info, or never completed) may take
//     effect or not. A release gets an open return (math.MaxInt64, as etcd's
//     robustness tests do): linearized anywhere after its call, it frees the
//     lock when its process holds it and changes nothing otherwise. An
//     acquire is left out: taking effect could only add constraints (a
//     holder that never releases), so not taking effect is always the more
//     permissive of its two outcomes.
//
// Renewals and reads are not lock ops here: ignoring a renewal only makes
// the model more permissive. A key's ops are cut at quiescent points (no op
// outstanding, and every process that may hold the lock has crashed and its
// lease may have expired) into independent pieces that start with a free
// lock and the highest token granted so far; pieces whose ops do not overlap
// are stepped through directly, the others go to porcupine, in parallel. An
// acquire that cannot be linearized is an early-grant (or, when only its
// token is at fault, a token-reuse for a token equal to the highest granted
// before it and a token-regression for a lower one); a release is a
// foreign-release. When the check fails and OutDir is set, porcupine's
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

// Name returns "linearizability".
func (c *LinearizabilityChecker) Name() string { return "linearizability" }

// Check checks h against the lease mutex model.
func (c *LinearizabilityChecker) Check(ctx context.Context, h history.History) Result {
	return runValidated(ctx, c.Name(), h, c.checkValid)
}

const open = int64(math.MaxInt64)

// lockOp is one acquire or release, as the model sees it.
type lockOp struct {
	acquire  bool
	proc     int
	client   int
	call     int64
	ret      int64 // open for unknown outcomes
	ttl      int64 // ttl × (1 − drift) in ns; 0 for none
	fixedE   int64 // for acquires without ttl: the process's crash, or open
	token    uint64
	crash    int64 // when the process crashed (or got stuck), open if never
	invoke   int   // history index of the invoke
	done     int   // history index of the completion, -1 when none
	dropped  bool  // failed: changes nothing
	ttlAsked time.Duration
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
	holder  int // -1: free
	by      *lockOp
	expiry  int64
	maxTok  uint64
	freedAt int64 // call time of the release that last freed the lock
}

// step applies o to s. why is set when o cannot be applied: "early", "token"
// or "foreign".
func step(s lockState, o *lockOp) (ok bool, next lockState, why string) {
	if o.acquire {
		other := s.holder >= 0 && s.holder != o.proc
		if other && !(s.expiry != open && o.ret >= s.expiry) {
			if o.isOpen() {
				return true, s, ""
			}
			return false, s, "early"
		}
		if !o.isOpen() && o.token != 0 && o.token <= s.maxTok && !(s.holder == o.proc && s.by != nil && s.by.token == o.token) {
			return false, s, "token"
		}
		n := lockState{holder: o.proc, by: o, maxTok: max(s.maxTok, o.token), freedAt: s.freedAt}
		if o.ttl > 0 {
			// the lease began when it was granted, which is after the call,
			// after the release that freed the lock was called, and after
			// the lease it took over could have expired
			base := max(o.call, s.freedAt)
			if other && s.expiry > base {
				base = s.expiry
			}
			n.expiry = satAdd(base, o.ttl)
		} else {
			n.expiry = o.fixedE
		}
		return true, n, ""
	}
	if s.holder == o.proc {
		return true, lockState{holder: -1, maxTok: s.maxTok, freedAt: max(s.freedAt, o.call)}, ""
	}
	if o.isOpen() {
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

// piece is an independent stretch of one key's lock ops.
type piece struct {
	key    string
	ops    []*lockOp
	maxTok uint64 // highest token granted before the piece
	seq    bool   // no two ops overlap: the only linearization is time order
}

type pieceResult struct {
	verdict  Verdict
	anomaly  *Anomaly
	against  uint64 // for a token failure: the highest token granted before
	info     *porcupine.LinearizationInfo
	timedOut bool
}

func (c *LinearizabilityChecker) checkValid(ctx context.Context, h history.History) Result {
	start := time.Now()
	drift := c.Drift
	if drift < 0 || drift >= 1 {
		drift = 0
	}
	pieces := splitPieces(h, drift)
	results := make([]pieceResult, len(pieces))
	var next atomic.Int64
	var wg sync.WaitGroup
	workers := min(runtime.GOMAXPROCS(0), max(1, len(pieces)))
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(pieces) || ctx.Err() != nil {
					return
				}
				results[i] = checkPiece(ctx, h, pieces[i], false)
			}
		}()
	}
	wg.Wait()
	var anomalies []Anomaly
	unknown := 0
	firstBad := -1
	// token failures that repeat a key's earlier one (the same highest token
	// carried into later pieces) are counted, not listed
	type tokenCause struct {
		key string
		tok uint64
	}
	tokenGroup := map[tokenCause]int{}
	more := map[int]int{}
	for i, r := range results {
		switch {
		case r.anomaly != nil && r.against != 0:
			tc := tokenCause{pieces[i].key, r.against}
			if g, ok := tokenGroup[tc]; ok {
				more[g]++
				continue
			}
			tokenGroup[tc] = len(anomalies)
			anomalies = append(anomalies, *r.anomaly)
			if firstBad < 0 || pieces[i].ops[0].invoke < pieces[firstBad].ops[0].invoke {
				firstBad = i
			}
		case r.anomaly != nil:
			anomalies = append(anomalies, *r.anomaly)
			if firstBad < 0 || pieces[i].ops[0].invoke < pieces[firstBad].ops[0].invoke {
				firstBad = i
			}
		case r.verdict != Valid:
			unknown++
		}
	}
	for g, n := range more {
		if n > 0 {
			anomalies[g].Message += fmt.Sprintf("; %d later acquisitions got tokens not above it too", n)
		}
	}
	note := ""
	if firstBad >= 0 && c.OutDir != "" {
		// Show the failing piece after the one before it on the same key,
		// so the reader sees how the lock got there. Two consecutive pieces
		// together are still a valid piece.
		p := pieces[firstBad]
		if firstBad > 0 && pieces[firstBad-1].key == p.key {
			prev := pieces[firstBad-1]
			p = piece{key: p.key, ops: append(slices.Clip(prev.ops), p.ops...), maxTok: prev.maxTok}
		}
		if err := c.visualize(ctx, h, p); err != nil {
			note = "could not write " + VisualizationFile + ": " + err.Error()
		} else {
			note = fmt.Sprintf("%s shows key %s, ops %d to %d", filepath.Join(c.OutDir, VisualizationFile), p.key, p.ops[0].invoke, p.ops[len(p.ops)-1].index())
		}
	}
	r := finish(c.Name(), start, anomalies, note)
	if r.Verdict == Valid && unknown > 0 {
		r.Verdict = Unknown
		r.Note = fmt.Sprintf("%d of %d pieces could not be decided in time", unknown, len(pieces))
		if ctx.Err() != nil {
			r.Note += ": " + ctx.Err().Error()
		}
	}
	return r
}

// splitPieces collects each key's lock ops and cuts them at quiescent
// points.
func splitPieces(h history.History, drift float64) []piece {
	// A process crashes at its info completion; a process whose op never
	// completes issues nothing after that op's invoke, as if it had crashed
	// there. Processes are numbered densely (ids), so the per-op work below
	// indexes slices instead of hashing.
	procs := map[int]int32{}
	ids := make([]int32, len(h))
	for i := range h {
		p := h[i].Process
		id, ok := procs[p]
		if !ok {
			id = int32(len(procs))
			procs[p] = id
		}
		ids[i] = id
	}
	crash := make([]int64, len(procs))
	for i := range crash {
		crash[i] = open
	}
	last := make([]int32, len(procs)) // each process's last op index + 1
	failed := make([]bool, len(h))    // invokes of lock ops that failed
	n := 0                            // lock ops that did not fail
	for i := range h {
		op := &h[i]
		if op.IsNemesis() {
			continue
		}
		id := ids[i]
		isLock := op.F == history.FAcquire || op.F == history.FRelease
		switch {
		case op.Type == history.Invoke && isLock:
			n++
		case op.Type == history.Fail && isLock && last[id] > 0 && h[last[id]-1].Type == history.Invoke:
			failed[last[id]-1] = true
			n--
		}
		last[id] = int32(i + 1)
		if op.Type == history.Info {
			crash[id] = int64(op.Time)
		}
	}
	for id, l := range last {
		if l > 0 && h[l-1].Type == history.Invoke {
			crash[id] = int64(h[l-1].Time)
		}
	}
	crashOf := func(i int) int64 { return crash[ids[i]] }
	slab := make([]lockOp, 0, n) // one allocation for all lock ops
	pending := make([]*lockOp, len(procs))
	latest := map[procKey]*lockOp{} // each process's latest ok acquire per key
	perKey := map[string][]*lockOp{}
	var keys []string
	for i := range h {
		op := &h[i]
		if op.IsNemesis() {
			continue
		}
		switch op.F {
		case history.FAcquire, history.FRelease:
		case history.FLeaseLost:
			// a session lock's lease ends, at the latest, when its holder
			// learns it is lost
			if a := latest[procKey{op.Process, op.Key}]; op.Type == history.Invoke && a != nil && a.ttl == 0 && a.fixedE > int64(op.Time) {
				a.fixedE = int64(op.Time)
			}
			continue
		default:
			continue
		}
		if op.Type == history.Invoke {
			if failed[i] {
				continue // changes nothing
			}
			slab = append(slab, lockOp{acquire: op.F == history.FAcquire, proc: op.Process, client: op.Client, call: int64(op.Time),
				ret: open, invoke: i, done: -1, ttlAsked: op.TTL, fixedE: crashOf(i), crash: crashOf(i)})
			lo := &slab[len(slab)-1]
			if lo.acquire && op.TTL > 0 {
				lo.ttl = int64(float64(op.TTL) * (1 - drift))
			}
			pending[ids[i]] = lo
			if _, seen := perKey[op.Key]; !seen {
				keys = append(keys, op.Key)
			}
			perKey[op.Key] = append(perKey[op.Key], lo)
			continue
		}
		lo := pending[ids[i]]
		if lo == nil {
			continue
		}
		pending[ids[i]] = nil
		lo.done = i
		switch op.Type {
		case history.OK:
			lo.ret = int64(op.Time)
			lo.token = op.Token
			if lo.acquire {
				latest[procKey{op.Process, op.Key}] = lo
			}
		case history.Fail:
			lo.dropped = true
		}
	}
	slices.Sort(keys)
	var pieces []piece
	for _, key := range keys {
		pieces = cutKey(pieces, key, perKey[key])
	}
	return pieces
}

// cutKey appends the pieces of one key's ops (in invoke order) to pieces.
//
// Failed acquires and releases change nothing and are left out. So are
// acquires with an unknown outcome: taking effect could only add
// constraints (a holder that never releases), so not taking effect, which
// such an op may always do, is the most permissive choice.
//
// A cut before an op that is called at T needs every earlier op to have
// returned before T (an unknown release counts as returned at its process's
// crash) and every process that may still hold the lock to have crashed
// before T with a lease that may have expired by T: the lock then behaves
// exactly as a free one. An unknown release may always take effect at once,
// and the free lock it leaves is the most permissive state, so it ends its
// process's hold for the purpose of cutting.
func cutKey(pieces []piece, key string, all []*lockOp) []piece {
	var cur []*lockOp
	var maxTok, pieceTok uint64
	var maxEnd int64 = math.MinInt64
	seq := true
	holders := map[int]*lockOp{} // process -> its acquire, with its expiry bound
	expiry := map[*lockOp]int64{}
	flush := func() {
		if len(cur) > 0 {
			pieces = append(pieces, piece{key: key, ops: cur, maxTok: pieceTok, seq: seq})
		}
		cur, seq, pieceTok = nil, true, maxTok
		clear(holders)
		clear(expiry)
	}
	for _, o := range all {
		if o.dropped || (o.acquire && o.isOpen()) {
			continue
		}
		if len(cur) > 0 && maxEnd < o.call {
			quiet := true
			for _, a := range holders {
				if a.crash >= o.call || expiry[a] > o.call {
					quiet = false
					break
				}
			}
			if quiet {
				flush()
			}
		}
		if len(cur) > 0 && maxEnd >= o.call {
			seq = false
		}
		cur = append(cur, o)
		end := o.ret
		if o.isOpen() {
			seq = false
			end = o.crash
		}
		maxEnd = max(maxEnd, end)
		if !o.acquire {
			delete(holders, o.proc)
			continue
		}
		// Whatever the model counts a lease from (the call, the release
		// before it, the lease it took over) lies before the acquire
		// returned, so ret + ttl bounds its expiry in every linearization.
		exp := o.fixedE
		if o.ttl > 0 {
			exp = satAdd(o.ret, o.ttl)
		}
		// An acquire called after another one returned is linearized after
		// it in every linearization, so that other holder has lost the lock
		// (a failed release had left it a possible holder).
		for p, a := range holders {
			if p != o.proc && a.ret < o.call {
				delete(holders, p)
			}
		}
		holders[o.proc] = o
		expiry[o] = exp
		maxTok = max(maxTok, o.token)
	}
	flush()
	return pieces
}

// checkPiece decides one piece: directly when its ops are sequential, with
// porcupine otherwise. verbose asks for porcupine's linearization info.
func checkPiece(ctx context.Context, h history.History, p piece, verbose bool) pieceResult {
	if p.seq && !verbose {
		s := lockState{holder: -1, maxTok: p.maxTok}
		for _, o := range p.ops {
			ok, n, why := step(s, o)
			if !ok {
				a := describe(h, p.key, s, o, why)
				r := pieceResult{verdict: Invalid, anomaly: &a}
				if why == "token" {
					r.against = s.maxTok
				}
				return r
			}
			s = n
		}
		return pieceResult{verdict: Valid}
	}
	model := pieceModel(p)
	ops := make([]porcupine.Operation, len(p.ops))
	for i, o := range p.ops {
		ops[i] = porcupine.Operation{ClientId: o.client, Input: o, Call: o.call, Output: nil, Return: o.ret, Metadata: o.index()}
	}
	timeout := time.Duration(0)
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
		if timeout <= 0 {
			return pieceResult{verdict: Unknown, timedOut: true}
		}
	}
	if !verbose {
		switch porcupine.CheckOperationsTimeout(model, ops, timeout) {
		case porcupine.Ok:
			return pieceResult{verdict: Valid}
		case porcupine.Unknown:
			return pieceResult{verdict: Unknown, timedOut: true}
		}
	}
	res, info := porcupine.CheckOperationsVerbose(model, ops, timeout)
	switch res {
	case porcupine.Ok:
		return pieceResult{verdict: Valid, info: &info}
	case porcupine.Unknown:
		return pieceResult{verdict: Unknown, timedOut: true, info: &info}
	}
	a, against := culprit(h, p, info)
	return pieceResult{verdict: Invalid, anomaly: &a, info: &info, against: against}
}

func pieceModel(p piece) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return lockState{holder: -1, maxTok: p.maxTok} },
		Step: func(state, input, _ any) (bool, any) {
			ok, n, _ := step(state.(lockState), input.(*lockOp))
			return ok, n
		},
		Equal: func(a, b any) bool {
			x, y := a.(lockState), b.(lockState)
			return x.holder == y.holder && x.by == y.by && x.expiry == y.expiry && x.maxTok == y.maxTok && x.freedAt == y.freedAt
		},
		Hash: func(state any) uint64 {
			s := state.(lockState)
			return uint64(s.holder)*0x9e3779b97f4a7c15 ^ uint64(s.expiry) ^ s.maxTok<<32 ^ uint64(s.freedAt)*0xbf58476d1ce4e5b9
		},
		DescribeOperation: func(input, _ any) string {
			o := input.(*lockOp)
			verb := "release"
			if o.acquire {
				verb = "acquire"
			}
			out := "ok"
			if o.isOpen() {
				out = "unknown"
			}
			s := fmt.Sprintf("%s %s by p%d → %s", verb, p.key, o.proc, out)
			if o.token != 0 {
				s += fmt.Sprintf(" (token %d)", o.token)
			}
			return s
		},
		DescribeState: func(state any) string {
			s := state.(lockState)
			if s.holder < 0 {
				return fmt.Sprintf("free (max token %d)", s.maxTok)
			}
			exp := "never expires"
			if s.expiry != open {
				exp = "may expire from " + secs(time.Duration(s.expiry))
			}
			return fmt.Sprintf("held by p%d, %s (max token %d)", s.holder, exp, s.maxTok)
		},
		DescribeOperationMetadata: func(m any) string {
			if m == nil {
				return ""
			}
			return fmt.Sprintf("op %d", m)
		},
	}
}

// culprit finds the op porcupine could not linearize: after the longest
// partial linearization, the op left out that returned first.
func culprit(h history.History, p piece, info porcupine.LinearizationInfo) (Anomaly, uint64) {
	var longest []int
	for _, part := range info.PartialLinearizations() {
		for _, lin := range part {
			if len(lin) > len(longest) || (len(lin) == len(longest) && slices.Compare(lin, longest) < 0) {
				longest = lin
			}
		}
	}
	s := lockState{holder: -1, maxTok: p.maxTok}
	done := make([]bool, len(p.ops))
	for _, id := range longest {
		if id < len(p.ops) {
			_, s, _ = step(s, p.ops[id])
			done[id] = true
		}
	}
	best := -1
	for i, o := range p.ops {
		if done[i] {
			continue
		}
		if best < 0 || cmp.Or(cmp.Compare(o.ret, p.ops[best].ret), cmp.Compare(o.call, p.ops[best].call)) < 0 {
			best = i
		}
	}
	if best < 0 {
		best = len(p.ops) - 1
	}
	o := p.ops[best]
	_, _, why := step(s, o)
	if why == "" {
		why = "early"
		if !o.acquire {
			why = "foreign"
		}
	}
	var against uint64
	if why == "token" {
		against = s.maxTok
	}
	return describe(h, p.key, s, o, why), against
}

// describe writes the anomaly of op o failing in state s.
func describe(h history.History, key string, s lockState, o *lockOp, why string) Anomaly {
	who := fmt.Sprintf("worker %d", o.client)
	at := secs(time.Duration(o.call))
	if !o.isOpen() {
		at = secs(time.Duration(o.ret))
	}
	ops := []int{o.index()}
	holder := "another process"
	if s.by != nil {
		holder = fmt.Sprintf("worker %d", s.by.client)
		ops = append(ops, s.by.index())
	}
	switch why {
	case "token":
		if o.token == s.maxTok {
			return Anomaly{Kind: TokenReuse, Key: key, Ops: ops,
				Message: fmt.Sprintf("%s was granted %s with token %d at %s, a token already granted before it", who, key, o.token, at)}
		}
		return Anomaly{Kind: TokenRegression, Key: key, Ops: ops,
			Message: fmt.Sprintf("%s was granted %s with token %d at %s, not above token %d granted before it", who, key, o.token, at, s.maxTok)}
	case "foreign":
		msg := fmt.Sprintf("%s's release of %s succeeded at %s but it did not hold the lock", who, key, at)
		if s.by != nil {
			msg += fmt.Sprintf(" (%s did, since %s)", holder, secs(time.Duration(s.by.ret)))
		} else {
			msg += " (nobody did)"
		}
		return Anomaly{Kind: ForeignRelease, Key: key, Ops: ops, Message: msg}
	}
	msg := fmt.Sprintf("%s was granted %s at %s (asked at %s) while %s held it", who, key, at, secs(time.Duration(o.call)), holder)
	if s.by != nil {
		if s.by.ttl > 0 {
			msg += fmt.Sprintf(": %s's lease, asked at %s for %s, could not have expired before %s",
				holder, secs(time.Duration(s.by.call)), secs(s.by.ttlAsked), secs(time.Duration(s.expiry)))
		} else {
			msg += fmt.Sprintf(" since %s and had neither released it nor crashed", secs(time.Duration(s.by.ret)))
		}
	}
	return Anomaly{Kind: EarlyGrant, Key: key, Ops: ops, Message: msg}
}

// visualize writes porcupine's visualization of piece p to OutDir, with the
// nemesis ops during the piece as annotations.
func (c *LinearizabilityChecker) visualize(ctx context.Context, h history.History, p piece) error {
	r := checkPiece(ctx, h, p, true)
	if r.info == nil {
		return fmt.Errorf("checker: no linearization info for key %s", p.key)
	}
	from, to := int64(p.ops[0].call), int64(0)
	for _, o := range p.ops {
		if o.ret != open {
			to = max(to, o.ret)
		}
		to = max(to, o.call)
	}
	var notes []porcupine.Annotation
	nemesisStart := map[string]history.Op{}
	for i := range h {
		op := h[i]
		if !op.IsNemesis() || int64(op.Time) < from || int64(op.Time) > to {
			continue
		}
		if op.Type == history.Invoke {
			nemesisStart[op.F] = op
			continue
		}
		startT := int64(op.Time)
		if inv, ok := nemesisStart[op.F]; ok {
			startT = int64(inv.Time)
			delete(nemesisStart, op.F)
		}
		notes = append(notes, porcupine.Annotation{Tag: "nemesis", Start: startT, End: int64(op.Time),
			Description: op.F, Details: fmt.Sprintf("op %d: %s %s", op.Index, op.Type, string(op.Value)), BackgroundColor: "#f7d9c4"})
	}
	r.info.AddAnnotations(notes)
	if err := os.MkdirAll(c.OutDir, 0o755); err != nil {
		return fmt.Errorf("checker: %w", err)
	}
	f, err := os.Create(filepath.Join(c.OutDir, VisualizationFile))
	if err != nil {
		return fmt.Errorf("checker: %w", err)
	}
	if err := porcupine.Visualize(pieceModel(p), *r.info, f); err != nil {
		f.Close()
		return fmt.Errorf("checker: visualize: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("checker: %w", err)
	}
	return nil
}
