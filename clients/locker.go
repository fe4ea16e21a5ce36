// Package clients owns the lock algorithms under test, each behind the one
// Locker interface; the recording wrapper that writes every call into the
// history the same honest way; and the protected resource the workload writes
// to (a register per key, fenced or unfenced).
package clients

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"time"
)

// ErrNotAcquired reports that the lock was definitely not acquired (it is
// held by someone else, no quorum granted it, or the acquire failed before
// any step that can take the lock: Step) and that nothing needs to be
// undone. The recording wrapper records it as fail; every other error is
// indeterminate and recorded as info.
var ErrNotAcquired = errors.New("clients: lock not acquired")

// ErrNotHeld reports that a release or renewal definitely did nothing because
// the caller did not hold the lock (any more). It is recorded as fail.
var ErrNotHeld = errors.New("clients: lock not held")

// ErrReleaseNoOp reports a release that the algorithm does not perform on
// the server (the timeout locks: the lock frees itself when its lease ends).
// The recording wrapper records it as fail, so that nothing reads it as a
// release that freed the lock.
var ErrReleaseNoOp = errors.New("clients: release does nothing on the server: the lock frees itself when its lease ends")

// ErrClientClosed reports a call that closed its own client to return: an
// algorithm whose library call cannot be abandoned any other way
// (go-zookeeper's zk.Lock) gives up a wait so. The outcome is indeterminate,
// and the client is gone even when the scenario keeps clients after errors
// (Recorded.KeepClient).
var ErrClientClosed = errors.New("clients: the call closed its client to return")

// ErrHoldEnded is the cause (context.Cause) with which the runner ends the
// context it gave a successful Acquire, once the hold is over.
var ErrHoldEnded = errors.New("clients: the hold ended")

// Locker is one client's handle on a lock algorithm. A Locker is used by one
// worker at a time; the runner makes one per worker.
type Locker interface {
	// Acquire tries once to take the lock on key for ttl. It returns
	// ErrNotAcquired (wrapped or not) when the lock definitely was not taken.
	//
	// The runner's ctx lives as long as the hold, so a library may tie a
	// heartbeat or a keepalive to it. While Acquire runs, ctx has the
	// call's deadline and ends with context.DeadlineExceeded when the call
	// runs past it (the call is then recorded as info, whatever it
	// returns). Once Acquire returned, ctx has no deadline: when the
	// acquire failed, it ends at once; when it succeeded, it ends with the
	// cause ErrHoldEnded after the hold, once Release has returned (or
	// when the process crashed, or the run was aborted). A waiting acquire
	// (Waiter) gets the same context.
	Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error)
	// Release gives the lease back. It returns ErrNotHeld when the lease was
	// definitely no longer held.
	Release(ctx context.Context, l Lease) error
	// Close releases the Locker's connections. It does not release leases.
	Close() error
}

// Lease is what a successful Acquire returns.
//
// Expires and Never state what the service itself granted (the lease
// semantics of the algorithm's declaration): Expires is the earliest instant, from
// time.Now, at which the service may free the lock on its own, without a
// release; Never is set instead when it never does. An algorithm sets exactly
// one of them. Session is set when closing the client frees the lock.
type Lease struct {
	Key     string
	Token   uint64    // fencing token; 0 when the algorithm has none
	Until   time.Time // client-side validity end, from time.Now (monotonic); zero when none (session locks)
	Owner   string    // the random value / node path / session that identifies us
	Expires time.Time // earliest instant the service may free the lock without a release
	Never   bool      // the service never frees the lock on its own
	Session bool      // closing the client frees the lock
}

// Renewer is a Locker that can extend a lease it holds.
type Renewer interface {
	Renew(ctx context.Context, l Lease, ttl time.Duration) (Lease, error)
}

// LeaseWatcher is a Locker whose leases can be lost behind the holder's back
// (session locks: ZooKeeper, etcd). Lost returns a channel that is closed when
// the algorithm learns that l is no longer held.
type LeaseWatcher interface {
	Lost(l Lease) <-chan struct{}
}

// Clock is a worker's own wall clock. Algorithms that send a client timestamp
// (the timeout locks) read it here, so the nemesis can skew one worker's clock
// without touching the host's.
type Clock interface {
	Now() time.Time
}

// Endpoint is one node as a worker sees it: its name and the address of the
// worker's own proxy to it.
type Endpoint struct {
	Name string
	Addr string
	Role string // "primary", "replica", "sentinel", "" for peers
}

// Target is everything a Locker factory needs to build one worker's Locker.
type Target struct {
	Worker    int
	Process   int    // the history process the Locker serves (Worker for the first)
	System    string // the system under test: "redis", "postgres", "zookeeper", "etcd"
	Endpoints []Endpoint
	Clock     Clock
	Rand      *rand.Rand        // the worker's own source, derived from the run's seed
	Drift     time.Duration     // clock drift allowance subtracted from Until
	Options   map[string]string // algorithm options from the scenario
	TCP       TCP               // the TCP timeouts of every connection the Locker opens (the scenario's tcp)
	// Log receives what a Locker has to say about itself in run.log (an
	// external client's standard error); nil discards it.
	Log io.Writer
}

// Factory builds one worker's Locker.
type Factory func(ctx context.Context, t Target) (Locker, error)

// Step is one request of an acquire, up to and including the ones that can
// take the lock (a read of what was taken, after them, is no step of its
// own). Grants says whether the request can take the lock. An acquire that fails at a step before any step that can
// take the lock certainly took nothing, whatever the failure (a network
// error included): its error wraps ErrNotAcquired and it is recorded as
// fail. A failure at or after a step that can take the lock is
// indeterminate (info) unless the algorithm knows the step was never sent
// or undid what it may have taken.
type Step struct {
	Name   string // the step's name in the acquire's errors: "create", "acquire", ...
	Sends  string // what it sends
	Grants bool   // it can take the lock
}

// beforeGrantError is the error of an acquire whose step failed before any
// step that can take the lock was sent (Step.Grants): the acquire certainly
// took nothing. It wraps the step's own error and ErrNotAcquired.
type beforeGrantError struct {
	step string
	err  error
}

// beforeGrant returns the error of an acquire that failed with err at step,
// a step before any that can take the lock.
func beforeGrant(step string, err error) error { return &beforeGrantError{step: step, err: err} }

func (e *beforeGrantError) Error() string {
	return e.step + " failed before any step that can take the lock: " + e.err.Error()
}

func (e *beforeGrantError) Unwrap() []error { return []error{e.err, ErrNotAcquired} }

// unsentError is the error of an acquire whose step that can take the lock
// was never sent, as err proves: the acquire certainly took nothing. It
// wraps err and ErrNotAcquired.
type unsentError struct {
	step string
	err  error
}

func (e *unsentError) Error() string {
	return e.step + " was never sent: " + e.err.Error()
}

func (e *unsentError) Unwrap() []error { return []error{e.err, ErrNotAcquired} }

// redisStepError returns the error of a Redis acquire whose step, one that
// can take the lock, failed with err: definite (unsentError) when the
// command never left the client because its connection could not be opened
// (neverSent), err itself otherwise.
func redisStepError(step string, err error) error {
	if neverSent(err) {
		return &unsentError{step: step, err: err}
	}
	return err
}
