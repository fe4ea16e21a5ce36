package clients

import (
	"context"
	"errors"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// Process is the logical process a worker currently speaks as. A worker
// starts as process Worker; every indeterminate outcome (info) crashes the
// process, and the worker goes on as process Worker + k×Workers, as Jepsen
// does. Process is used by one worker goroutine only.
type Process struct {
	worker, workers, id int
}

// NewProcess returns the first process of worker among workers.
func NewProcess(worker, workers int) *Process {
	if workers < 1 {
		workers = 1
	}
	return &Process{worker: worker, workers: workers, id: worker}
}

// ID returns the current process number.
func (p *Process) ID() int { return p.id }

// Worker returns the worker behind the process (the history's client).
func (p *Process) Worker() int { return p.worker }

// Crash ends the current process; the worker goes on under a new number.
func (p *Process) Crash() { p.id += p.workers }

// Recorded wraps a Locker and writes every call into the history as an
// invoke followed by its completion: ok on success, fail when the error is
// ErrNotAcquired or ErrNotHeld (the call definitely did nothing), and info on
// any other error (a timeout or lost connection may have taken effect), after
// which the process crashes. Every algorithm is thus recorded the same way.
type Recorded struct {
	Locker Locker
	Rec    *history.Recorder
	Proc   *Process
}

var _ Locker = (*Recorded)(nil)

// Acquire records and performs one acquire attempt.
func (r *Recorded) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	r.Rec.Record(history.Op{Process: r.Proc.ID(), Client: r.Proc.Worker(), Type: history.Invoke, F: history.FAcquire, Key: key, TTL: ttl})
	l, err := r.Locker.Acquire(ctx, key, ttl)
	done := history.Op{Process: r.Proc.ID(), Client: r.Proc.Worker(), F: history.FAcquire, Key: key}
	if err == nil {
		done.Type = history.OK
		done.Token = l.Token
		if !l.Until.IsZero() {
			done.Until = r.Rec.Since(l.Until)
		}
	}
	r.complete(done, err, ErrNotAcquired)
	return l, err
}

// Release records and performs a release.
func (r *Recorded) Release(ctx context.Context, l Lease) error {
	r.Rec.Record(history.Op{Process: r.Proc.ID(), Client: r.Proc.Worker(), Type: history.Invoke, F: history.FRelease, Key: l.Key, Token: l.Token})
	err := r.Locker.Release(ctx, l)
	done := history.Op{Process: r.Proc.ID(), Client: r.Proc.Worker(), Type: history.OK, F: history.FRelease, Key: l.Key, Token: l.Token}
	r.complete(done, err, ErrNotHeld)
	return err
}

// LeaseLost records that the worker learned its lease on key is gone (a
// session lock's session expired). It is recorded as an invoke and ok pair
// so that the history stays well-formed; a holder's belief ends at it.
func (r *Recorded) LeaseLost(key string, token uint64) {
	op := history.Op{Process: r.Proc.ID(), Client: r.Proc.Worker(), Type: history.Invoke, F: history.FLeaseLost, Key: key, Token: token}
	r.Rec.Record(op)
	op.Type = history.OK
	r.Rec.Record(op)
}

// Close closes the wrapped Locker.
func (r *Recorded) Close() error { return r.Locker.Close() }

// complete records the completion of the op in done: ok when err is nil,
// fail when err is definite, info (and a crash) otherwise.
func (r *Recorded) complete(done history.Op, err, definite error) {
	switch {
	case err == nil:
		done.Type = history.OK
	case errors.Is(err, definite):
		done.Type = history.Fail
		done.Error = err.Error()
		done.Until = 0
	default:
		done.Type = history.Info
		done.Error = err.Error()
		done.Until = 0
	}
	r.Rec.Record(done)
	if done.Type == history.Info {
		r.Proc.Crash()
	}
}
