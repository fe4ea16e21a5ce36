package checker

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker/synth"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// This file holds the streaming margins to a reference that reads the
// whole history and the shared definitions (Analyze), pair by pair, as
// docs/history.md §4.8 states them.

// refMargins is the reference: the margins of h under drift d.
func refMargins(h history.History, d float64) []Margin {
	f := Analyze(h)
	byKey := map[string]*Margin{}
	get := func(k string) *Margin {
		if byKey[k] == nil {
			byKey[k] = &Margin{Key: k}
		}
		return byKey[k]
	}
	for i := range f.Grants {
		get(f.Grants[i].Key)
	}
	for i := range f.Writes {
		if f.Writes[i].Status == Accepted {
			get(f.Writes[i].Key)
		}
	}
	refLease(h, f, d, get)
	refWrite(f, get)
	refToken(f, get)
	out := []Margin{}
	for _, m := range byKey {
		out = append(out, *m)
	}
	slices.SortFunc(out, func(a, b Margin) int { return cmp.Compare(a.Key, b.Key) })
	return out
}

// refLease measures each grant a against its successor: the first grant
// of another process, in the order of the oks, that a is older than,
// while a is its process's latest grant of the key.
func refLease(h history.History, f *Facts, d float64, get func(string) *Margin) {
	done := completions(h)
	at := map[string][2]int{}
	for ai := range f.Grants {
		a := &f.Grants[ai]
		for bi := ai + 1; bi < len(f.Grants); bi++ {
			b := &f.Grants[bi]
			if b.Key != a.Key {
				continue
			}
			if b.Process == a.Process {
				break // a is no longer its process's latest grant
			}
			if !f.Older(ai, bi, d) {
				continue
			}
			m, ok := refPair(h, done, a, b, d)
			mg := get(a.Key)
			pos := [2]int{b.OK, a.OK}
			if ok && (mg.Lease == nil || m.Margin < mg.Lease.Margin || m.Margin == mg.Lease.Margin && cmpPair(pos, at[a.Key]) < 0) {
				mg.Lease, at[a.Key] = m, pos
			}
			break
		}
	}
}

// refPair walks the lock ops of a's process after a, invoked before b
// returned, that did not fail, up to its first release.
func refPair(h history.History, done []int, a, b *Grant, d float64) (*TimeMargin, bool) {
	floor, floorOp, floorLen := leaseEnd(a.Call, a.Lease, d), a.Invoke, a.Lease
	release, releaseOp, session := Forever, -1, a.Session
	for j := a.OK + 1; j < b.OK; j++ {
		x := &h[j]
		if x.Process != a.Process || x.Type != history.Invoke || x.Key != a.Key || !isLockOp(x.F) {
			continue
		}
		c := done[j]
		var ok history.Op
		switch {
		case c >= 0 && h[c].Type == history.Fail:
			continue
		case c >= 0 && h[c].Type == history.OK:
			ok = h[c]
		}
		if x.F == history.FRelease {
			release, releaseOp = x.Time, j
			break
		}
		lease := renewLease(x, &ok, a.Lease)
		if x.F == history.FAcquire {
			var s bool
			lease, s = grantLease(x, &ok)
			session = session || s
		}
		e := leaseEnd(x.Time, lease, d)
		if x.F == history.FRenew && ok.Type == history.OK && c < b.OK && ok.Time < floor || e < floor {
			floor, floorOp, floorLen = e, j, lease
		}
	}
	if session && a.Closed >= 0 && a.Closed < b.OK && a.ClosedAt < release {
		release, releaseOp = a.ClosedAt, a.Closed
	}
	end, setter := floor, floorOp
	if release < floor {
		end, setter = release, releaseOp
	}
	var m time.Duration
	switch {
	case b.Return < end && end == Forever:
		m = -Forever
	case b.Return < end:
		m = b.Return - end
	case floor <= release:
		m, setter = b.Return-floor, floorOp
	default:
		return nil, false
	}
	ops := []int{a.Invoke, a.OK}
	if setter >= 0 && setter != a.Invoke {
		ops = append(ops, setter)
	}
	return &TimeMargin{Margin: m, Lease: max(floorLen, 0), Ops: append(ops, b.OK)}, true
}

// completions maps each invoke's index to its completion's (-1: none).
func completions(h history.History) []int {
	out := make([]int, len(h))
	open := map[int]int{}
	for i := range h {
		out[i] = -1
		if h[i].IsNemesis() {
			continue
		}
		if h[i].Type == history.Invoke {
			open[h[i].Process] = i
		} else if inv, ok := open[h[i].Process]; ok {
			out[inv] = i
			delete(open, h[i].Process)
		}
	}
	return out
}

// refWrite measures each grant whose holder had a deadline (an until, or
// a lease-lost that ended its belief) against its last write.
func refWrite(f *Facts, get func(string) *Margin) {
	at := map[string]int{}
	for g := range f.Grants {
		gr, bl := &f.Grants[g], &f.Beliefs[g]
		deadline, endOp := max(bl.Until, bl.Start), -1
		switch {
		case bl.Reason == EndLeaseLost:
			deadline, endOp = bl.End, bl.EndOp
		case bl.Until == 0:
			continue
		}
		last := -1
		for w := range f.Writes {
			wr := &f.Writes[w]
			if wr.Grant == g && wr.Status != Rejected && (last < 0 || wr.Lo > f.Writes[last].Lo || wr.Lo == f.Writes[last].Lo && wr.Invoke > f.Writes[last].Invoke) {
				last = w
			}
		}
		if last < 0 {
			continue
		}
		lease := gr.Lease
		if n := len(gr.Renewals); n > 0 {
			lease = gr.Renewals[n-1].Lease
		}
		m := deadline - f.Writes[last].Lo
		ops := []int{gr.OK, f.Writes[last].Invoke}
		if endOp >= 0 {
			ops = append(ops, endOp)
		}
		mg := get(gr.Key)
		if mg.Write == nil || m < mg.Write.Margin || m == mg.Write.Margin && gr.OK < at[gr.Key] {
			mg.Write, at[gr.Key] = &TimeMargin{Margin: m, Lease: max(lease, 0), Ops: ops}, gr.OK
		}
	}
}

// refToken measures each grant of a token (§4.3) against the highest
// token of the accepted writes that returned before it was invoked.
func refToken(f *Facts, get func(string) *Margin) {
	measure := func(key string, invoke, ok int, token uint64) {
		best := -1
		for w := range f.Writes {
			wr := &f.Writes[w]
			if wr.Key == key && wr.Status == Accepted && wr.Token != 0 && wr.Done < invoke && (best < 0 || wr.Token > f.Writes[best].Token || wr.Token == f.Writes[best].Token && wr.Done < f.Writes[best].Done) {
				best = w
			}
		}
		if best < 0 {
			return
		}
		m := int64(token - f.Writes[best].Token)
		if mg := get(key); mg.Token == nil || m < mg.Token.Margin || m == mg.Token.Margin && ok < mg.Token.Ops[1] {
			mg.Token = &TokenMargin{Margin: m, Ops: []int{f.Writes[best].Done, ok}}
		}
	}
	for g := range f.Grants {
		gr := &f.Grants[g]
		held := gr.Token
		if held != 0 {
			measure(gr.Key, gr.Invoke, gr.OK, held)
		}
		for _, r := range gr.Renewals {
			if r.Token != 0 && r.Token != held {
				held = r.Token
				measure(gr.Key, r.Invoke, r.OK, held)
			}
		}
	}
}

// marginsAgree checks that the streaming margins of h are the reference's,
// and that a negative lease margin or a token margin of at most zero goes
// with an anomaly of its checker on that key.
func marginsAgree(t *testing.T, h history.History, d float64) {
	t.Helper()
	got, want := Margins(h, d), refMargins(h, d)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("streaming margins %s\nreference %s", marginText(got), marginText(want))
	}
	var lin, tok Result
	for _, m := range got {
		if m.Lease != nil && m.Lease.Margin < 0 {
			if lin.Name == "" {
				lin = (&LinearizabilityChecker{Drift: d}).Check(context.Background(), h)
			}
			// an early-grant, or an earlier culprit of its piece in its place
			if !slices.ContainsFunc(lin.Anomalies, func(a Anomaly) bool { return a.Key == m.Key }) {
				t.Errorf("key %s: lease margin %v, but linearizability found nothing: %s", m.Key, m.Lease.Margin, lin.Verdict)
			}
		}
		if m.Token != nil && m.Token.Margin <= 0 {
			if tok.Name == "" {
				tok = TokenChecker{}.Check(context.Background(), h)
			}
			if !slices.ContainsFunc(tok.Anomalies, func(a Anomaly) bool { return a.Key == m.Key }) {
				t.Errorf("key %s: token margin %d, but the fencing-token check found nothing", m.Key, m.Token.Margin)
			}
		}
	}
}

// TestMarginsAsReference holds the streaming margins to the reference on
// every well-formed history stored in the repository and on synthetic
// histories, valid and with each kind of anomaly planted, with and without
// drift.
func TestMarginsAsReference(t *testing.T) {
	for _, sh := range storedHistories(t) {
		t.Run(sh.name, func(t *testing.T) { marginsAgree(t, sh.h, DefaultDrift) })
	}
	for seed := uint64(0); seed < 24; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		opts := synth.Options{Workers: 1 + r.IntN(8), Keys: 1 + r.IntN(3), Ops: 2000, TTL: time.Duration(3+r.IntN(40)) * time.Millisecond,
			InfoRate: 0.04, Tokens: seed%2 == 0, Session: seed%3 == 1}
		h := synth.Generate(rand.New(rand.NewPCG(seed, 1)), opts)
		d := []float64{0, DefaultDrift, 0.2}[seed%3]
		t.Run(fmt.Sprintf("synth-%d", seed), func(t *testing.T) { marginsAgree(t, h, d) })
		for _, k := range synth.Kinds {
			bad, err := synth.Inject(rand.New(rand.NewPCG(seed, 2)), h, k)
			if err != nil {
				continue
			}
			t.Run(fmt.Sprintf("synth-%d-%s", seed, k), func(t *testing.T) { marginsAgree(t, bad, d) })
		}
	}
}

// FuzzMargins widens TestMarginsAsReference to any seed and shape of
// synthetic history, valid or with one anomaly planted.
func FuzzMargins(f *testing.F) {
	f.Add(uint64(1), uint8(3), uint8(2), uint8(20), uint8(0))
	f.Fuzz(func(t *testing.T, seed uint64, workers, keys, ttlMs, kind uint8) {
		opts := synth.Options{Workers: 1 + int(workers%10), Keys: 1 + int(keys%4), Ops: 800,
			TTL: time.Duration(3+int(ttlMs%60)) * time.Millisecond, InfoRate: 0.04, Tokens: seed%2 == 0, Session: seed%3 == 0}
		h := synth.Generate(rand.New(rand.NewPCG(seed, 1)), opts)
		marginsAgree(t, h, DefaultDrift)
		if bad, err := synth.Inject(rand.New(rand.NewPCG(seed, 2)), h, synth.Kinds[int(kind)%len(synth.Kinds)]); err == nil {
			marginsAgree(t, bad, DefaultDrift)
		}
	})
}
