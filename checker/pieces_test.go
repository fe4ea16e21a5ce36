package checker

import (
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker/synth"
	"github.com/jepsen-lite/jepsen-lite/history"
	"github.com/jepsen-lite/jepsen-lite/history/jepsen"
)

// This file keeps the linearizability check's cutting as it was before the
// check read its history as a stream: every lock op collected first, each
// key's cut at once. TestStreamCutsAsBatch holds the streaming check to it.

// splitPieces collects each key's lock ops of the whole history h and cuts
// them at quiescent points (cutKey).
func splitPieces(h history.History, drift float64) []piece {
	pp := scanProcs(h)
	perKey, keys := collectLockOps(h, &pp, drift)
	slices.Sort(keys)
	var pieces []piece
	for _, key := range keys {
		ops := perKey[key]
		slices.SortFunc(ops, func(a, b *lockOp) int { return cmp.Compare(a.invoke, b.invoke) })
		pieces = cutKey(pieces, key, ops)
	}
	return pieces
}

// pieceProcs is what splitPieces knows of the processes of a history
// before it collects the lock ops: their dense ids (ids, by op), the
// crash and the client close of each (open when none), and the number of
// lock ops.
type pieceProcs struct {
	ids                              []int32
	count                            int
	crash, crashIdx, freed, freedIdx []int64
	lockOps                          int
}

// endsOf returns the crash and client close of the process of dense id id.
func (pp *pieceProcs) endsOf(id int32) ends {
	return ends{pp.crash[id], pp.crashIdx[id], pp.freed[id], pp.freedIdx[id]}
}

// scanProcs numbers the processes of h densely, so the per-op work of
// splitPieces indexes slices instead of hashing, and finds each one's
// crash and client close and the number of lock ops.
func scanProcs(h history.History) pieceProcs {
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
	pp := pieceProcs{ids: ids, count: len(procs), crash: make([]int64, len(procs)), crashIdx: make([]int64, len(procs)),
		freed: make([]int64, len(procs)), freedIdx: make([]int64, len(procs))}
	for i := range pp.crash {
		pp.crash[i], pp.crashIdx[i], pp.freed[i], pp.freedIdx[i] = open, open, open, open
	}
	// A kept crash leaves the client open: its sessions end at the next
	// crash of the same worker that closes the client (docs/history.md §1).
	keptOpen := map[int][]int32{} // by client: processes whose client lives on
	for i := range h {
		op := &h[i]
		if op.IsNemesis() {
			continue
		}
		if op.Type == history.Info && pp.crash[ids[i]] == open {
			id := ids[i]
			pp.crash[id], pp.crashIdx[id] = int64(op.Time), int64(i)
			if op.Kept {
				keptOpen[op.Client] = append(keptOpen[op.Client], id)
			} else {
				pp.freed[id], pp.freedIdx[id] = int64(op.Time), int64(i)
				for _, k := range keptOpen[op.Client] {
					pp.freed[k], pp.freedIdx[k] = int64(op.Time), int64(i)
				}
				delete(keptOpen, op.Client)
			}
		}
		if op.Type != history.Invoke && op.Type != history.Fail && (op.F == history.FAcquire || op.F == history.FRenew || op.F == history.FRelease) {
			pp.lockOps++
		}
	}
	return pp
}

// collectLockOps returns the lock ops of h by key, and the keys in the
// order of their first lock op.
func collectLockOps(h history.History, pp *pieceProcs, drift float64) (map[string][]*lockOp, []string) {
	slab := make([]lockOp, 0, pp.lockOps+pp.count) // one allocation for all lock ops
	pending := make([]int, pp.count)
	for i := range pending {
		pending[i] = -1
	}
	latestLease := map[procKey]int64{} // each process's latest grant's lease per key
	perKey := map[string][]*lockOp{}
	var keys []string
	add := func(key string, lo lockOp) {
		slab = append(slab, lo)
		if _, seen := perKey[key]; !seen {
			keys = append(keys, key)
		}
		perKey[key] = append(perKey[key], &slab[len(slab)-1])
	}
	for i := range h {
		op := &h[i]
		if op.IsNemesis() {
			continue
		}
		id := pp.ids[i]
		if op.Type == history.Invoke {
			pending[id] = i
			continue
		}
		inv := pending[id]
		pending[id] = -1
		if inv < 0 || op.Type == history.Fail {
			continue
		}
		if lo, ok := newLockOp(h, inv, i, pp.endsOf(id), drift, latestLease); ok {
			add(h[inv].Key, lo)
		}
	}
	for id, inv := range pending {
		if inv >= 0 {
			if lo, ok := newLockOp(h, inv, -1, pp.endsOf(int32(id)), drift, latestLease); ok {
				add(h[inv].Key, lo)
			}
		}
	}
	return perKey, keys
}

// newLockOp describes the lock op invoked at op inv and completed at op done
// (-1: never), or reports that it is none (a read, a write). A grant records its process's lease in latestLease, for the
// renewals after it.
func newLockOp(h history.History, inv, done int, e ends, drift float64, latestLease map[procKey]int64) (lockOp, bool) {
	var out history.Op // the completion; zero when there is none
	if done >= 0 {
		out = h[done]
	}
	in := &h[inv]
	pk := procKey{in.Process, in.Key}
	lo, ok := lockOpOf(in, &out, inv, done, e, drift, time.Duration(latestLease[pk]))
	if ok && lo.kind == kindGrant && !lo.isOpen() {
		latestLease[pk] = int64(lo.asked)
	}
	return lo, ok
}

// batchLinearizability is the linearizability check as it was before it
// read its history as a stream: every piece cut first (splitPieces), then
// each decided, the first failing one drawn after the piece before it.
func batchLinearizability(ctx context.Context, c *LinearizabilityChecker, h history.History) Result {
	start := time.Now()
	drift := c.Drift
	if drift < 0 || drift >= 1 {
		drift = 0
	}
	pieces := splitPieces(h, drift)
	var anomalies []Anomaly
	unknown, firstBad := 0, -1
	bad := map[chainID]bool{} // a chain reports its first culprit only
	for i, p := range pieces {
		r := checkPiece(ctx, p, false)
		switch {
		case len(r.anomalies) > 0:
			if bad[chainID{p.key, p.chain}] {
				continue
			}
			bad[chainID{p.key, p.chain}] = true
			anomalies = append(anomalies, r.anomalies...)
			if firstBad < 0 || p.ops[0].invoke < pieces[firstBad].ops[0].invoke {
				firstBad = i
			}
		case r.verdict != Valid:
			unknown++
		}
	}
	note := ""
	if firstBad >= 0 && c.OutDir != "" {
		p := pieces[firstBad]
		if firstBad > 0 && pieces[firstBad-1].key == p.key && p.held == nil {
			p = piece{key: p.key, ops: append(slices.Clip(pieces[firstBad-1].ops), p.ops...)}
		}
		var nemesis []history.Op
		for _, op := range h {
			if op.IsNemesis() {
				nemesis = append(nemesis, op)
			}
		}
		if err := c.visualize(ctx, nemesis, p); err != nil {
			note = "could not write " + VisualizationFile + ": " + err.Error()
		} else {
			note = fmt.Sprintf("%s shows key %s, ops %d to %d", filepath.Join(c.OutDir, VisualizationFile), p.key, p.ops[0].invoke, p.ops[len(p.ops)-1].index())
		}
	}
	r := finish(c.Name(), start, anomalies, note)
	if r.Verdict == Valid && unknown > 0 {
		r.Verdict = Unknown
		r.Note = fmt.Sprintf("%d of %d pieces could not be decided in time", unknown, len(pieces))
	}
	return r
}

// pieceText renders a piece with every field of its ops that a decision
// reads, so that two cuttings can be compared. A crash or client close
// after every op of the piece reads as none: a decision compares them only
// with the indexes of the piece's ops (lockOp.sync), and the stream does
// not know them yet when it decides.
func pieceText(p piece) string {
	last := int64(0)
	for _, o := range p.ops {
		last = max(last, int64(o.invoke), int64(o.done))
	}
	s := fmt.Sprintf("%s seq=%v:", p.key, p.seq)
	for _, o := range p.ops {
		crash, crashIdx, freed, freedIdx := o.crash, o.crashIdx, o.freed, o.freedIdx
		if crashIdx > last {
			crash, crashIdx = open, open
		}
		if freedIdx > last {
			freed, freedIdx = open, open
		}
		s += fmt.Sprintf(" {%d %d %d %d %d %d %d %v %d %d %d %d %d %d %d %v}", o.kind, o.proc, o.client, o.call, o.ret, o.lease, o.asked,
			o.session, crash, freed, freedIdx, o.invoke, o.done, o.retIdx, crashIdx, o.fromCall)
	}
	return s
}

// streamAgrees checks that the streaming check of h cuts the pieces
// splitPieces cuts (as a set: the stream emits them as they close) and
// gives the batch check's result, visualization note included.
func streamAgrees(t *testing.T, h history.History, drift float64) {
	t.Helper()
	dir := t.TempDir()
	c := &LinearizabilityChecker{Drift: drift, OutDir: dir}
	var got []string
	ls := c.newStream(context.Background())
	ls.observe = func(p piece) {
		for _, o := range p.ops {
			o.sync()
		}
		got = append(got, pieceText(p))
	}
	feedHoldsFirst(h, followHistory(h), ls.add, ls.hold)
	res := ls.result()
	var want []string
	for _, p := range splitPieces(h, drift) {
		want = append(want, pieceText(p))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Fatalf("%d pieces streamed, %d cut in one go; first difference:\nstream %s\nbatch  %s", len(got), len(want), got[i], want[i])
			}
		}
		t.Fatalf("%d pieces streamed, %d cut in one go", len(got), len(want))
	}
	ref := batchLinearizability(context.Background(), c, h)
	res.Elapsed, ref.Elapsed = 0, 0
	if !reflect.DeepEqual(res, ref) {
		t.Fatalf("streaming check %+v, batch check %+v", res, ref)
	}
}

// TestStreamCutsAsBatch holds the streaming linearizability check to the
// batch one on every well-formed history stored in the repository and on
// synthetic histories, valid and with each kind of anomaly planted.
func TestStreamCutsAsBatch(t *testing.T) {
	for _, sh := range storedHistories(t) {
		t.Run(sh.name, func(t *testing.T) { streamAgrees(t, sh.h, DefaultDrift) })
	}
	for seed := uint64(0); seed < 24; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		opts := synth.Options{Workers: 1 + r.IntN(8), Keys: 1 + r.IntN(3), Ops: 2000, TTL: time.Duration(3+r.IntN(40)) * time.Millisecond,
			InfoRate: 0.04, Tokens: seed%2 == 0, Session: seed%3 == 1}
		h := synth.Generate(rand.New(rand.NewPCG(seed, 1)), opts)
		t.Run(fmt.Sprintf("synth-%d", seed), func(t *testing.T) { streamAgrees(t, h, DefaultDrift) })
		for _, k := range synth.Kinds {
			bad, err := synth.Inject(rand.New(rand.NewPCG(seed, 2)), h, k)
			if err != nil {
				continue
			}
			t.Run(fmt.Sprintf("synth-%d-%s", seed, k), func(t *testing.T) { streamAgrees(t, bad, 0) })
		}
	}
}

// storedHistory is a well-formed history stored in the repository, by the
// name of its file (and, for a Jepsen history, the ttl it was read with).
type storedHistory struct {
	name string
	h    history.History
}

// storedHistories reads every well-formed history stored in the
// repository: each history file, and each Jepsen history converted with a
// ttl of 5 s and with none (every grant a session lock).
func storedHistories(t *testing.T) []storedHistory {
	t.Helper()
	var out []storedHistory
	for _, path := range repoHistories(t) {
		h, _, err := history.ReadFile(path)
		if err != nil || history.Validate(h) != nil {
			continue
		}
		out = append(out, storedHistory{filepath.ToSlash(path), h})
	}
	edn, err := filepath.Glob("../history/jepsen/testdata/*.edn")
	if err != nil || len(edn) == 0 {
		t.Fatalf("no Jepsen histories: %v", err)
	}
	for _, path := range edn {
		for _, ttl := range []time.Duration{5 * time.Second, 0} {
			h, err := jepsen.ReadFile(path, jepsen.Options{TTL: ttl})
			if err != nil || history.Validate(h) != nil {
				continue
			}
			out = append(out, storedHistory{fmt.Sprintf("%s-ttl-%v", filepath.ToSlash(path), ttl), h})
		}
	}
	return out
}

// repoHistories lists every history file (*.jsonl but a fault schedule)
// stored in the repository. The directories that .gitignore leaves out
// (a run's build outputs and stores, which may hold an hour's soak) are
// not the repository's and are not walked.
func repoHistories(t *testing.T) []string {
	t.Helper()
	unsaved := map[string]bool{"../bin": true, "../build": true, "../store": true}
	var files []string
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != ".." || unsaved[filepath.ToSlash(path)]) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".jsonl") && d.Name() != "nemesis.jsonl" {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 100 {
		t.Fatalf("found %d saved histories, want the repository's (over 100)", len(files))
	}
	return files
}

// TestStreamPieceNeverCloses checks the streaming check on the worst case
// of docs/history.md §6: an acquire outstanding to the end holds back the
// cutting of every later op of its key, the failed ones among them are
// dropped as they wait, and the verdict is the batch check's, valid for a
// lock used correctly and invalid once two grants overlap.
func TestStreamPieceNeverCloses(t *testing.T) {
	build := func(overlap bool) history.History {
		var h history.History
		add := func(p int, typ history.Type, f string, ttl time.Duration) {
			h = append(h, history.Op{Index: len(h), Time: time.Duration(len(h)) * time.Millisecond, Process: p, Client: p, Type: typ, F: f, Key: "k", TTL: ttl})
		}
		add(0, history.Invoke, history.FAcquire, time.Second) // never completes
		for i := 0; i < 300; i++ {
			p := 1 + i%3
			add(p, history.Invoke, history.FAcquire, time.Second)
			if i%10 != 0 {
				add(p, history.Fail, history.FAcquire, 0)
				continue
			}
			add(p, history.OK, history.FAcquire, 0)
			if overlap && i == 150 {
				q := 1 + (i+1)%3
				add(q, history.Invoke, history.FAcquire, time.Second)
				add(q, history.OK, history.FAcquire, 0)
			}
			add(p, history.Invoke, history.FRelease, 0)
			add(p, history.OK, history.FRelease, 0)
		}
		return h
	}
	for _, overlap := range []bool{false, true} {
		h := build(overlap)
		if err := history.Validate(h); err != nil {
			t.Fatal(err)
		}
		streamAgrees(t, h, 0)
		r := (&LinearizabilityChecker{}).checkValid(context.Background(), h)
		if want := map[bool]Verdict{false: Valid, true: Invalid}[overlap]; r.Verdict != want {
			t.Fatalf("overlapping grants %v: verdict %s, want %s (%+v)", overlap, r.Verdict, want, r.Anomalies)
		}
	}
}

// FuzzStreamCuts widens TestStreamCutsAsBatch to any seed and shape of
// synthetic history, valid or with one anomaly planted.
func FuzzStreamCuts(f *testing.F) {
	f.Add(uint64(1), uint8(3), uint8(2), uint8(20), uint8(0))
	f.Add(uint64(4), uint8(9), uint8(1), uint8(4), uint8(2))
	f.Fuzz(func(t *testing.T, seed uint64, workers, keys, ttlMs, kind uint8) {
		opts := synth.Options{Workers: 1 + int(workers%10), Keys: 1 + int(keys%4), Ops: 800,
			TTL: time.Duration(3+int(ttlMs%60)) * time.Millisecond, InfoRate: 0.04, Tokens: seed%2 == 0, Session: seed%3 == 0}
		h := synth.Generate(rand.New(rand.NewPCG(seed, 1)), opts)
		streamAgrees(t, h, DefaultDrift)
		if bad, err := synth.Inject(rand.New(rand.NewPCG(seed, 2)), h, synth.Kinds[int(kind)%len(synth.Kinds)]); err == nil {
			streamAgrees(t, bad, 0)
		}
	})
}
