package clients

import (
	"context"
	"errors"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// RecordedQueue wraps a Queue and writes every call into the history as an
// invoke followed by its completion (docs/history.md §1, "The queue
// workload"): ok on success; fail when the call certainly did nothing (a
// capture's ErrNotCaptured, a set-status's ErrNotHeld); info on any other
// error, after which the process crashes: its Queue is closed, and the
// worker goes on under a new process number with a new one (Ready).
type RecordedQueue struct {
	Queue Queue
	Rec   *history.Recorder
	Proc  *Process
	// Open builds the Queue of the worker's next process after a crash.
	Open func(ctx context.Context) (Queue, error)
}

// errNoQueue reports a call on a process whose Queue was closed by its
// crash and not opened again (Ready). Nothing is sent or recorded.
var errNoQueue = errors.New("clients: the process has no queue client (call Ready)")

// Ready makes sure the current process has a Queue, opening a new one
// after a crash.
func (r *RecordedQueue) Ready(ctx context.Context) error {
	if r.Queue != nil {
		return nil
	}
	q, err := r.Open(ctx)
	if err != nil {
		return err
	}
	r.Queue = q
	return nil
}

// Capture records and performs one capture of up to limit tasks of queue.
func (r *RecordedQueue) Capture(ctx context.Context, queue string, limit int) ([]Task, error) {
	if r.Queue == nil {
		return nil, errNoQueue
	}
	r.Rec.Record(r.op(history.Invoke, history.FCapture, queue, history.IntValue(int64(limit))))
	ts, err := r.Queue.Capture(ctx, queue, limit)
	done := r.op(history.OK, history.FCapture, queue, nil)
	if err == nil {
		got := make([]history.CapturedTask, 0, len(ts))
		for _, t := range ts {
			got = append(got, history.CapturedTask{Task: t.ID, Token: t.Token, Budget: t.RetriesLeft, Queue: t.Queue})
		}
		done.Value = history.JSONValue(got)
	}
	r.complete(done, err, ErrNotCaptured)
	return ts, err
}

// SetStatus records and performs a set-status of t.
func (r *RecordedQueue) SetStatus(ctx context.Context, t Task, status string) error {
	if r.Queue == nil {
		return errNoQueue
	}
	inv := r.op(history.Invoke, history.FSetStatus, t.ID, history.JSONValue(status))
	inv.Token = t.Token
	r.Rec.Record(inv)
	err := r.Queue.SetStatus(ctx, t, status)
	done := r.op(history.OK, history.FSetStatus, t.ID, nil)
	done.Token = t.Token
	r.complete(done, err, ErrNotHeld)
	return err
}

// Reap records and performs one reaper pass.
func (r *RecordedQueue) Reap(ctx context.Context, queues []string, timeout time.Duration) ([]string, error) {
	if r.Queue == nil {
		return nil, errNoQueue
	}
	r.Rec.Record(r.op(history.Invoke, history.FReap, "", history.IntValue(int64(timeout))))
	ids, err := r.Queue.Reap(ctx, queues, timeout)
	done := r.op(history.OK, history.FReap, "", nil)
	if err == nil {
		if ids == nil {
			ids = []string{}
		}
		done.Value = history.JSONValue(ids)
	}
	r.complete(done, err)
	return ids, err
}

// Crash ends the current process: its Queue is closed, and the worker goes
// on under a new process number.
func (r *RecordedQueue) Crash() {
	r.Proc.Crash()
	if r.Queue != nil {
		_ = r.Queue.Close()
		r.Queue = nil
	}
}

// Close closes the wrapped Queue, if the process has one.
func (r *RecordedQueue) Close() error {
	if r.Queue == nil {
		return nil
	}
	return r.Queue.Close()
}

func (r *RecordedQueue) op(t history.Type, f, key string, value []byte) history.Op {
	return history.Op{Process: r.Proc.ID(), Client: r.Proc.Worker(), Type: t, F: f, Key: key, Value: value}
}

// complete records the completion in done: ok when err is nil, fail when
// err is definite, info (and a crash) otherwise.
func (r *RecordedQueue) complete(done history.Op, err error, definite ...error) {
	switch {
	case err == nil:
	case isAny(err, definite):
		done.Type, done.Error, done.Value = history.Fail, err.Error(), nil
	default:
		done.Type, done.Error, done.Value = history.Info, err.Error(), nil
	}
	r.Rec.Record(done)
	if done.Type == history.Info {
		r.Crash()
	}
}
