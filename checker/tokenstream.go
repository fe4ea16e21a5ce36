package checker

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// tokenStream is the fencing-token check of a well-formed history fed to it
// op by op, in order (add), with the Follower's events (hold: its grants,
// and the renewals that belong to them), whose result comes once the
// history has ended (result). It holds, for each worker process, the
// highest token of its key returned before its latest acquire or renewal
// invoke and the token its latest grant of each key holds; for each key, the
// highest token returned so far and the first grant of every token (which
// token-reuse needs, one 32-byte entry per distinct token: tokenFirsts);
// and the anomalies.
type tokenStream struct {
	procs procTable[tokenProc]
	keys  map[string]*tokenKey
	reuse []Anomaly
	// regressions are the regressions found, in the order of their
	// grants' oks; result groups them in the order of their invokes, as
	// docs/history.md §4 asks.
	regressions []tokenRegression
}

// tokenEnd is one grant of a token as the messages name it.
type tokenEnd struct {
	invoke, ok int
	client     int
	call, at   time.Duration
	token      uint64
	renewal    bool
}

func (g tokenEnd) verb() string {
	if g.renewal {
		return "renewed"
	}
	return "acquired"
}

// tokenProc is what tokenStream keeps of one worker process.
type tokenProc struct {
	best    tokenEnd // the highest token of the key returned before its latest invoke
	hasBest bool
	// held are the keys it was granted, each with the token its latest
	// grant holds (a process touches few keys)
	held []heldToken
}

// heldToken is the token a process's latest grant of key holds.
type heldToken struct {
	key   string
	token uint64
}

// heldOf returns the token p's latest grant of key k holds, and whether p
// has a grant of k.
func (p *tokenProc) heldOf(k string) (*heldToken, bool) {
	for i := range p.held {
		if p.held[i].key == k {
			return &p.held[i], true
		}
	}
	return nil, false
}

// tokenKey is what tokenStream keeps of one key.
type tokenKey struct {
	best    tokenEnd
	hasBest bool
	first   tokenFirsts
	group   map[int]int // the first grant's ok -> its reuse anomaly
}

// tokenRegression is grant b with a lower token than a, returned before
// b's invoke.
type tokenRegression struct {
	key  string
	a, b tokenEnd
}

func newTokenStream() *tokenStream {
	return &tokenStream{keys: map[string]*tokenKey{}}
}

func (s *tokenStream) key(k string) *tokenKey {
	tk := s.keys[k]
	if tk == nil {
		tk = &tokenKey{first: tokenFirsts{out: map[uint64]tokenFirst{}}, group: map[int]int{}}
		s.keys[k] = tk
	}
	return tk
}

// add feeds the history's next op.
func (s *tokenStream) add(op *history.Op) {
	if op.IsNemesis() || op.Type != history.Invoke {
		return
	}
	p := s.procs.get(op.Process)
	if p == nil {
		p = &tokenProc{}
		s.procs.set(op.Process, p)
	}
	p.hasBest = false
	if op.F == history.FAcquire || op.F == history.FRenew {
		if tk := s.keys[op.Key]; tk != nil && tk.hasBest {
			p.best, p.hasBest = tk.best, true
		}
	}
}

// hold feeds the Follower's next event: a grant, a renewal of one (which
// hands out a new token when its token is not the one its grant holds),
// or a crash, after which its process issues nothing more.
func (s *tokenStream) hold(e *HoldEvent) {
	p := s.procs.get(e.Process)
	if p == nil {
		return
	}
	g := tokenEnd{invoke: e.Invoke, ok: e.OK(), client: e.Client, call: e.Call, at: e.Time, token: e.Token}
	switch e.Kind {
	case HoldGranted:
		if ht, ok := p.heldOf(e.Key); ok {
			ht.token = e.Token
		} else {
			p.held = append(p.held, heldToken{e.Key, e.Token})
		}
		if e.Token == 0 {
			return
		}
	case HoldRenewed:
		ht, ok := p.heldOf(e.Key)
		if !ok || e.Token == 0 || e.Token == ht.token {
			return
		}
		ht.token = e.Token
		g.renewal = true
	case HoldCrashed:
		s.procs.set(e.Process, nil)
		return
	default:
		return
	}
	s.grant(e.Key, g, p)
}

// grant takes the grant of a token g of key k, whose process p saw the
// highest token returned before g's invoke.
func (s *tokenStream) grant(k string, g tokenEnd, p *tokenProc) {
	tk := s.key(k)
	if f, seen := tk.first.get(g.token); seen {
		s.reuse = followCause(s.reuse, tk.group, f.ok, Anomaly{Kind: TokenReuse, Key: k, Ops: []int{f.ok, g.ok},
			Message: fmt.Sprintf("worker %d %s %s with token %d at %s, and worker %d %s it with the same token at %s",
				f.client, f.verb(), k, g.token, secs(f.at), g.client, g.verb(), secs(g.at))})
	} else {
		tk.first.put(g)
	}
	if p.hasBest && g.token < p.best.token {
		s.regressions = append(s.regressions, tokenRegression{key: k, a: p.best, b: g})
	}
	if !tk.hasBest || g.token > tk.best.token {
		tk.best, tk.hasBest = g, true
	}
}

// result returns the check's result once the history has ended.
func (s *tokenStream) result(ctx context.Context, name string) Result {
	start := time.Now()
	if ctx.Err() != nil {
		return Result{Name: name, Verdict: Unknown, Elapsed: time.Since(start), Anomalies: []Anomaly{}, Note: stopNote(ctx)}
	}
	anomalies := s.reuse
	slices.SortStableFunc(s.regressions, func(x, y tokenRegression) int {
		return cmp.Or(cmp.Compare(x.key, y.key), cmp.Compare(x.b.invoke, y.b.invoke))
	})
	groups := map[string]map[int]int{} // by key: the higher grant's ok -> its anomaly
	for _, r := range s.regressions {
		group := groups[r.key]
		if group == nil {
			group = map[int]int{}
			groups[r.key] = group
		}
		a, b := r.a, r.b
		anomalies = followCause(anomalies, group, a.ok, Anomaly{Kind: TokenRegression, Key: r.key, Ops: []int{a.ok, b.ok},
			Message: fmt.Sprintf("worker %d %s %s with token %d at %s (asked at %s), after worker %d had %s it with token %d at %s",
				b.client, b.verb(), r.key, b.token, secs(b.at), secs(b.call), a.client, a.verb(), a.token, secs(a.at))})
	}
	return finish(name, start, anomalies, "")
}

// tokenFirst is what a reuse's message needs of the first grant of a
// token: 32 bytes, for every distinct token of the history.
type tokenFirst struct {
	token   uint64
	ok      int64
	at      time.Duration
	client  int32
	renewal bool
}

// tokenFirsts are the first grants of a key's tokens. Tokens mostly grow,
// so they are kept in a slice in token order, appended to, and looked up
// by binary search; a token below the highest already kept (a regression)
// goes to a map instead.
type tokenFirsts struct {
	inOrder []tokenFirst
	out     map[uint64]tokenFirst
}

// get returns the first grant of token t, and whether there is one.
func (f *tokenFirsts) get(t uint64) (tokenEnd, bool) {
	i, ok := slices.BinarySearchFunc(f.inOrder, t, func(e tokenFirst, t uint64) int { return cmp.Compare(e.token, t) })
	var e tokenFirst
	switch {
	case ok:
		e = f.inOrder[i]
	default:
		if e, ok = f.out[t]; !ok {
			return tokenEnd{}, false
		}
	}
	return tokenEnd{ok: int(e.ok), client: int(e.client), at: e.at, token: e.token, renewal: e.renewal}, true
}

// put keeps g as the first grant of its token, which has none yet.
func (f *tokenFirsts) put(g tokenEnd) {
	e := tokenFirst{token: g.token, ok: int64(g.ok), at: g.at, client: int32(g.client), renewal: g.renewal}
	if n := len(f.inOrder); n == 0 || g.token > f.inOrder[n-1].token {
		f.inOrder = append(f.inOrder, e)
		return
	}
	f.out[g.token] = e
}
