package clients

import "context"

// The optional abilities of a Locker beyond Renewer and LeaseWatcher, found
// by type assertion.

// ResponseHooker is a Locker that lets the workload run a function between the
// moment the servers' replies to an acquire have arrived and the moment the
// algorithm processes them (computes or checks the lease's validity). The
// workload uses it for the `after-response` pause point: a pause injected
// there is seen by Redlock's elapsed-time check. Implemented by every
// algorithm whose acquire is our own code: redis-single, redis-fenced,
// redlock, the three redis-zadd locks, the five pg locks and the four
// mysql locks;
// not by redsync,
// zk-recipe and etcd-mutex, whose acquire runs inside a library. A nil
// function removes the hook.
type ResponseHooker interface {
	SetAfterResponse(func())
}

// afterResponse holds a ResponseHooker's function; embedded by the lockers
// that implement ResponseHooker.
type afterResponse struct {
	hook func()
}

// SetAfterResponse sets the function run after an acquire's replies arrived
// and before they are processed; nil removes it.
func (a *afterResponse) SetAfterResponse(f func()) { a.hook = f }

func (a *afterResponse) runAfterResponse() {
	if a.hook != nil {
		a.hook()
	}
}

// GuardedResource is a Locker that can keep the workload's register inside
// the locked system itself, with the write guarded by the lease in the same
// statement or transaction, so that no pause between the validity check and
// the write can let a stale holder through (Jepsen's lock-etcd-set).
//
// ReadGuarded returns the register's value for l.Key (0 when never written).
// WriteGuarded stores value for l.Key only while the guard holds, and returns
// an error wrapping ErrStaleToken when the guard rejected the write; any
// other error is indeterminate.
//
// Implemented by the PostgreSQL locks (table guarded_resource, written by
// one upsert whose update applies only while the stored token is <= the
// lease's token; the token-less flavors write token 0, so their writes are
// never rejected) and by etcd-mutex (a transaction that puts
// /resource/<key> only if the lock key still has the lease's create revision;
// a rejection also wraps ErrNotHeld).
type GuardedResource interface {
	ReadGuarded(ctx context.Context, l Lease) (int64, error)
	WriteGuarded(ctx context.Context, l Lease, value int64) error
}

// stepHook holds a function run before each step of an acquire is sent,
// with the step's name (Step.Name); embedded by the lockers whose acquire
// is our own code, so that a test can put a real network fault on exactly
// one step.
type stepHook struct {
	before func(step string)
}

// setBeforeStep sets the function run before each step; nil removes it.
func (h *stepHook) setBeforeStep(f func(step string)) { h.before = f }

func (h *stepHook) step(name string) {
	if h.before != nil {
		h.before(name)
	}
}
