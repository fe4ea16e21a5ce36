package synth

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker/anomaly"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// Kinds lists the anomaly kinds (package anomaly) Inject can plant.
var Kinds = []string{anomaly.DoubleHold, anomaly.EarlyGrant, anomaly.ForeignRelease, anomaly.StaleWrite, anomaly.LostUpdate, anomaly.TokenReuse, anomaly.TokenRegression}

// Inject returns a copy of h (a history from Generate) with one violation of
// the given anomaly kind planted at a place chosen with rng; h itself is not
// modified. The result stays well-formed. What is planted:
//   - double-hold, early-grant: one lock cycle of a process on another key
//     (acquire to release, with its reads and writes) is moved onto a key
//     that another process holds at that moment, well inside its lease;
//   - foreign-release: one successful release is moved onto a key the
//     releasing process does not hold;
//   - stale-write: the process of a write accepted from an older lease
//     stalls in that write, as a paused holder would: its completion moves
//     to the end of the history, applied then (after a later write from a
//     newer lease), and the process's later ops are left out;
//   - lost-update: the last accepted write of a key, every later read and
//     every unknown write of that key end at 0;
//   - token-reuse: an acquisition gets the token of the acquisition before
//     it; token-regression: an acquisition that began after another had
//     finished gets a token one below that one's.
//
// It returns ErrNoSpot when h offers no place (for instance a single key for
// double-hold, or no tokens for the token kinds).
func Inject(rng *rand.Rand, h history.History, kind string) (history.History, error) {
	out := slices.Clone(h)
	var err error
	switch kind {
	case anomaly.DoubleHold, anomaly.EarlyGrant:
		err = injectOverlap(rng, out)
	case anomaly.ForeignRelease:
		err = injectForeignRelease(rng, out)
	case anomaly.StaleWrite:
		out, err = injectStaleWrite(rng, out)
	case anomaly.LostUpdate:
		err = injectLostUpdate(rng, out)
	case anomaly.TokenReuse, anomaly.TokenRegression:
		err = injectToken(rng, out, kind == anomaly.TokenReuse)
	default:
		return nil, fmt.Errorf("synth: cannot inject %q", kind)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// cycle is one lock cycle of a process: its acquire invoke to the
// completion of its release (or its last op before the next acquire).
type cycle struct {
	key           string
	p             int
	invoke, ok    int
	release, last int // release invoke (-1 if none) and the cycle's last op
}

func cycles(h history.History) []cycle {
	var out []cycle
	open := map[int]*cycle{}
	var pending = map[int]int{}
	for i, op := range h {
		if op.IsNemesis() {
			continue
		}
		if op.Type == history.Invoke {
			pending[op.Process] = i
			if c := open[op.Process]; c != nil {
				if op.F == history.FAcquire {
					out = append(out, *c)
					delete(open, op.Process)
				} else if op.F == history.FRelease && op.Key == c.key {
					c.release = i
				}
			}
			continue
		}
		if op.F == history.FAcquire && op.Type == history.OK {
			open[op.Process] = &cycle{key: op.Key, p: op.Process, invoke: pending[op.Process], ok: i, release: -1, last: i}
			continue
		}
		if c := open[op.Process]; c != nil {
			c.last = i
			if op.Type == history.Info {
				out = append(out, *c)
				delete(open, op.Process)
			}
		}
	}
	for _, c := range open {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b cycle) int { return a.ok - b.ok })
	return out
}

func pick[T any](rng *rand.Rand, xs []T) T { return xs[rng.IntN(len(xs))] }

func injectOverlap(rng *rand.Rand, h history.History) error {
	cs := cycles(h)
	type pair struct{ holder, mover cycle }
	var pairs []pair
	for _, a := range cs {
		if a.release < 0 {
			continue
		}
		end := h[a.release].Time
		if u := h[a.ok].Until; u != 0 {
			end = min(end, u)
		}
		for _, b := range cs {
			if b.key == a.key || b.p == a.p || b.invoke <= a.ok {
				continue
			}
			if h[b.ok].Time >= end {
				break
			}
			// the mover asks for the lock after a got it and gets it while a
			// still holds it
			if h[b.invoke].Time > h[a.ok].Time {
				pairs = append(pairs, pair{a, b})
			}
		}
	}
	if len(pairs) == 0 {
		return ErrNoSpot
	}
	pr := pick(rng, pairs)
	for i := pr.mover.invoke; i <= pr.mover.last; i++ {
		if h[i].Process == pr.mover.p {
			h[i].Key = pr.holder.key
		}
	}
	return nil
}

func injectForeignRelease(rng *rand.Rand, h history.History) error {
	var keys []string
	seen := map[string]bool{}
	for _, op := range h {
		if op.Key != "" && !seen[op.Key] {
			seen[op.Key] = true
			keys = append(keys, op.Key)
		}
	}
	slices.Sort(keys)
	if len(keys) < 2 {
		return ErrNoSpot
	}
	spot := map[int]cycle{} // release invoke -> its cycle
	for _, c := range cycles(h) {
		if c.release >= 0 && c.last > c.release && h[c.last].F == history.FRelease && h[c.last].Type == history.OK {
			spot[c.release] = c
		}
	}
	// A process may hold a key from its acquire ok until its release ok of
	// it (a failed release leaves it a possible holder); the release is
	// moved to a key its process surely does not hold.
	type target struct {
		c   cycle
		key string
	}
	var targets []target
	mayHold := map[[2]any]bool{}
	for i, op := range h {
		if c, ok := spot[i]; ok {
			for _, k := range keys {
				if k != c.key && !mayHold[[2]any{op.Process, k}] {
					targets = append(targets, target{c, k})
				}
			}
		}
		switch {
		case op.F == history.FAcquire && op.Type == history.OK:
			mayHold[[2]any{op.Process, op.Key}] = true
		case op.F == history.FRelease && op.Type == history.OK:
			delete(mayHold, [2]any{op.Process, op.Key})
		}
	}
	if len(targets) == 0 {
		return ErrNoSpot
	}
	t := pick(rng, targets)
	h[t.c.release].Key = t.key
	h[t.c.last].Key = t.key
	return nil
}

type acceptedWrite struct{ done, lease int }

func injectStaleWrite(rng *rand.Rand, h history.History) (history.History, error) {
	lease := map[[2]any]int{}
	perKey := map[string][]acceptedWrite{}
	for i, op := range h {
		if op.F == history.FAcquire && op.Type == history.OK {
			lease[[2]any{op.Process, op.Key}] = i
		}
		if op.F == history.FWrite && op.Type == history.OK {
			if l, ok := lease[[2]any{op.Process, op.Key}]; ok {
				perKey[op.Key] = append(perKey[op.Key], acceptedWrite{i, l})
			}
		}
	}
	// A stale write needs a newer grant's write that stays in the history:
	// the stalled process's later ops are left out, so the newer write
	// must be another process's.
	type pair struct{ old, new acceptedWrite }
	pairs := map[string][]pair{}
	for k, ws := range perKey {
		for _, o := range ws {
			for _, n := range ws {
				if o.lease < n.lease && h[o.done].Process != h[n.done].Process {
					pairs[k] = append(pairs[k], pair{o, n})
				}
			}
		}
	}
	var keys []string
	for k := range pairs {
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, ErrNoSpot
	}
	slices.Sort(keys)
	w := pick(rng, pairs[pick(rng, keys)]).old
	// The write's applied time stays within its own window (docs/
	// history.md §2): the write is still outstanding when it lands.
	stalled, p := h[w.done], h[w.done].Process
	out := make(history.History, 0, len(h))
	for k, op := range h {
		if k >= w.done && op.Process == p {
			continue
		}
		out = append(out, op)
	}
	stalled.Time = out[len(out)-1].Time + time.Microsecond
	stalled.Applied = stalled.Time
	out = append(out, stalled)
	for k := range out {
		out[k].Index = k
	}
	return out, nil
}

func injectLostUpdate(rng *rand.Rand, h history.History) error {
	lastWrite := map[string]int{}
	for i, op := range h {
		if op.F == history.FWrite && op.Type == history.OK {
			if j, ok := lastWrite[op.Key]; !ok || op.Applied >= h[j].Applied {
				lastWrite[op.Key] = i
			}
		}
	}
	var keys []string
	for k, i := range lastWrite {
		if v, ok := h[i].Int(); ok && v > 0 {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return ErrNoSpot
	}
	slices.Sort(keys)
	k := pick(rng, keys)
	w := lastWrite[k]
	zero := history.IntValue(0)
	pending := map[int]int{}
	for i := range h {
		op := &h[i]
		if op.IsNemesis() {
			continue
		}
		if op.Type == history.Invoke {
			pending[op.Process] = i
		}
		if op.Key != k {
			continue
		}
		switch {
		case i == w:
			op.Value = zero
			h[pending[op.Process]].Value = zero
		case op.F == history.FRead && op.Type == history.OK && i > w:
			op.Value = zero
		case op.F == history.FWrite && op.Type == history.Info:
			op.Value = zero
			h[pending[op.Process]].Value = zero
		}
		if op.Type != history.Invoke {
			delete(pending, op.Process)
		}
	}
	for _, i := range pending {
		if h[i].F == history.FWrite && h[i].Key == k {
			h[i].Value = zero
		}
	}
	return nil
}

func injectToken(rng *rand.Rand, h history.History, reuse bool) error {
	type acq struct{ invoke, ok int }
	perKey := map[string][]acq{}
	pending := map[int]int{}
	for i, op := range h {
		if op.F != history.FAcquire || op.IsNemesis() {
			continue
		}
		if op.Type == history.Invoke {
			pending[op.Process] = i
		} else if op.Type == history.OK && op.Token != 0 {
			perKey[op.Key] = append(perKey[op.Key], acq{pending[op.Process], i})
		}
	}
	type pair struct{ a, b acq }
	var pairs []pair
	for _, as := range perKey {
		for j := 1; j < len(as); j++ {
			a, b := as[j-1], as[j]
			if reuse || (h[a.ok].Time < h[b.invoke].Time && h[a.ok].Token >= 2) {
				pairs = append(pairs, pair{a, b})
			}
		}
	}
	if len(pairs) == 0 {
		return ErrNoSpot
	}
	slices.SortFunc(pairs, func(x, y pair) int { return x.b.ok - y.b.ok })
	p := pick(rng, pairs)
	if reuse {
		h[p.b.ok].Token = h[p.a.ok].Token
	} else {
		h[p.b.ok].Token = h[p.a.ok].Token - 1
	}
	return nil
}

// WriteFile generates a history with rng and opts, writes it to path as
// JSON Lines and returns its number of ops. It streams: however long the
// history, it holds none of it.
func WriteFile(path string, rng *rand.Rand, opts Options) (int, error) {
	w, err := history.CreateFile(path)
	if err != nil {
		return 0, fmt.Errorf("synth: %w", err)
	}
	n := 0
	var werr error
	Stream(rng, opts, func(op history.Op) {
		if werr == nil {
			werr = w.Append(op)
			n++
		}
	})
	if err := w.Close(); werr == nil {
		werr = err
	}
	if werr != nil {
		return n, fmt.Errorf("synth: %w", werr)
	}
	return n, nil
}

// Write writes h to path as JSON Lines.
func Write(path string, h history.History) error {
	w, err := history.CreateFile(path)
	if err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	for _, op := range h {
		if err := w.Append(op); err != nil {
			w.Close()
			return fmt.Errorf("synth: %w", err)
		}
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	return nil
}
