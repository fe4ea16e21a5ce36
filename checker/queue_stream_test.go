package checker

import (
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

// QueueStreamDiff feeds h to the streaming queue check and compares what
// it finds with the batch check over the whole history (batchQueue,
// lostTasks, the holds and captures analyzeQueue counts); it returns ""
// when they agree, else what differs. It is exported for the generated
// histories of queue_stream_ext_test.go.
func QueueStreamDiff(h history.History) string {
	qs := newQueueStream()
	followEach(h, qs.add, qs.holdEvent)
	got := qs.result(context.Background(), QueueChecker{}.Name())
	f := Analyze(h)
	want := batchQueue(context.Background(), h, f)
	got.Elapsed, want.Elapsed = 0, 0
	if !reflect.DeepEqual(got, want) {
		return fmt.Sprintf("streaming check %+v\nbatch check %+v", got, want)
	}
	if gl, wl := qs.lostTasks(), lostTasks(h, f.Queue); !reflect.DeepEqual(gl, wl) {
		return fmt.Sprintf("streaming lost tasks %s\nbatch lost tasks %s", anomaliesString(gl), anomaliesString(wl))
	}
	if qs.holdCount() != len(f.Queue.Holds) || qs.hasCaptures() != f.Queue.Captured() {
		return fmt.Sprintf("streaming: %d holds, captures %v; batch: %d holds, captures %v", qs.holdCount(), qs.hasCaptures(), len(f.Queue.Holds), f.Queue.Captured())
	}
	return ""
}

// anomaliesString renders anomalies one a line, for a failure's message.
func anomaliesString(as []Anomaly) string {
	out := fmt.Sprint(len(as), " anomalies")
	for _, a := range as {
		out += fmt.Sprintf("\n  %s %s %v %v: %s", a.Kind, a.Key, a.Ops, *a.Window, a.Message)
	}
	return out
}

// queueAgree fails t when the streaming queue check of h does not give
// the batch check's findings.
func queueAgree(t *testing.T, h history.History) {
	t.Helper()
	if err := history.Validate(h); err != nil {
		t.Fatalf("the history to compare on is not well-formed: %v", err)
	}
	if d := QueueStreamDiff(h); d != "" {
		t.Fatal(d)
	}
}

// queueSynths are the shapes of the synthetic queue histories the tests
// compare: honest ones, with and without budgets, and ones where the
// service breaks its promises or the reaper takes tasks from slow workers.
var queueSynths = []struct {
	name string
	o    queueSynth
}{
	{"honest", queueSynth{Workers: 6, Tasks: 20, Queues: 2, Ops: 3000, Limit: 3, ReapEvery: 50 * time.Millisecond, ReapAfter: 200 * time.Millisecond, InfoRate: 0.02, FailRate: 0.02}},
	{"budgets", queueSynth{Workers: 4, Tasks: 12, Queues: 2, Ops: 3000, Limit: 4, Budget: 5, InfoRate: 0.03, FailRate: 0.03}},
	{"racy", queueSynth{Workers: 5, Tasks: 8, Queues: 1, Ops: 3000, Limit: 2, Racy: 0.2, InfoRate: 0.02, FailRate: 0.02}},
	{"slow-reaped", queueSynth{Workers: 5, Tasks: 6, Queues: 1, Ops: 3000, Limit: 2, Slow: 0.9, ReapEvery: 5 * time.Millisecond, ReapAfter: 10 * time.Millisecond, InfoRate: 0.01, FailRate: 0.05}},
	{"misfire", queueSynth{Workers: 4, Tasks: 10, Queues: 3, Ops: 3000, Limit: 3, Budget: 3, Misfire: 0.05, ReapEvery: 20 * time.Millisecond, ReapAfter: 30 * time.Millisecond, InfoRate: 0.01, FailRate: 0.02}},
	{"crashy-reaper", queueSynth{Workers: 3, Tasks: 5, Queues: 2, Ops: 3000, Limit: 2, Budget: 40, Slow: 0.5, ReapEvery: 3 * time.Millisecond, ReapAfter: 4 * time.Millisecond, InfoRate: 0.1, FailRate: 0.1, ReaperInfo: true, Racy: 0.05}},
}

// TestQueueStreamAsBatch holds the streaming queue check to the batch one
// on every well-formed history stored in the repository (the queue
// fixtures among them), each also with its task table record moved later
// or dropped, and on synthetic queue histories and lock histories.
func TestQueueStreamAsBatch(t *testing.T) {
	for _, sh := range storedHistories(t) {
		t.Run(sh.name, func(t *testing.T) {
			queueAgree(t, sh.h)
			for _, v := range tableVariants(sh.h) {
				queueAgree(t, v)
			}
		})
	}
	for _, qs := range queueSynths {
		for seed := uint64(0); seed < 4; seed++ {
			h := synthQueue(rand.New(rand.NewPCG(seed, 3)), qs.o)
			t.Run(fmt.Sprintf("%s-%d", qs.name, seed), func(t *testing.T) {
				queueAgree(t, h)
				queueAgree(t, h[:len(h)*2/3])
				for _, v := range tableVariants(h[:300]) {
					queueAgree(t, v)
				}
			})
		}
	}
	for seed := uint64(0); seed < 4; seed++ {
		h := synth.Generate(rand.New(rand.NewPCG(seed, 1)), synth.Options{Workers: 4, Keys: 2, Ops: 2000, TTL: 20 * time.Millisecond, InfoRate: 0.04, Tokens: true})
		t.Run(fmt.Sprintf("lock-%d", seed), func(t *testing.T) { queueAgree(t, h) })
	}
}

// tableVariants returns h with its task table record moved to a few later
// places, and without it; none when h has none.
func tableVariants(h history.History) []history.History {
	at := slices.IndexFunc(h, func(op history.Op) bool { return op.IsTasks() })
	if at < 0 {
		return nil
	}
	var out []history.History
	for _, to := range []int{at + 2, len(h) / 2, len(h) - 1, -1} {
		if to > at && to < len(h) || to < 0 {
			out = append(out, moveOp(h, at, to))
		}
	}
	return out
}

// moveOp returns a copy of h with op i moved to index to (dropped when to
// is negative), indexes made dense again and the moved op given the time
// of the op before it.
func moveOp(h history.History, i, to int) history.History {
	op := h[i]
	out := slices.Delete(slices.Clone(h), i, i+1)
	if to >= 0 {
		op.Time = 0
		if to > 0 {
			op.Time = out[to-1].Time
		}
		out = slices.Insert(out, to, op)
	}
	for k := range out {
		out[k].Index = k
	}
	return out
}

// TestQueueStreamMixed holds the streaming queue check to the batch one
// on a lock history and a queue history interleaved: their ops mixed, the
// queue processes numbered after the lock ones.
func TestQueueStreamMixed(t *testing.T) {
	lock := synth.Generate(rand.New(rand.NewPCG(5, 1)), synth.Options{Workers: 3, Keys: 1, Ops: 3000, TTL: 20 * time.Millisecond, InfoRate: 0.04})
	for _, qs := range queueSynths {
		t.Run(qs.name, func(t *testing.T) {
			q := synthQueue(rand.New(rand.NewPCG(9, 3)), qs.o)
			queueAgree(t, interleave(rand.New(rand.NewPCG(2, 2)), lock, q, 10000))
		})
	}
}

// interleave merges histories a and b in the order of their times (ties in
// a random order), numbering b's worker processes from offset.
func interleave(r *rand.Rand, a, b history.History, offset int) history.History {
	out := make(history.History, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		var op history.Op
		if j == len(b) || (i < len(a) && (a[i].Time < b[j].Time || a[i].Time == b[j].Time && r.IntN(2) == 0)) {
			op, i = a[i], i+1
		} else {
			op, j = b[j], j+1
			if op.Process >= 0 {
				op.Process += offset
			}
		}
		op.Index = len(out)
		out = append(out, op)
	}
	return out
}

// queueCase builds a small history of queue ops, one a line: process,
// type, f, key and value, each at the next millisecond.
func queueCase(lines ...string) history.History {
	var h history.History
	for i, l := range lines {
		var op history.Op
		var value string
		if _, err := fmt.Sscanf(l, "%d %s %s %s %s", &op.Process, &op.Type, &op.F, &op.Key, &value); err != nil {
			panic(fmt.Sprintf("line %q: %v", l, err))
		}
		if op.Key == "-" {
			op.Key = ""
		}
		if value != "-" {
			op.Value = []byte(value)
		}
		op.Index, op.Time, op.Client = i, time.Duration(i)*time.Millisecond, max(op.Process, 0)
		h = append(h, op)
	}
	return h
}

// TestQueueStreamCases holds the streaming queue check to the batch one
// on small histories that each reach one of its rules' corners, and checks
// that the batch check finds there what the case is about.
func TestQueueStreamCases(t *testing.T) {
	table := `-1 info tasks - [{"task":"t1","queue":"q0","budget":3}]`
	for _, c := range []struct {
		name  string
		h     history.History
		kinds []string // the queue check's kinds
		lost  int
	}{
		{"passed-over-unknown-capture-during-capture", queueCase(table,
			`0 invoke capture q0 1`, `1 invoke capture q0 1`, `1 info capture q0 -`, `0 ok capture q0 [{"task":"t1","budget":2}]`,
			`0 invoke set-status t1 "done"`, `0 ok set-status t1 -`, `2 invoke capture q0 2`, `2 ok capture q0 []`), nil, 0},
		{"lost-crashed-holder-status-pending-at-end", queueCase(table,
			`0 invoke capture q0 1`, `0 ok capture q0 [{"task":"t1"}]`, `0 invoke capture q0 1`, `0 info capture q0 -`,
			`1 invoke set-status t1 "done"`), nil, 0},
		{"lost-crashed-holder-status-failed", queueCase(table,
			`0 invoke capture q0 1`, `0 ok capture q0 [{"task":"t1"}]`, `0 invoke capture q0 1`, `0 info capture q0 -`,
			`1 invoke set-status t1 "done"`, `1 fail set-status t1 -`), nil, 1},
		{"reap-pending-at-end-ends-hold", queueCase(table,
			`0 invoke capture q0 1`, `0 ok capture q0 [{"task":"t1"}]`, `9 invoke reap - 5`,
			`1 invoke capture q0 1`, `1 ok capture q0 [{"task":"t1"}]`), nil, 0},
		{"double-capture-reap-failed", queueCase(table,
			`0 invoke capture q0 1`, `0 ok capture q0 [{"task":"t1"}]`, `9 invoke reap - 5`,
			`1 invoke capture q0 1`, `1 ok capture q0 [{"task":"t1"}]`, `9 fail reap - -`), []string{DoubleCapture}, 0},
		{"double-capture-undone-by-status-outstanding", queueCase(table,
			`0 invoke capture q0 1`, `0 ok capture q0 [{"task":"t1"}]`, `2 invoke set-status t1 "done"`,
			`1 invoke capture q0 1`, `1 ok capture q0 [{"task":"t1"}]`, `2 ok set-status t1 -`), []string{DoubleCapture}, 0},
		{"stale-status", queueCase(table,
			`0 invoke capture q0 1`, `0 ok capture q0 [{"task":"t1"}]`, `9 invoke reap - 5`, `9 ok reap - ["t1"]`,
			`1 invoke capture q0 1`, `1 ok capture q0 [{"task":"t1"}]`, `0 invoke set-status t1 "done"`, `0 ok set-status t1 -`),
			[]string{StaleStatus}, 0},
		{"stale-status-newer-hold-ending-outstanding", queueCase(table,
			`0 invoke capture q0 1`, `0 ok capture q0 [{"task":"t1"}]`, `9 invoke reap - 5`, `9 ok reap - ["t1"]`,
			`1 invoke capture q0 1`, `1 ok capture q0 [{"task":"t1"}]`, `1 invoke set-status t1 "done"`,
			`0 invoke set-status t1 "done"`, `0 ok set-status t1 -`, `1 fail set-status t1 -`), []string{StaleStatus}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			queueAgree(t, c.h)
			f := Analyze(c.h)
			var kinds []string
			for _, a := range batchQueue(context.Background(), c.h, f).Anomalies {
				kinds = append(kinds, a.Kind)
			}
			if !slices.Equal(kinds, c.kinds) || len(lostTasks(c.h, f.Queue)) != c.lost {
				t.Fatalf("the batch check finds %v and %d lost tasks, want %v and %d", kinds, len(lostTasks(c.h, f.Queue)), c.kinds, c.lost)
			}
		})
	}
}

// kept counts the holds, set-statuses and reaps s holds besides each
// task's latest state.
func (s *queueStream) kept() int {
	n := len(s.closing) + len(s.staleWaiting) + len(s.reaps) + len(s.early)
	for _, t := range s.tasks {
		n += len(t.holds) + len(t.outstanding) + len(t.settled)
	}
	return n
}

// TestQueueStreamForgets checks the bound of queueStream's memory: over a
// long queue history it keeps only the holds not yet ended for good, the
// ops outstanding and a few settled set-statuses per task, however long
// the history; over a lock history it keeps nothing.
func TestQueueStreamForgets(t *testing.T) {
	o := queueSynths[0].o
	o.Ops = 60000
	h := synthQueue(rand.New(rand.NewPCG(1, 3)), o)
	s := newQueueStream()
	most := 0
	followEach(h, func(op *history.Op) {
		s.add(op)
		most = max(most, s.kept())
	}, s.holdEvent)
	// each task: a few settled set-statuses (the latest two that returned
	// ok, of two processes, and two of unknown outcome); each worker: its
	// holds (at most its limit) and its outstanding op, and as many again
	// of crashed workers waiting for the reaper
	if bound := 6*o.Tasks + 4*o.Workers*o.Limit; most > bound {
		t.Errorf("the stream kept up to %d holds, set-statuses and reaps, more than %d", most, bound)
	}
	lock := synth.Generate(rand.New(rand.NewPCG(1, 1)), synth.Options{Workers: 4, Keys: 2, Ops: 5000, TTL: 20 * time.Millisecond, InfoRate: 0.04})
	s = newQueueStream()
	followEach(lock, s.add, s.holdEvent)
	if s.tasks != nil || s.queues != nil || s.early != nil || s.procs.dense != nil || s.procs.sparse != nil {
		t.Errorf("the stream kept state of a history without queue ops: %+v", s)
	}
}
