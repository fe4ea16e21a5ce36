package runner

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jepsen-lite/jepsen-lite/clients"
	"github.com/jepsen-lite/jepsen-lite/history"
	"github.com/jepsen-lite/jepsen-lite/nemesis"
	"github.com/jepsen-lite/jepsen-lite/reports"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// queueTasks returns the task table of the queue workload q: task i is
// "t<i>" of queue "q<i mod Queues>", with q's budget.
func queueTasks(q *scenarios.QueueSpec) []history.TaskSpec {
	var out []history.TaskSpec
	for i := range q.Tasks {
		t := history.TaskSpec{Task: "t" + strconv.Itoa(i), Queue: queueName(i % q.Queues)}
		if q.Budget != nil {
			b := *q.Budget
			t.Budget = &b
		}
		out = append(out, t)
	}
	return out
}

func queueName(i int) string { return "q" + strconv.Itoa(i) }

// queueWorker is one process of the queue workload: a worker that
// captures from its queue, or the reaper. Its *worker carries the pause
// points, the clock and the random source the nemesis reaches.
type queueWorker struct {
	*worker
	q        *clients.RecordedQueue
	queue    string
	queues   []string
	spec     *scenarios.QueueSpec
	resource *clients.Resource
}

// startQueue starts the queue workload's clients, one per worker (and one
// for the reaper, the last process), sets the task table up, starts the
// clock with the table as its first record and makes the workers.
func startQueue(ctx context.Context, p *plan, st *runStore, run *started) error {
	s := &p.s
	tasks := queueTasks(s.Queue)
	setups, err := workerSetups(s, run.cluster, run.net, s.Processes(), "", logLines{st.log})
	if err != nil {
		return err
	}
	var qs []clients.Queue
	var qws []*queueWorker
	run.down.push(func() {
		if qws != nil { // the recorded queues own them
			for _, qw := range qws {
				_ = qw.q.Close()
			}
			return
		}
		for _, q := range qs {
			_ = q.Close()
		}
	})
	qs, err = openQueues(ctx, p, setups)
	if err != nil {
		return err
	}
	if e, ok := qs[0].(interface{ Client() string }); ok {
		run.lockClient = &reports.LockClient{Command: s.Lock.Options[clients.ExecCommandOption], Name: e.Client()}
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err = qs[0].Setup(sctx, tasks)
	cancel()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrSetup, err)
	}
	run.rec = st.startClock()
	run.rec.Record(history.TasksOp(tasks))
	run.workers, qws = queueWorkers(p, run.rec, setups, qs)
	reaper := -1
	if s.Queue.Reaper != nil {
		reaper = len(qws) - 1
	}
	run.run = func(i int, stop, abort context.Context) {
		if i == reaper {
			qws[i].reap(stop, abort)
			return
		}
		qws[i].run(stop, abort)
	}
	st.log.Printf("cluster, %d tasks in %d queues and %d processes ready", len(tasks), s.Queue.Queues, len(qws))
	return nil
}

// openQueues starts the queue workload's clients together (openTogether),
// as openLockers starts the lock workload's. It returns every client that
// started, with the first error by worker.
func openQueues(ctx context.Context, p *plan, setups []workerSetup) ([]clients.Queue, error) {
	made, errs := openTogether(ctx, setups, p.queue.New)
	var qs []clients.Queue
	var first error
	for i, q := range made {
		switch {
		case errs[i] != nil && first == nil:
			first = fmt.Errorf("%w: worker %d: %s: %w", ErrSetup, i, p.s.Lock.Algorithm, errs[i])
		case errs[i] == nil && q != nil:
			qs = append(qs, q)
		}
	}
	return qs, first
}

// queueWorkers makes the queue workload's workers, one per Queue: each
// captures from its own queue, q<i mod Queues>, through a recorded Queue
// that owns qs[i] from then on.
func queueWorkers(p *plan, rec *history.Recorder, setups []workerSetup, qs []clients.Queue) (workerSet, []*queueWorker) {
	s := &p.s
	var queues []string
	for i := range s.Queue.Queues {
		queues = append(queues, queueName(i))
	}
	resource := clients.NewResource(s.Resource == scenarios.Fenced, rec.Now)
	var ws workerSet
	var qws []*queueWorker
	for i, q := range qs {
		target := setups[i].target
		open := func(ctx context.Context) (clients.Queue, error) { return p.queue.New(ctx, target) }
		w := &worker{id: i, rec: rec, rng: setups[i].rng, clock: setups[i].clock, think: s.Think, hold: s.Hold, ttl: s.Lock.TTL, opTime: max(s.Lock.TTL, time.Second), pauses: map[string]pause{}}
		w.queue = &clients.RecordedQueue{Queue: q, Rec: rec, Proc: clients.NewProcess(i, len(qs)), Open: open}
		ws = append(ws, w)
		qws = append(qws, &queueWorker{
			worker:   w,
			q:        w.queue,
			queue:    queueName(i % s.Queue.Queues),
			queues:   queues,
			spec:     s.Queue,
			resource: resource,
		})
	}
	return ws, qws
}

// ready gives the current process a Queue; false (after a back-off) when
// it cannot be opened yet.
func (w *queueWorker) ready(abort context.Context) bool {
	ctx, cancel := context.WithTimeout(abort, w.opTime)
	err := w.q.Ready(ctx)
	cancel()
	if w.broke(err) {
		return false
	}
	if err != nil {
		w.sleep(abort, time.Duration(w.rng.Int64N(int64(w.opTime/10)+1)))
		return false
	}
	return true
}

// run is a queue worker's loop: capture up to the limit from its queue;
// for each task captured, read the task's register and write it plus one
// with the capture's token (the processing), hold it for the hold time,
// and set its status: failed with the scenario's probability, else done.
// A crash (an op of unknown outcome) ends the process: its successor holds
// nothing and captures anew.
func (w *queueWorker) run(stop, abort context.Context) {
	for stop.Err() == nil {
		if w.ready(abort) {
			w.iterate(abort)
		}
		w.sleep(stop, w.think)
	}
}

func (w *queueWorker) iterate(abort context.Context) {
	ctx, cancel := context.WithTimeout(abort, w.opTime)
	tasks, err := w.q.Capture(ctx, w.queue, w.spec.Limit)
	cancel()
	if w.broke(err) {
		return
	}
	w.pauseAt(abort, nemesis.AfterResponse)
	if err != nil || len(tasks) == 0 {
		w.sleep(abort, time.Duration(w.rng.Int64N(int64(w.opTime/10)+1)))
		return
	}
	holder := w.q.Proc.ID()
	for _, t := range tasks {
		if w.q.Proc.ID() != holder {
			return // the process crashed; its successor holds nothing
		}
		if !w.process(abort, t) {
			return
		}
		w.sleep(abort, w.hold)
		status := history.StatusDone
		if w.rng.Float64() < w.spec.FailRate {
			status = history.StatusFailed
		}
		ctx, cancel := context.WithTimeout(abort, w.opTime)
		err := w.q.SetStatus(ctx, t, status)
		cancel()
		if w.broke(err) {
			return
		}
	}
}

// process reads task t's register and writes it plus one with the
// capture's token; false when the process crashed on the write.
func (w *queueWorker) process(abort context.Context, t clients.Task) bool {
	op := func(typ history.Type, f string) history.Op {
		return history.Op{Process: w.q.Proc.ID(), Client: w.id, Type: typ, F: f, Key: t.ID, Token: t.Token}
	}
	w.rec.Record(op(history.Invoke, history.FRead))
	v := w.resource.Read(t.ID)
	read := op(history.OK, history.FRead)
	read.Value = history.IntValue(v)
	w.rec.Record(read)
	w.pauseAt(abort, nemesis.BeforeWrite)
	inv := op(history.Invoke, history.FWrite)
	inv.Value = history.IntValue(v + 1)
	w.rec.Record(inv)
	applied, err := w.resource.Write(t.ID, t.Token, v+1)
	done := op(history.OK, history.FWrite)
	done.Value, done.Applied = inv.Value, applied
	writeOutcome(&done, err)
	w.rec.Record(done)
	if done.Type == history.Info {
		w.q.Crash()
		return false
	}
	return true
}

// reap is the reaper's loop: a pass over every queue each interval.
func (w *queueWorker) reap(stop, abort context.Context) {
	for stop.Err() == nil {
		w.sleep(stop, w.spec.Reaper.Interval)
		if stop.Err() != nil || !w.ready(abort) {
			continue
		}
		w.pauseAt(abort, nemesis.AfterResponse)
		ctx, cancel := context.WithTimeout(abort, w.opTime)
		_, err := w.q.Reap(ctx, w.queues, w.spec.Reaper.Timeout)
		cancel()
		w.broke(err)
	}
}
