package reference

import (
	"slices"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// write is one write op with its §3 and §4.2 attributes.
type write struct {
	*opCall
	value    int64
	hasValue bool
	accepted bool   // ok
	unknownW bool   // info or pending
	lease    *grant // the write's lease, nil when none
	lo, hi   int64  // the apply interval of an accepted write
	after    int64  // after(w)
}

// valueOf is a write's value: its invoke's, else its completion's.
func valueOf(c *opCall) (int64, bool) {
	if v, ok := c.invOp.Int(); ok {
		return v, true
	}
	return c.doneOp.Int()
}

// resourceAnomalies applies §4.2 to every key.
func resourceAnomalies(x *parsed, d float64) []string {
	var keys []string
	for _, c := range x.calls {
		if c.f == history.FWrite && !slices.Contains(keys, c.key) {
			keys = append(keys, c.key)
		}
	}
	var kinds []string
	for _, key := range keys {
		kinds = append(kinds, resourceKey(x, key, d)...)
	}
	return kinds
}

// resourceKey returns the anomalies of the writes and reads of key
// (§4.2): stale-write and lost-update.
func resourceKey(x *parsed, key string, d float64) []string {
	ws, reads := keyWrites(x, key)
	acc := acceptedWrites(ws)
	tightenByReads(ws, acc, reads)
	kinds := staleWrites(x, acc, d)
	if len(acc) > 0 && lostUpdate(ws, acc, reads) {
		kinds = append(kinds, checker.LostUpdate)
	}
	return kinds
}

// keyWrites returns the writes of key and its ok reads.
func keyWrites(x *parsed, key string) (ws []*write, reads []*opCall) {
	for _, c := range x.calls {
		if c.key != key {
			continue
		}
		switch {
		case c.f == history.FWrite:
			w := &write{opCall: c, accepted: c.typ == history.OK, unknownW: c.unknown, lease: x.grantOf(c)}
			w.value, w.hasValue = valueOf(c)
			ws = append(ws, w)
		case c.f == history.FRead && c.typ == history.OK:
			reads = append(reads, c)
		}
	}
	return ws, reads
}

// acceptedWrites returns the accepted writes of ws, each with its apply
// interval: applied where present, else [invoke, completion].
func acceptedWrites(ws []*write) []*write {
	var acc []*write
	for _, w := range ws {
		if w.accepted {
			w.lo, w.hi = w.call, w.ret
			if a := int64(w.doneOp.Applied); a != 0 {
				w.lo, w.hi = a, a
			}
			acc = append(acc, w)
		}
	}
	return acc
}

// tightenByReads sets after(w) of each accepted write and tightens its
// apply interval by the reads of its unique value that agree with time.
func tightenByReads(ws, acc []*write, reads []*opCall) {
	// the intervals by time alone, before reads tighten them
	lo := map[*write]int64{}
	hi := map[*write]int64{}
	for _, w := range acc {
		lo[w], hi[w] = w.lo, w.hi
	}
	for _, w := range acc {
		w.after = w.lo
		// a unique value: v ≠ 0 written by exactly one write of the key that
		// may have taken effect (accepted or of unknown outcome)
		if !w.hasValue || w.value == 0 {
			continue
		}
		n := 0
		for _, o := range ws {
			if (o.accepted || o.unknownW) && o.hasValue && o.value == w.value {
				n++
			}
		}
		if n != 1 {
			continue
		}
		for _, r := range reads {
			if v, ok := r.doneOp.Int(); !ok || v != w.value {
				continue
			}
			// evidence only when it agrees with time: no accepted write
			// applied, by time alone, after w and before the read's invoke
			agrees := true
			for _, o := range acc {
				if lo[o] > hi[w] && hi[o] < r.call {
					agrees = false
				}
			}
			if agrees {
				w.hi = min(w.hi, r.ret)
				w.after = max(w.after, r.call)
			}
		}
	}
}

// appliedBefore reports whether write a was provably applied before b.
func appliedBefore(a, b *write) bool { return a.hi < b.after }

// staleWrites returns a stale-write for each pair of accepted writes where
// the newer lease's write was provably applied before the older's.
func staleWrites(x *parsed, acc []*write, d float64) []string {
	var kinds []string
	for _, wo := range acc {
		for _, wn := range acc {
			if wo.lease == nil || wn.lease == nil {
				continue
			}
			if x.older(wo.lease, wn.lease, d) && appliedBefore(wn, wo) {
				kinds = append(kinds, checker.StaleWrite)
			}
		}
	}
	return kinds
}

// finalValue is a possible final value of the register, and whether it is
// known.
type finalValue struct {
	v     int64
	known bool
}

// lostUpdate reports a lost-update: every possible final value of the
// register known and below the number of accepted writes (acc, not empty).
func lostUpdate(ws, acc []*write, reads []*opCall) bool {
	n := int64(len(acc))
	var finals []finalValue
	for _, w := range acc {
		last := true
		for _, o := range acc {
			if o != w && appliedBefore(w, o) {
				last = false
			}
		}
		if last {
			finals = append(finals, finalValue{w.value, w.hasValue})
		}
	}
	if last := lastReads(acc, reads); len(last) > 0 {
		finals = nil
		for _, r := range last {
			v, ok := r.doneOp.Int()
			finals = append(finals, finalValue{v, ok})
		}
	}
	for _, w := range ws {
		if w.unknownW {
			finals = append(finals, finalValue{w.value, w.hasValue})
		}
	}
	lost := len(finals) > 0
	for _, f := range finals {
		if !f.known || f.v >= n {
			lost = false
		}
	}
	return lost
}

// lastReads returns the last ok read to return of those invoked after hi of
// every accepted write (when several return at that same time, any of them
// may have been last: each one's value counts).
func lastReads(acc []*write, reads []*opCall) []*opCall {
	var last []*opCall
	for _, r := range reads {
		afterAll := true
		for _, w := range acc {
			if r.call <= w.hi {
				afterAll = false
			}
		}
		switch {
		case !afterAll:
		case len(last) == 0 || r.ret > last[0].ret:
			last = []*opCall{r}
		case r.ret == last[0].ret:
			last = append(last, r)
		}
	}
	return last
}

// tokenGrant is a grant of a fencing token (§4.3): an acquire ok with a
// nonzero token, or a renew ok that handed out a new one.
type tokenGrant struct {
	key       string
	inv, done int
	token     uint64
}

// tokenGrants lists the grants of fencing tokens: each acquire ok with a
// nonzero token, and each renew ok (§3: of the grant it belongs to) whose
// nonzero token differs from the token its grant held before it (the
// grant's own, or that of the last renewal of it before it that handed out
// a new one).
func tokenGrants(x *parsed) []tokenGrant {
	var out []tokenGrant
	for _, g := range x.grants {
		held := g.token
		if held != 0 {
			out = append(out, tokenGrant{g.key, g.inv, g.done, held})
		}
		for _, c := range x.calls { // a process's renewals, in its order
			if c.f != history.FRenew || c.typ != history.OK || x.grantOf(c) != g {
				continue
			}
			if t := c.doneOp.Token; t != 0 && t != held {
				held = t
				out = append(out, tokenGrant{c.key, c.inv, c.done, t})
			}
		}
	}
	return out
}

// tokenAnomalies applies §4.3: among the grants of fencing tokens, two
// grants of one key with the same token are a token-reuse; a grant invoked
// after another grant of the key returned (in history order), with a lower
// token, a token-regression.
func tokenAnomalies(x *parsed) []string {
	var kinds []string
	gs := tokenGrants(x)
	for i, a := range gs {
		for j, b := range gs {
			if i == j || a.key != b.key {
				continue
			}
			if a.token == b.token {
				kinds = append(kinds, checker.TokenReuse)
			}
			if a.done < b.inv && b.token < a.token {
				kinds = append(kinds, checker.TokenRegression)
			}
		}
	}
	return kinds
}
