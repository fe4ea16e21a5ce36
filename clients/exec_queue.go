package clients

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
	"github.com/jepsen-lite/jepsen-lite/lockproto"
)

// ExecQueue is a work queue whose client runs as a program of its own,
// spoken to through the lock-client protocol's queue requests
// (docs/lock-protocol.md §6). The client must claim the ability "queue".
type ExecQueue struct {
	proc *lockproto.Process
	log  io.Writer
	name string
}

var (
	_ Queue         = (*ExecQueue)(nil)
	_ ProcessPauser = (*ExecQueue)(nil)
)

// NewExecQueue starts the command of t.Options["command"] as a queue
// client.
func NewExecQueue(ctx context.Context, t Target) (Queue, error) {
	p, err := startExec(ctx, t, nil)
	if err != nil {
		return nil, err
	}
	if !p.Has(lockproto.AbilityQueue) {
		p.Kill()
		return nil, fmt.Errorf("clients: %s: the client %q does not claim the ability %q: it cannot stand for a queue", ExecAlgorithm, p.Client(), lockproto.AbilityQueue)
	}
	return &ExecQueue{proc: p, log: t.Log, name: fmt.Sprintf("w%d p%d", t.Worker, t.Process)}, nil
}

// Client returns what the client calls itself.
func (q *ExecQueue) Client() string { return q.proc.Client() }

// Stop stops the client's process group.
func (q *ExecQueue) Stop() error { return q.proc.Stop() }

// Continue continues it.
func (q *ExecQueue) Continue() error { return q.proc.Continue() }

func (q *ExecQueue) call(ctx context.Context, req lockproto.Request) (lockproto.Reply, error) {
	return callProcess(ctx, q.proc, req, lockproto.Hooks{})
}

// Setup asks the client to create the task table.
func (q *ExecQueue) Setup(ctx context.Context, tasks []history.TaskSpec) error {
	req := lockproto.Request{Type: lockproto.TypeSetup}
	for _, t := range tasks {
		ts := lockproto.TaskSpec{Task: t.Task, Queue: t.Queue}
		if t.Budget != nil {
			ts.Budget = *t.Budget
		}
		req.Tasks = append(req.Tasks, ts)
	}
	rep, err := q.call(ctx, req)
	if err != nil {
		return err
	}
	if rep.Type != lockproto.TypeOK {
		return replyError(rep, errors.New("setup refused"))
	}
	return nil
}

// Capture asks the client to capture up to limit tasks of queue.
func (q *ExecQueue) Capture(ctx context.Context, queue string, limit int) ([]Task, error) {
	rep, err := q.call(ctx, lockproto.Request{Type: lockproto.TypeCapture, Queue: queue, Limit: limit})
	if err != nil {
		return nil, err
	}
	if rep.Type != lockproto.TypeOK {
		return nil, replyError(rep, ErrNotCaptured)
	}
	var got []lockproto.Task
	if err := json.Unmarshal(rep.Tasks, &got); err != nil {
		return nil, err // checked by the protocol already
	}
	tasks := make([]Task, 0, len(got))
	for _, t := range got {
		tasks = append(tasks, Task{ID: t.Task, Queue: t.Queue, Token: t.Token, RetriesLeft: t.RetriesLeft})
	}
	return tasks, nil
}

// SetStatus asks the client to set t's status.
func (q *ExecQueue) SetStatus(ctx context.Context, t Task, status string) error {
	rep, err := q.call(ctx, lockproto.Request{Type: lockproto.TypeSetStatus, Task: t.ID, Queue: t.Queue, Token: t.Token, Status: status})
	if err != nil {
		return err
	}
	if rep.Type != lockproto.TypeOK {
		return replyError(rep, ErrNotHeld)
	}
	return nil
}

// Reap asks the client to set back the tasks of queues captured longer
// than timeout ago.
func (q *ExecQueue) Reap(ctx context.Context, queues []string, timeout time.Duration) ([]string, error) {
	t := ms(timeout)
	rep, err := q.call(ctx, lockproto.Request{Type: lockproto.TypeReap, Queues: queues, TimeoutMS: &t})
	if err != nil {
		return nil, err
	}
	if rep.Type != lockproto.TypeOK {
		return nil, replyError(rep, errors.New("reap refused"))
	}
	var ids []string
	if err := json.Unmarshal(rep.Tasks, &ids); err != nil {
		return nil, err
	}
	slices.Sort(ids) // the client's order says nothing
	return ids, nil
}

// Close ends the client as the end of a run does.
func (q *ExecQueue) Close() error {
	err := q.proc.Close(lockproto.DefaultExitGrace)
	if q.log != nil {
		_, _ = fmt.Fprintf(q.log, "%s: exec client ended\n", q.name)
	}
	return err
}
