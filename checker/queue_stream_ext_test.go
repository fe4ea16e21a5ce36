package checker_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/checker/reference"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// generatedQueue returns the queue history the reference generator writes
// for seed: one in four honest, one in ten with ties, of the generator's
// own length or, for one in three, longer (ops invokes).
func generatedQueue(seed uint64) history.History {
	opts := reference.QueueGenOptions{Honest: seed%4 == 1, Ties: seed%10 == 9}
	switch seed % 3 {
	case 1:
		opts.Ops = 40
	case 2:
		opts.Ops = 150
	}
	return reference.GenerateQueue(rand.New(rand.NewPCG(seed, 0x51ea)), opts)
}

// TestQueueStreamGenerated holds the streaming queue check to the batch
// one on histories of the reference queue generator (every promise of
// docs/history.md §4.7 broken, ops of every outcome, crashes, a reaper,
// with and without a task table record) and on each of them mutated.
func TestQueueStreamGenerated(t *testing.T) {
	n := uint64(3000)
	if testing.Short() {
		n = 300
	}
	for seed := range n {
		h := generatedQueue(seed)
		if d := checker.QueueStreamDiff(h); d != "" {
			t.Fatalf("seed %d: %s\n%s", seed, d, historyText(h))
		}
		m := mutateQueue(rand.New(rand.NewPCG(seed, 0xed17)), h, 4)
		if d := checker.QueueStreamDiff(m); d != "" {
			t.Fatalf("seed %d mutated: %s\n%s", seed, d, historyText(m))
		}
	}
}

// FuzzQueueStream widens TestQueueStreamGenerated: it compares the checks
// on a queue fixture (testdata/queue-*.jsonl, base below their number) or
// the reference generator's history of seed (base at or above it),
// mutated edits times by seed. Its seeds are every fixture.
func FuzzQueueStream(f *testing.F) {
	paths, err := filepath.Glob("testdata/queue-*.jsonl")
	if err != nil || len(paths) == 0 {
		f.Fatalf("no queue fixtures: %v", err)
	}
	var fixtures []history.History
	for _, p := range paths {
		h, _, err := history.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		fixtures = append(fixtures, h)
	}
	for i := range fixtures {
		f.Add(uint8(i), uint64(i), uint8(i%4))
	}
	f.Add(uint8(255), uint64(7), uint8(3))
	f.Fuzz(func(t *testing.T, base uint8, seed uint64, edits uint8) {
		var h history.History
		if int(base) < len(fixtures) {
			h = fixtures[base]
		} else {
			h = generatedQueue(seed)
		}
		h = mutateQueue(rand.New(rand.NewPCG(seed, 1)), h, int(edits%16))
		if d := checker.QueueStreamDiff(h); d != "" {
			t.Fatalf("%s\n%s", d, historyText(h))
		}
	})
}

// mutateQueue returns h changed edits times, each change kept when the
// history stays well-formed: an op moved (the task table record among
// them), dropped or doubled, a completion's type changed, a capture's
// tasks changed, the history cut short.
func mutateQueue(r *rand.Rand, h history.History, edits int) history.History {
	h = slices.Clone(h)
	for range edits {
		if len(h) < 2 {
			break
		}
		m := mutateOnce(r, h)
		for i := range m {
			m[i].Index = i
		}
		if history.Validate(m) == nil {
			h = m
		}
	}
	return h
}

// mutateOnce returns h with one random change (its indexes not yet dense).
func mutateOnce(r *rand.Rand, h history.History) history.History {
	i := r.IntN(len(h))
	switch r.IntN(7) {
	case 0: // move op i, with the time of its new place
		to := r.IntN(len(h))
		op := h[i]
		h = slices.Delete(slices.Clone(h), i, i+1)
		op.Time = h[max(to-1, 0)].Time
		if to == 0 {
			op.Time = 0
		}
		return slices.Insert(h, min(to, len(h)), op)
	case 1:
		return slices.Delete(slices.Clone(h), i, i+1)
	case 2:
		return h[:i+1]
	case 3:
		h = slices.Clone(h)
		if h[i].Type != history.Invoke && h[i].Process >= 0 {
			h[i].Type = []history.Type{history.OK, history.Fail, history.Info}[r.IntN(3)]
		}
		return h
	case 4: // swap two neighbours, keeping the times in place
		h = slices.Clone(h)
		if i+1 < len(h) {
			h[i], h[i+1] = h[i+1], h[i]
			h[i].Time, h[i+1].Time = h[i+1].Time, h[i].Time
		}
		return h
	case 5:
		return slices.Insert(slices.Clone(h), i, h[i])
	}
	return mutateCapture(r, slices.Clone(h), i)
}

// mutateCapture changes the tasks of the first capture ok from i on: one
// of its tasks named twice (the same or with another queue and budget),
// or renamed after a task of another capture.
func mutateCapture(r *rand.Rand, h history.History, i int) history.History {
	var names []string
	for _, op := range h {
		if ts, err := history.CapturedOf(op); err == nil && op.F == history.FCapture && op.Type == history.OK {
			for _, t := range ts {
				names = append(names, t.Task)
			}
		}
	}
	for k := i; k < len(h); k++ {
		if h[k].F != history.FCapture || h[k].Type != history.OK {
			continue
		}
		ts, err := history.CapturedOf(h[k])
		if err != nil || len(ts) == 0 || len(names) == 0 {
			return h
		}
		j := r.IntN(len(ts))
		switch r.IntN(3) {
		case 0:
			ts = append(ts, ts[j])
		case 1: // named again with another queue and budget
			e := ts[j]
			b := r.IntN(3)
			e.Queue, e.Budget = fmt.Sprintf("q%d", r.IntN(3)), &b
			ts = slices.Insert(ts, r.IntN(len(ts)+1), e)
		default:
			ts[j].Task = names[r.IntN(len(names))]
		}
		v, _ := json.Marshal(ts)
		h[k].Value = v
		return h
	}
	return h
}

// historyText renders h one op a line, for a failure's message.
func historyText(h history.History) string {
	var b bytes.Buffer
	for _, op := range h {
		line, _ := json.Marshal(op)
		fmt.Fprintf(&b, "%s\n", line)
	}
	return b.String()
}
