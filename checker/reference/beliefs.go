package reference

import (
	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// belief is the half-open interval [start, end) during which a process
// believed it held a key (§3).
type belief struct {
	proc       int
	key        string
	start, end int64
}

// beliefOf computes g's belief literally: from g's return until the
// earliest of the invoke of the process's next release of the key, the
// invoke of its next lease-lost of the key, its crash, its next grant of the
// key and its until; never, when none of them exists.
func (x *parsed) beliefOf(g *grant) belief {
	b := belief{proc: g.proc, key: g.key, start: g.ret, end: never}
	end := func(t int64) {
		if t < b.end {
			b.end = t
		}
	}
	// the next release and lease-lost: the first invoked after the grant
	for _, f := range []string{history.FRelease, history.FLeaseLost} {
		for _, c := range x.calls {
			if c.proc == g.proc && c.key == g.key && c.f == f && c.inv > g.done {
				end(c.call)
				break
			}
		}
	}
	end(x.crashOf(g.proc))
	// the next grant of the key: a re-acquisition starts a new belief
	for _, g2 := range x.grants {
		if g2.proc == g.proc && g2.key == g.key && g2.inv > g.inv {
			end(g2.ret)
			break
		}
	}
	end(x.untilOf(g))
	return b
}

// untilOf is g's until: the grant's until (never when it has none), moved
// by each renew ok of the grant that carries an until and returns no later
// than the until in force when it returns; a renewal's until on a grant
// that had none sets one (it returns before never). Never when neither the
// grant nor a renewal of it gave one.
func (x *parsed) untilOf(g *grant) int64 {
	u := never
	if g.until != 0 {
		u = g.until
	}
	for _, c := range x.calls { // renew oks complete in invoke order within a process
		if c.f != history.FRenew || c.typ != history.OK || c.proc != g.proc || c.key != g.key || x.grantOf(c) != g {
			continue
		}
		if c.doneOp.Until != 0 && c.ret <= u {
			u = int64(c.doneOp.Until)
		}
	}
	return u
}

// doubleHolds reports a double-hold when two non-empty beliefs of different
// processes in the same key overlap.
func doubleHolds(x *parsed) []string {
	var bs []belief
	for _, g := range x.grants {
		if b := x.beliefOf(g); b.start < b.end {
			bs = append(bs, b)
		}
	}
	for i, a := range bs {
		for _, b := range bs[i+1:] {
			if a.key == b.key && a.proc != b.proc && a.start < b.end && b.start < a.end {
				return []string{checker.DoubleHold}
			}
		}
	}
	return nil
}
