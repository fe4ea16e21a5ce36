package clients

import (
	"context"
	"errors"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
	"github.com/jepsen-lite/jepsen-lite/lockapi"
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
// which the process crashes (Crash). Every algorithm is thus recorded the same
// way.
type Recorded struct {
	Locker Locker
	Rec    *history.Recorder
	Proc   *Process
	// Open builds the Locker of the worker's next process after a crash.
	// When it is nil, a crash keeps the same Locker.
	Open func(ctx context.Context) (Locker, error)
	// KeepClient models an application that logs an indeterminate error
	// and calls again on the same client (scenario lock.on-error:
	// keep-client): a crash still ends the process, but keeps its Locker,
	// and the info is recorded as kept (docs/history.md §1). A call that
	// closed its own client (ErrClientClosed) crashes as usual.
	KeepClient bool
}

// Crash ends the current process as a process that dies ends: its Locker is
// closed, and with it its connections and sessions (and every lock that
// closing frees, docs/design.md §3). The worker goes on under a new process number;
// Ready opens its new Locker. Without Open, only the number changes. With
// kept (the info was recorded as kept: Keeps), the Locker stays open and
// serves the new process.
func (r *Recorded) Crash(kept bool) {
	r.Proc.Crash()
	if kept || r.Open == nil || r.Locker == nil {
		return
	}
	_ = r.Locker.Close() // the process is gone, whatever closing it said
	r.Locker = nil
}

// Ready makes sure the current process has a Locker, opening a new one after
// a crash; opened reports that it did. A process whose Locker cannot be
// opened (its servers are unreachable, say) sends nothing: call Ready again
// later.
func (r *Recorded) Ready(ctx context.Context) (opened bool, err error) {
	if r.Locker != nil {
		return false, nil
	}
	if r.Open == nil {
		return false, errors.New("clients: the lock client was closed and there is no Open")
	}
	l, err := r.Open(ctx)
	if err != nil {
		return false, err
	}
	r.Locker = l
	return true, nil
}

var _ Locker = (*Recorded)(nil)

// errNoClient reports a call on a process whose Locker was closed by its
// crash and not opened again (Ready). Nothing is sent or recorded.
var errNoClient = errors.New("clients: the process has no lock client (call Ready)")

// Acquire records and performs one acquire attempt.
func (r *Recorded) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	if r.Locker == nil {
		return Lease{}, errNoClient
	}
	return r.acquire(ctx, key, ttl, func() (Lease, error) { return r.Locker.Acquire(ctx, key, ttl) })
}

// ErrNoWait reports a waiting acquire asked of a Locker that is not a
// Waiter. Nothing is sent or recorded.
var ErrNoWait = errors.New("clients: the algorithm cannot wait for a lock")

// AcquireWait records and performs one waiting acquire (Waiter): one op
// from the invoke to the moment the lock was taken or the wait ended.
func (r *Recorded) AcquireWait(ctx context.Context, key string, ttl, wait time.Duration) (Lease, error) {
	if r.Locker == nil {
		return Lease{}, errNoClient
	}
	w, ok := r.Locker.(Waiter)
	if !ok {
		return Lease{}, ErrNoWait
	}
	return r.acquire(ctx, key, ttl, func() (Lease, error) { return w.AcquireWait(ctx, key, ttl, wait) })
}

// ErrRunEnded is the cause with which the runner cancels a waiting acquire
// when the run ends. A waiting acquire cut short so with an unknown outcome is
// left pending in the history (docs/history.md §1): the worker was still
// waiting when the record ended, and nothing it learned since is recorded.
// It is lockapi.ErrRunEnded.
var ErrRunEnded = lockapi.ErrRunEnded

// acquire records the acquire that call performs.
func (r *Recorded) acquire(ctx context.Context, key string, ttl time.Duration, call func() (Lease, error)) (Lease, error) {
	inv := r.Rec.Record(history.Op{Process: r.Proc.ID(), Client: r.Proc.Worker(), Type: history.Invoke, F: history.FAcquire, Key: key, TTL: ttl})
	l, err := call()
	if err != nil && !errors.Is(err, ErrNotAcquired) && errors.Is(context.Cause(ctx), ErrRunEnded) {
		return l, err // still waiting when the run ended: pending
	}
	done := history.Op{Process: r.Proc.ID(), Client: r.Proc.Worker(), F: history.FAcquire, Key: key}
	if err == nil {
		r.granted(&done, l, inv.Time)
		done.Session = l.Session
	}
	r.complete(done, err, ErrNotAcquired)
	return l, err
}

// ErrNoRenewal reports a renewal asked of an algorithm that cannot renew (its
// Locker is not a Renewer). Nothing is sent or recorded.
var ErrNoRenewal = errors.New("clients: the algorithm cannot renew a lease")

// Renew records and performs a renewal of l for ttl: a `renew` invoke with the
// ttl and the lease's token, completed ok with the new until and the lease the
// service granted (counted from the invoke), fail when the lease was
// definitely not held (ErrNotHeld), info otherwise.
func (r *Recorded) Renew(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	if r.Locker == nil {
		return Lease{}, errNoClient
	}
	rn, ok := r.Locker.(Renewer)
	if !ok {
		return Lease{}, ErrNoRenewal
	}
	inv := r.Rec.Record(history.Op{Process: r.Proc.ID(), Client: r.Proc.Worker(), Type: history.Invoke, F: history.FRenew, Key: l.Key, TTL: ttl, Token: l.Token})
	nl, err := rn.Renew(ctx, l, ttl)
	done := history.Op{Process: r.Proc.ID(), Client: r.Proc.Worker(), F: history.FRenew, Key: l.Key, Token: l.Token}
	if err == nil {
		r.granted(&done, nl, inv.Time)
	}
	r.complete(done, err, ErrNotHeld)
	return nl, err
}

// granted fills the ok of an acquire or renewal invoked at harness time
// invoked with what l grants: its token, its until, and its `lease`:
// history.NoLease when the service never frees the lock on its own, else the
// time from the invoke to l.Expires (at least 1 ns: a lease never ends
// before it was asked for), or absent when the algorithm states neither.
func (r *Recorded) granted(done *history.Op, l Lease, invoked time.Duration) {
	done.Type = history.OK
	done.Token = l.Token
	if !l.Until.IsZero() {
		done.Until = r.Rec.Since(l.Until)
	}
	switch {
	case l.Never:
		done.Lease = history.NoLease
	case !l.Expires.IsZero():
		done.Lease = max(r.Rec.Since(l.Expires)-invoked, 1)
	}
}

// Release records and performs a release. A release the algorithm does not
// perform on the server (ErrReleaseNoOp) is recorded as fail: the holder
// stops believing at its invoke, and the lock is freed only by its lease.
func (r *Recorded) Release(ctx context.Context, l Lease) error {
	r.Rec.Record(history.Op{Process: r.Proc.ID(), Client: r.Proc.Worker(), Type: history.Invoke, F: history.FRelease, Key: l.Key, Token: l.Token})
	err := r.Locker.Release(ctx, l)
	done := history.Op{Process: r.Proc.ID(), Client: r.Proc.Worker(), Type: history.OK, F: history.FRelease, Key: l.Key, Token: l.Token}
	r.complete(done, err, ErrNotHeld, ErrReleaseNoOp)
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

// Close closes the wrapped Locker, if the process has one.
func (r *Recorded) Close() error {
	if r.Locker == nil {
		return nil
	}
	return r.Locker.Close()
}

// complete records the completion of the op in done: ok when err is nil,
// fail when err is definite, info (and a crash) otherwise.
func (r *Recorded) complete(done history.Op, err error, definite ...error) {
	switch {
	case err == nil:
		done.Type = history.OK
	case isAny(err, definite):
		done.Type = history.Fail
		done.Error = err.Error()
		done.Until, done.Lease, done.Session = 0, 0, false
	default:
		done.Type = history.Info
		done.Error = err.Error()
		done.Until, done.Lease, done.Session = 0, 0, false
		done.Kept = r.Keeps(err)
	}
	r.Rec.Record(done)
	if done.Type == history.Info {
		r.Crash(done.Kept)
	}
}

// Keeps reports whether an info caused by err keeps the process's Locker:
// with KeepClient, unless the call closed its client (ErrClientClosed).
// The runner asks it for the infos it records itself (a resource write).
func (r *Recorded) Keeps(err error) bool {
	return r.KeepClient && r.Locker != nil && !errors.Is(err, ErrClientClosed)
}

// isAny reports whether err matches any of targets.
func isAny(err error, targets []error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}
