package clients

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// newQueue builds worker's Queue of implementation name on eps and closes
// it at the end of the test.
func newQueue(t *testing.T, name string, eps []Endpoint, worker int) Queue {
	t.Helper()
	alg, err := LookupQueue(name)
	if err != nil {
		t.Fatal(err)
	}
	q, err := alg.New(t.Context(), Target{Worker: worker, Endpoints: eps, Clock: wallClock{}, Rand: newTestRand(uint64(worker) + 1), Options: queueOptions[name]})
	if err != nil {
		t.Fatalf("%s: new queue: %v", name, err)
	}
	t.Cleanup(func() {
		if err := q.Close(); err != nil {
			t.Errorf("%s: close: %v", name, err)
		}
	})
	return q
}

func budget(n int) *int { return &n }

func ids(ts []Task) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.ID)
	}
	slices.Sort(out)
	return out
}

// queueSpecs are the systems the queue implementations run on in the tests
// ("any": the exec queue, whose test client speaks Redis).
var queueSpecs = map[string]cluster.Spec{systemPostgres: postgresOne, systemRedis: redisMasters, "any": redisMasters}

// queueOptions are the options of the queue implementations in the tests:
// the exec queue runs the plain-socket Redis client of lockproto/testdata.
var queueOptions = map[string]map[string]string{
	ExecAlgorithm: {ExecCommandOption: "python3 ../lockproto/testdata/resp_lock.py --queue"},
}

// TestQueueContract runs every queue implementation against its real
// server: a capture takes up to its limit of capturable tasks of its own
// queue and no task another capture holds; a set-status makes a task
// capturable again; a budget stops captures at zero; the reaper sets back
// a task captured longer than its timeout ago, and only such a task.
func TestQueueContract(t *testing.T) {
	for _, alg := range QueueAlgorithms() {
		t.Run(alg.Name, func(t *testing.T) { queueContract(t, alg) })
	}
}

// queueContract is TestQueueContract's run of one queue implementation, on
// tasks a to d of queue q0 and e of queue q1, named with the prefix p.
func queueContract(t *testing.T, alg QueueAlgorithm) {
	eps := newClusters(t).endpoints(t, queueSpecs[alg.System])
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	a := newQueue(t, alg.Name, eps, 0)
	b := newQueue(t, alg.Name, eps, 1)
	p := "contract-" + alg.Name + "-"
	specs := []history.TaskSpec{
		{Task: p + "a", Queue: p + "q0"}, {Task: p + "b", Queue: p + "q0"}, {Task: p + "c", Queue: p + "q0"},
		{Task: p + "d", Queue: p + "q0"}, {Task: p + "e", Queue: p + "q1"},
	}
	// The exec client of the tests keeps no budget.
	budgeted := alg.Budget == With
	if budgeted {
		specs[0].Budget = budget(1)
	}
	if err := a.Setup(ctx, specs); err != nil {
		t.Fatal(err)
	}
	first := captureEachOnce(t, ctx, a, b, p, budgeted)
	failedCapturedAgain(t, ctx, a, b, p, first, budgeted)
	reaperSetsBack(t, ctx, a, b, p, budgeted)
}

// captureEachOnce checks that a's capture of 3 and b's of 3 take each of
// q0's four tasks once, that a third finds none, and that q1's task is
// apart; it returns a's capture.
func captureEachOnce(t *testing.T, ctx context.Context, a, b Queue, p string, budgeted bool) []Task {
	t.Helper()
	first, err := a.Capture(ctx, p+"q0", 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 3 {
		t.Fatalf("capture of 3 of 4 free tasks returned %v", ids(first))
	}
	for _, x := range first {
		if x.Queue != p+"q0" {
			t.Errorf("task %s of queue %q, want %s", x.ID, x.Queue, p+"q0")
		}
		// only task a has a budget (1, so 0 left after the capture)
		if hasBudget := budgeted && x.ID == p+"a"; hasBudget != (x.RetriesLeft != nil) || hasBudget && *x.RetriesLeft != 0 {
			t.Errorf("task %s: retries left %v, want them only for a budget (%v)", x.ID, x.RetriesLeft, hasBudget)
		}
	}
	second, err := b.Capture(ctx, p+"q0", 3)
	if err != nil {
		t.Fatal(err)
	}
	all := append(ids(first), ids(second)...)
	slices.Sort(all)
	if want := []string{p + "a", p + "b", p + "c", p + "d"}; !slices.Equal(all, want) {
		t.Fatalf("two captures of q0 returned %v and %v, want each of %v once", ids(first), ids(second), want)
	}
	if none, err := b.Capture(ctx, p+"q0", 3); err != nil || len(none) != 0 {
		t.Fatalf("capture with every task of q0 in progress: %v, %v", ids(none), err)
	}
	if other, err := b.Capture(ctx, p+"q1", 3); err != nil || !slices.Equal(ids(other), []string{p + "e"}) {
		t.Fatalf("capture of q1: %v, %v; want only %s", ids(other), err, p+"e")
	}
	return first
}

// failedCapturedAgain sets task a, captured in first (a's) or else by b,
// back to failed: the other worker captures it again, unless its budget of
// 1 is spent.
func failedCapturedAgain(t *testing.T, ctx context.Context, a, b Queue, p string, first []Task, budgeted bool) {
	t.Helper()
	holder, other := a, b
	x := Task{ID: p + "a", Queue: p + "q0"}
	if !slices.ContainsFunc(first, func(y Task) bool { return y.ID == x.ID }) {
		holder = b
	}
	if err := holder.SetStatus(ctx, x, history.StatusFailed); err != nil {
		t.Fatal(err)
	}
	again, err := other.Capture(ctx, p+"q0", 3)
	if err != nil {
		t.Fatal(err)
	}
	if want := !budgeted; slices.Contains(ids(again), x.ID) != want || len(again) > 1 {
		t.Fatalf("capture after %s failed: %v; want it captured again: %v", x.ID, ids(again), want)
	}
}

// reaperSetsBack checks the reaper: with timeout 0 every task in progress
// is set back, and a done task is not.
func reaperSetsBack(t *testing.T, ctx context.Context, a, b Queue, p string, budgeted bool) {
	t.Helper()
	y := Task{ID: p + "b", Queue: p + "q0"}
	if err := a.SetStatus(ctx, y, history.StatusDone); err != nil {
		t.Fatal(err)
	}
	if none, err := a.Reap(ctx, []string{p + "q0", p + "q1"}, time.Hour); err != nil || len(none) != 0 {
		t.Fatalf("reap with a timeout of an hour: %v, %v", none, err)
	}
	reaped, err := a.Reap(ctx, []string{p + "q0", p + "q1"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{p + "c", p + "d", p + "e"}
	if !budgeted {
		want = append([]string{p + "a"}, want...)
	}
	if !slices.Equal(reaped, want) {
		t.Fatalf("reap with timeout 0 set back %v, want %v", reaped, want)
	}
	back, err := b.Capture(ctx, p+"q1", 3)
	if err != nil || !slices.Equal(ids(back), []string{p + "e"}) {
		t.Fatalf("capture of q1 after the reaper: %v, %v", ids(back), err)
	}
}

// TestQueueCaptureUnreachable checks that a capture whose server cannot be
// reached certainly captured nothing (ErrNotCaptured).
func TestQueueCaptureUnreachable(t *testing.T) {
	for _, name := range []string{"redis-zadd-queue", "redis-zadd-queue-script"} {
		t.Run(name, func(t *testing.T) {
			q := newQueue(t, name, []Endpoint{{Name: "n1", Addr: "127.0.0.1:1"}}, 0)
			if _, err := q.Capture(t.Context(), "q", 1); !errors.Is(err, ErrNotCaptured) {
				t.Fatalf("capture from a closed port: %v, want ErrNotCaptured", err)
			}
		})
	}
}

// TestPgQueueCaptureRace holds one capture open in a transaction while a
// second capture of the same queue runs: the seed's capture waits for the
// first one's row locks and then returns the same tasks (a double
// capture), and the SKIP LOCKED capture takes only the other tasks.
func TestPgQueueCaptureRace(t *testing.T) {
	eps := newClusters(t).endpoints(t, postgresOne)
	for _, tc := range []struct {
		name   string
		double bool
	}{{"pg-queue", true}, {"pg-queue-skip-locked", false}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			a := newQueue(t, tc.name, eps, 0).(*PgQueue)
			b := newQueue(t, tc.name, eps, 1).(*PgQueue)
			p := "race-" + tc.name + "-"
			var specs []history.TaskSpec
			for _, s := range []string{"a", "b", "c", "d", "e", "f"} {
				specs = append(specs, history.TaskSpec{Task: p + s, Queue: p + "q", Budget: budget(5)})
			}
			if err := a.Setup(ctx, specs); err != nil {
				t.Fatal(err)
			}
			first, err := a.p.conn.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer first.Rollback(ctx)
			second, err := b.p.conn.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer second.Rollback(ctx)
			got1, err := scanCaptured(first.Query(ctx, a.capture, p+"q", 3, int64(1)))
			if err != nil || len(got1) != 3 {
				t.Fatalf("first capture: %v, %v", got1, err)
			}
			got2 := secondCapture(t, ctx, first, second, b, p, tc.double)
			if got2.err != nil {
				t.Fatal(got2.err)
			}
			both := 0
			for _, id := range got2.ids {
				if slices.Contains(got1, id) {
					both++
				}
			}
			if tc.double && both == 0 {
				t.Fatalf("the seed's capture: second capture returned %v, none of the first's %v: no double capture", got2.ids, got1)
			}
			if !tc.double && (both > 0 || len(got2.ids) != 3) {
				t.Fatalf("SKIP LOCKED: second capture returned %v while the first held %v", got2.ids, got1)
			}
		})
	}
}

// scanCaptured returns the ids of the tasks a capture's rows return,
// sorted.
func scanCaptured(rows pgx.Rows, err error) ([]string, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, queue string
		var left int
		if err := rows.Scan(&id, &left, &queue); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	slices.Sort(out)
	return out, rows.Err()
}

// captureResult is what a capture returned.
type captureResult struct {
	ids []string
	err error
}

// secondCapture runs b's capture of queue p+"q" in the transaction second
// while the transaction first holds its own capture, and returns it: when
// double (the seed's capture), it must wait for first's row locks, and first
// commits while it waits; else it returns first, and first commits after.
func secondCapture(t *testing.T, ctx context.Context, first, second pgx.Tx, b *PgQueue, p string, double bool) captureResult {
	t.Helper()
	done := make(chan captureResult, 1)
	go func() {
		ids, err := scanCaptured(second.Query(ctx, b.capture, p+"q", 3, int64(2)))
		done <- captureResult{ids, err}
	}()
	var got2 captureResult
	if double {
		// the second capture is waiting for the first's row locks
		// once its backend waits on a lock
		pid := b.p.conn.PgConn().PID()
		for waiting := false; !waiting; {
			if err := first.QueryRow(ctx, `select count(*) = 1 from pg_stat_activity where pid = $1 and wait_event_type = 'Lock'`, pid).Scan(&waiting); err != nil {
				t.Fatal(err)
			}
			select {
			case r := <-done:
				t.Fatalf("second capture did not wait for the first: %v, %v", r.ids, r.err)
			default:
			}
		}
		if err := first.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		got2 = <-done
	} else {
		got2 = <-done
		if err := first.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return got2
}
