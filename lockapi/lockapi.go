// Package lockapi owns the types a lock of one's own implements to go under
// jepsen-lite (Locker and its optional abilities, Lease, Target, Factory and
// the sentinel errors), declared once, and the client side of the
// lock-client protocol for them (Serve, Main): a program or test of the
// user's module serves its Locker to the harness, which runs it as an
// external lock client (docs/lock-protocol.md). Run, Replay, Shrink, Hunt,
// Datasheet and ProtocolTest drive the harness's command line from Go.
//
// The module requires nothing but the standard library, so that the user's
// module graph never meets the harness's: the user's go.mod keeps its
// versions of go-redis, pgx or any other library the harness also uses; the
// harness is a binary the user's test drives (docs/own-lock.md).
//
// The harness's package clients declares these names as aliases of this
// package's, so that a Locker is the same type on both sides and errors.Is
// holds across them. The errors' texts keep the prefix "clients:" that they
// had when clients declared them: stored histories, results.json files and
// test fixtures quote them.
package lockapi

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"time"
)

// ErrNotAcquired reports that the lock was definitely not acquired (it is
// held by someone else, no quorum granted it, or the acquire failed before
// any step that can take the lock) and that nothing needs to be undone. The
// harness records it as fail; every other error is indeterminate and
// recorded as info.
var ErrNotAcquired = errors.New("clients: lock not acquired")

// ErrNotHeld reports that a release or renewal definitely did nothing because
// the caller did not hold the lock (any more). It is recorded as fail.
var ErrNotHeld = errors.New("clients: lock not held")

// ErrReleaseNoOp reports a release that the algorithm does not perform on
// the server (the timeout locks: the lock frees itself when its lease ends).
// The harness records it as fail, so that nothing reads it as a release
// that freed the lock.
var ErrReleaseNoOp = errors.New("clients: release does nothing on the server: the lock frees itself when its lease ends")

// ErrOutcomeUnknown reports an acquire that failed in a way that may still
// have taken the lock on some servers (a quorum of Redlock masters, say)
// without the client learning it. It is indeterminate: it does not wrap
// ErrNotAcquired.
var ErrOutcomeUnknown = errors.New("clients: outcome unknown")

// ErrHoldEnded is the cause (context.Cause) with which the context given to
// a successful Acquire ends, once the hold is over.
var ErrHoldEnded = errors.New("clients: the hold ended")

// ErrRunEnded is the cause with which the harness cancels a waiting acquire
// when the run ends. A waiting acquire cut short so with an unknown outcome
// is left pending in the history (docs/history.md §1).
var ErrRunEnded = errors.New("clients: the run ended while the call waited")

// Locker is one client's handle on a lock algorithm. A Locker is used by one
// worker at a time; the harness makes one per worker (and one per process:
// a new one after every crash).
type Locker interface {
	// Acquire tries once to take the lock on key for ttl. It returns
	// ErrNotAcquired (wrapped or not) when the lock definitely was not taken.
	//
	// ctx lives as long as the hold, so a library may tie a heartbeat or a
	// keepalive to it. When the acquire failed, it ends at once; when it
	// succeeded, it ends with the cause ErrHoldEnded after the hold, once
	// Release has returned (or when the process crashed, or the run was
	// aborted). In the harness's own process (runner.WithLocker) it also has
	// the call's deadline while Acquire runs (docs/own-lock.md). A waiting
	// acquire (Waiter) gets the same context.
	Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error)
	// Release gives the lease back. It returns ErrNotHeld when the lease was
	// definitely no longer held.
	Release(ctx context.Context, l Lease) error
	// Close releases the Locker's connections. It does not release leases.
	Close() error
}

// Lease is what a successful Acquire returns.
//
// Expires and Never state what the service itself granted: Expires is the
// earliest instant, from time.Now, at which the service may free the lock
// on its own, without a release; Never is set instead when it never does.
// A Locker sets exactly one of them. Session is set when closing the client
// frees the lock.
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

// Waiter is a Locker that can wait for a held lock, the way its library
// waits, for up to wait: one blocking acquire, recorded as one op. It
// returns ErrNotAcquired when the lock was still held when the wait ended.
type Waiter interface {
	AcquireWait(ctx context.Context, key string, ttl, wait time.Duration) (Lease, error)
}

// LeaseWatcher is a Locker whose leases can be lost behind the holder's back
// (session locks: ZooKeeper, etcd). Lost returns a channel that is closed
// when the Locker learns that l is no longer held; for a lease it does not
// know, a closed channel.
type LeaseWatcher interface {
	Lost(l Lease) <-chan struct{}
}

// Clock is a worker's own wall clock. A Locker that sends a client
// timestamp (a timeout lock) reads it here, so that the harness can skew one
// worker's clock (the client-clock fault) without touching the host's.
type Clock interface {
	Now() time.Time
}

// Endpoint is one node as a worker sees it: its name and the address of the
// worker's own link to it, the one the harness's faults act on.
type Endpoint struct {
	Name string
	Addr string
	Role string // "primary", "replica", "sentinel", "" for peers
}

// TCP is the TCP timeouts every connection of a lock client is opened with
// (the scenario's `tcp` block; docs/network.md). A zero field keeps what the
// client's library sets by itself (keepalive) or the OS default
// (TCP_USER_TIMEOUT); the zero TCP leaves the libraries' dialers untouched.
type TCP struct {
	// KeepAliveIdle is how long a connection is idle before the first
	// keepalive probe (TCP_KEEPIDLE, whole seconds).
	KeepAliveIdle time.Duration
	// KeepAliveInterval is the time between unanswered keepalive probes
	// (TCP_KEEPINTVL, whole seconds).
	KeepAliveInterval time.Duration
	// KeepAliveCount is how many unanswered probes end the connection
	// (TCP_KEEPCNT).
	KeepAliveCount int
	// UserTimeout is how long sent data may stay unacknowledged before
	// the OS ends the connection (TCP_USER_TIMEOUT, whole milliseconds).
	UserTimeout time.Duration
}

// IsZero reports whether t changes nothing.
func (t TCP) IsZero() bool { return t == TCP{} }

// Target is everything a Locker factory needs to build one worker's Locker.
type Target struct {
	Worker    int
	Process   int    // the history process the Locker serves (Worker for the first)
	System    string // the system under test: "redis", "postgres", "zookeeper", "etcd", "mariadb"
	Endpoints []Endpoint
	Clock     Clock
	Rand      *rand.Rand        // the worker's own source, derived from the run's seed
	Drift     time.Duration     // clock drift allowance subtracted from Until
	Options   map[string]string // lock options from the scenario
	TCP       TCP               // the TCP timeouts of every connection the Locker opens (the scenario's tcp)
	// Log receives what a Locker has to say about itself in run.log; nil
	// discards it.
	Log io.Writer
}

// Factory builds one worker's Locker.
type Factory func(ctx context.Context, t Target) (Locker, error)
