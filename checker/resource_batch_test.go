package checker

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// This file keeps the resource check as it was before it read its history
// as a stream; TestResourceStreamAsBatch and FuzzResourceStream hold the
// streaming check to it.

// orderedWrite is an accepted write with its proved bounds.
type orderedWrite struct {
	w     *Write
	hi    time.Duration
	after time.Duration
}

// batchResource is the resource check as it was before it read its history
// as a stream: it reads the writes and reads the shared definitions found
// (Analyze) and judges each key at once.
func batchResource(ctx context.Context, h history.History, f *Facts, drift float64) Result {
	c := ResourceChecker{Drift: drift}
	start := time.Now()
	type keyLog struct {
		writes []*Write
		reads  []*Read
	}
	logs := map[string]*keyLog{}
	var keys []string
	get := func(k string) *keyLog {
		l := logs[k]
		if l == nil {
			l = &keyLog{}
			logs[k] = l
			keys = append(keys, k)
		}
		return l
	}
	for i := range f.Writes {
		if f.Writes[i].Status != Rejected {
			get(f.Writes[i].Key).writes = append(get(f.Writes[i].Key).writes, &f.Writes[i])
		}
	}
	for i := range f.Reads {
		if l := logs[f.Reads[i].Key]; l != nil {
			l.reads = append(l.reads, &f.Reads[i])
		}
	}
	slices.Sort(keys)
	var anomalies []Anomaly
	for _, key := range keys {
		if ctx.Err() != nil {
			return Result{Name: c.Name(), Verdict: Unknown, Elapsed: time.Since(start), Anomalies: []Anomaly{}, Note: stopNote(ctx)}
		}
		l := logs[key]
		ws := provedBounds(l.writes, l.reads)
		anomalies = append(anomalies, staleWrites(h, f, key, ws, c.Drift)...)
		if a, ok := lostUpdate(h, key, ws, l.writes, l.reads); ok {
			anomalies = append(anomalies, a)
		}
	}
	return finish(c.Name(), start, anomalies, "")
}

// provedBounds returns the key's accepted writes with hi and after
// tightened by the reads of values unique to one write. A read is evidence
// only when it agrees with time: no accepted write was applied, by time
// alone, after the write whose value it returned and before the read was
// invoked (a register that served such a read was not linearizable, and its
// reads prove nothing).
func provedBounds(writes []*Write, reads []*Read) []orderedWrite {
	writer := map[int64]int{} // value -> index in writes, -1 when not unique
	for i, w := range writes {
		if !w.HasValue || w.Value == 0 {
			continue
		}
		if _, seen := writer[w.Value]; seen {
			writer[w.Value] = -1
		} else {
			writer[w.Value] = i
		}
	}
	// accepted writes by Lo, with the smallest Hi from each on: a read of w
	// invoked at c contradicts time when some write with Lo > w.Hi has
	// Hi < c.
	var byLo []*Write
	for _, w := range writes {
		if w.Status == Accepted {
			byLo = append(byLo, w)
		}
	}
	slices.SortFunc(byLo, func(a, b *Write) int { return cmp.Compare(a.Lo, b.Lo) })
	minHiFrom := make([]time.Duration, len(byLo)+1)
	minHiFrom[len(byLo)] = Forever
	for i := len(byLo) - 1; i >= 0; i-- {
		minHiFrom[i] = min(minHiFrom[i+1], byLo[i].Hi)
	}
	agrees := func(w *Write, r *Read) bool {
		i, _ := slices.BinarySearchFunc(byLo, w.Hi+1, func(x *Write, t time.Duration) int { return cmp.Compare(x.Lo, t) })
		return minHiFrom[i] >= r.Call
	}
	hi := make([]time.Duration, len(writes))
	after := make([]time.Duration, len(writes))
	for i, w := range writes {
		hi[i], after[i] = w.Hi, w.Lo
	}
	for _, r := range reads {
		if !r.HasValue {
			continue
		}
		if i, ok := writer[r.Value]; ok && i >= 0 && agrees(writes[i], r) {
			hi[i] = min(hi[i], r.Return)
			after[i] = max(after[i], r.Call)
		}
	}
	var out []orderedWrite
	for i, w := range writes {
		if w.Status == Accepted {
			out = append(out, orderedWrite{w: w, hi: hi[i], after: after[i]})
		}
	}
	return out
}

// staleWrites finds, for each accepted write, a write of a newer grant
// (lease order, Facts.Older) that was provably applied before it: a sweep
// over the writes by hi, answering the writes by after, keeping the
// latest-invoked grant seen so far (newer than every grant that returned
// before it was invoked); a grant whose acquire overlapped the old write's
// is newer only by the lease model, so those are asked one by one. Each
// stale write is reported once; the stale writes of one grant follow from
// that one stale lease and are grouped behind its first (docs/history.md
// §4.2).
func staleWrites(h history.History, f *Facts, key string, ws []orderedWrite, d float64) []Anomaly {
	byHi := make([]int, 0, len(ws))
	byAfter := make([]int, 0, len(ws))
	first := map[int]int{} // grant -> its write in ws with the smallest hi
	for i := range ws {
		g := ws[i].w.Grant
		if g < 0 {
			continue
		}
		byHi = append(byHi, i)
		byAfter = append(byAfter, i)
		if j, ok := first[g]; !ok || ws[i].hi < ws[j].hi {
			first[g] = i
		}
	}
	overlap := overlapping(f, first)
	slices.SortFunc(byHi, func(a, b int) int { return cmp.Or(cmp.Compare(ws[a].hi, ws[b].hi), cmp.Compare(a, b)) })
	slices.SortFunc(byAfter, func(a, b int) int { return cmp.Or(cmp.Compare(ws[a].after, ws[b].after), cmp.Compare(a, b)) })
	var out []Anomaly
	group := map[int]int{} // the stale grant -> its anomaly in out
	next, newest := 0, -1  // newest: the write before with the latest-invoked grant
	for _, o := range byAfter {
		old := &ws[o]
		for next < len(byHi) && ws[byHi[next]].hi < old.after {
			n := byHi[next]
			if newest < 0 || f.Grants[ws[n].w.Grant].Invoke > f.Grants[ws[newest].w.Grant].Invoke {
				newest = n
			}
			next++
		}
		a := old.w.Grant
		nw := -1
		if newest >= 0 && f.Older(a, ws[newest].w.Grant, d) {
			nw = newest
		} else {
			best := -1
			for _, b := range overlap[a] {
				if ws[first[b]].hi < old.after && f.Older(a, b, d) && (best < 0 || f.Grants[b].Invoke > f.Grants[best].Invoke) {
					best = b
				}
			}
			if best >= 0 {
				nw = first[best]
			}
		}
		if nw < 0 {
			continue
		}
		out = followCause(out, group, a, staleWrite(h, f, key, old.w, ws[nw].w, d))
	}
	return out
}

// staleWrite describes the stale write old, applied after nw, whose grant
// is newer.
func staleWrite(h history.History, f *Facts, key string, old, nw *Write, d float64) Anomaly {
	og, ng := &f.Grants[old.Grant], &f.Grants[nw.Grant]
	msg := fmt.Sprintf("%s wrote %s %s with the lease it took at %s, after %s (lease from %s, asked at %s) had written %s",
		worker(h[old.Done]), key, appliedText(old), secs(og.Return), worker(h[nw.Done]), secs(ng.Return), secs(ng.Call), appliedText(nw))
	if og.OK > ng.Invoke {
		// the acquires overlapped: the lease model orders them
		msg += fmt.Sprintf("; %s's lease could not have ended before %s, after %s's grant returned at %s, so %s's grant came first",
			worker(h[nw.Done]), secs(f.HoldEnd(nw.Grant, og.OK, d)), worker(h[old.Done]), secs(og.Return), worker(h[old.Done]))
	}
	return Anomaly{Kind: StaleWrite, Key: key, Ops: []int{old.Done, nw.Done, og.OK, ng.OK}, Message: msg}
}

// overlapping lists, for each grant of grants (a set of grant indexes of
// one key), the others of the set whose acquires overlapped its own:
// neither returned before the other was invoked.
func overlapping(f *Facts, grants map[int]int) map[int][]int {
	ids := make([]int, 0, len(grants))
	for g := range grants {
		ids = append(ids, g)
	}
	slices.SortFunc(ids, func(a, b int) int { return cmp.Compare(f.Grants[a].Invoke, f.Grants[b].Invoke) })
	out := map[int][]int{}
	var active []int // grants invoked so far that had not returned by the current invoke
	for _, g := range ids {
		inv := f.Grants[g].Invoke
		active = slices.DeleteFunc(active, func(a int) bool { return f.Grants[a].OK < inv })
		for _, a := range active {
			out[a] = append(out[a], g)
			out[g] = append(out[g], a)
		}
		active = append(active, g)
	}
	return out
}

// appliedText says when a write took effect, as applyText does.
func appliedText(w *Write) string { return applyText(w.Lo, w.Hi, w.Exact) }

func lostUpdate(h history.History, key string, ws []orderedWrite, all []*Write, reads []*Read) (Anomaly, bool) {
	n := int64(len(ws))
	if n == 0 {
		return Anomaly{}, false
	}
	// the two largest afters, to find for each write the largest other one
	top1, top2 := time.Duration(math.MinInt64), time.Duration(math.MinInt64)
	top1i := -1
	maxHi := time.Duration(math.MinInt64)
	for i := range ws {
		a := ws[i].after
		if a > top1 {
			top2, top1, top1i = top1, a, i
		} else if a > top2 {
			top2 = a
		}
		maxHi = max(maxHi, ws[i].hi)
	}
	best, bestOp, how := int64(math.MinInt64), -1, ""
	consider := func(v int64, op int, text string) {
		if v > best {
			best, bestOp, how = v, op, text
		}
	}
	// the ok reads invoked after every accepted write was applied; the
	// last of them to return (all of them, on a tie) give the final value
	var last time.Duration = math.MinInt64
	var finals []*Read
	for _, r := range reads {
		if r.Call <= maxHi {
			continue
		}
		switch {
		case r.Return > last:
			last, finals = r.Return, append(finals[:0], r)
		case r.Return == last:
			finals = append(finals, r)
		}
	}
	if len(finals) > 0 {
		for _, r := range finals {
			if !r.HasValue {
				return Anomaly{}, false // the final value is not known
			}
			consider(r.Value, r.Done, fmt.Sprintf("%s read %d at %s, after every accepted write", worker(h[r.Done]), r.Value, secs(r.Return)))
		}
	} else {
		for i := range ws {
			other := top1
			if i == top1i {
				other = top2
			}
			if ws[i].hi < other {
				continue // another accepted write was provably applied after it
			}
			w := ws[i].w
			if !w.HasValue {
				return Anomaly{}, false
			}
			consider(w.Value, w.Done, fmt.Sprintf("%s's write of %d, applied %s, may have been the last", worker(h[w.Done]), w.Value, appliedText(w)))
		}
	}
	for _, w := range all {
		if w.Status != UnknownOutcome {
			continue
		}
		if !w.HasValue {
			return Anomaly{}, false
		}
		consider(w.Value, w.Invoke, fmt.Sprintf("%s's write of %d, of unknown outcome, may have been applied last", worker(h[w.Invoke]), w.Value))
	}
	if best >= n || bestOp < 0 {
		return Anomaly{}, false
	}
	return Anomaly{Kind: LostUpdate, Key: key, Ops: []int{bestOp},
		Message: fmt.Sprintf("%s ended at %d at most after %d acknowledged increments (%s)", key, best, n, how)}, true
}
