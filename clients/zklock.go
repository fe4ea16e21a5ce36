package clients

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// ZKLock is go-zookeeper's own lock, zk.Lock, at the version the harness
// imports (v1.0.4), called as its users call it: one zk.NewLock per key on
// the Locker's connection, Lock to take it and Unlock to give it back.
//
// Lock creates a protected ephemeral sequential node under /locks/<key> and
// waits, without a bound, until every lower node is gone; the library has
// neither a try nor a way to cancel the wait. So Acquire waits like
// AcquireWait, until ctx's deadline, and a wait that must end before Lock
// returns ends by closing the connection (the only way to stop Lock), which
// ends the session and deletes its nodes: that error wraps ErrClientClosed
// (indeterminate: Lock may have won just before the close). Lock's own
// errors are indeterminate, but for zk.ErrDeadlock (this Lock instance still
// holds the node of an earlier Lock whose Unlock failed: nothing is sent),
// which is ErrNotAcquired.
//
// Leases have no token: zk.Lock keeps its node's path and sequence
// unexported. The lease is the session's, as for zk-recipe: the negotiated
// session timeout after the call (Lease.Expires, Session), and as a
// LeaseWatcher a lease is lost at the first Disconnected event, when the
// session expires, or when a new session replaced it. Release calls Unlock:
// zk.ErrNotLocked, or a node already gone (zk.ErrNoNode), is ErrNotHeld; a
// lease that this Locker no longer holds (released, or taken again since) is
// ErrNotHeld without a call, since Unlock would free the newer one.
// Options: "session-timeout" (default DefaultZKSessionTimeout).
type ZKLock struct {
	conn *zk.Conn

	// negotiated is the session timeout the server granted, in ns (see
	// zkLogger).
	negotiated atomic.Int64

	mu      sync.Mutex
	session int64               // the current session's id, 0 while there is none
	locks   map[string]*zk.Lock // by key, made once per key as users do
	held    map[string]zkHeld   // by key
	grants  int                 // numbers the leases' owners
}

// zkHeld is a lease zk.Lock holds for us.
type zkHeld struct {
	owner string
	zkLease
}

var (
	_ Locker       = (*ZKLock)(nil)
	_ Waiter       = (*ZKLock)(nil)
	_ LeaseWatcher = (*ZKLock)(nil)
)

// NewZKLock is the zk-lock Factory; the client connects to every endpoint
// that is not a replica or sentinel.
func NewZKLock(ctx context.Context, t Target) (Locker, error) {
	const name = "zk-lock"
	opts, err := readOptions(name, t.Options, zkLockOptions, false)
	if err != nil {
		return nil, err
	}
	sessionTimeout := opts.duration(optZKSessionTimeout)
	z := &ZKLock{locks: map[string]*zk.Lock{}, held: map[string]zkHeld{}}
	// Events wait on z.mu until z.conn is set.
	z.mu.Lock()
	defer z.mu.Unlock()
	conn, err := zkConnect(name, t, sessionTimeout, &z.negotiated, z.onEvent)
	if err != nil {
		return nil, err
	}
	z.conn = conn
	return z, nil
}

// onEvent follows the session's state, as ZKRecipe.onEvent does.
func (z *ZKLock) onEvent(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	if lost := zkFollow(ev, z.conn, &z.session); lost != nil {
		z.loseLocked(func(h zkHeld) bool { return lost(h.session) })
	}
}

// loseLocked marks every held lease that match selects as lost. zk.Lock
// still believes it holds: only Unlock clears that. z.mu is held.
func (z *ZKLock) loseLocked(match func(zkHeld) bool) {
	for key, h := range z.held {
		if match(h) && h.lost != nil {
			close(h.lost)
			h.lost = nil
			z.held[key] = h
		}
	}
}

// Lost returns a channel closed when the lease's session may have ended;
// for a lease that is not held it is already closed.
func (z *ZKLock) Lost(l Lease) <-chan struct{} {
	z.mu.Lock()
	defer z.mu.Unlock()
	if h, ok := z.held[l.Key]; ok && h.owner == l.Owner && h.lost != nil {
		return h.lost
	}
	closed := make(chan struct{})
	close(closed)
	return closed
}

// Acquire waits for the lock until ctx's deadline (without one, for as long
// as Lock waits): zk.Lock cannot try.
func (z *ZKLock) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	return z.acquire(ctx, key, 0)
}

// AcquireWait waits for the lock up to wait (0: until ctx ends).
func (z *ZKLock) AcquireWait(ctx context.Context, key string, ttl, wait time.Duration) (Lease, error) {
	return z.acquire(ctx, key, wait)
}

// acquire calls zk.Lock, one step (zkLockSteps): it creates the parents,
// the lock node and waits in one library call whose errors do not say which
// request failed, so any error but zk.ErrDeadlock (nothing sent) is
// indeterminate.
func (z *ZKLock) acquire(ctx context.Context, key string, wait time.Duration) (Lease, error) {
	if key == "" || strings.Contains(key, "/") {
		return Lease{}, fmt.Errorf("clients: zk-lock: key %q must be a non-empty node name without '/'", key)
	}
	z.mu.Lock()
	lock, ok := z.locks[key]
	if !ok {
		lock = zk.NewLock(z.conn, zkLocksRoot+"/"+key, zk.WorldACL(zk.PermAll))
		z.locks[key] = lock
	}
	z.mu.Unlock()

	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- lock.Lock() }()
	var bound <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		bound = t.C
	}
	var err error
	select {
	case err = <-done:
	case <-bound:
		return Lease{}, z.abandon(key, done, fmt.Sprintf("still waiting after %v", wait))
	case <-ctx.Done():
		return Lease{}, z.abandon(key, done, context.Cause(ctx).Error())
	}
	switch {
	case errors.Is(err, zk.ErrDeadlock):
		return Lease{}, fmt.Errorf("clients: zk-lock: %s: %w: %w", key, err, ErrNotAcquired)
	case err != nil:
		return Lease{}, fmt.Errorf("clients: zk-lock: lock %s: %w", key, err)
	}
	negotiated := time.Duration(z.negotiated.Load())
	z.mu.Lock()
	defer z.mu.Unlock()
	z.grants++
	owner := fmt.Sprintf("%s/%s#%d", zkLocksRoot, key, z.grants)
	h := zkHeld{owner: owner, zkLease: zkLease{session: z.session, lost: make(chan struct{})}}
	if z.session == 0 {
		// Disconnected as Lock returned: the lease is lost already.
		close(h.lost)
		h.lost = nil
	}
	z.held[key] = h
	return Lease{Key: key, Owner: owner, Expires: start.Add(negotiated), Session: true}, nil
}

// abandon stops a Lock that is still waiting, by closing the connection,
// and returns the error that says so.
func (z *ZKLock) abandon(key string, done <-chan error, why string) error {
	z.conn.Close()
	if err := <-done; err == nil {
		return fmt.Errorf("clients: zk-lock: lock %s: won as the wait ended (%s), and closing the client gave it back: %w", key, why, ErrClientClosed)
	}
	return fmt.Errorf("clients: zk-lock: lock %s: %s; zk.Lock cannot be abandoned but by closing the client: %w", key, why, ErrClientClosed)
}

// Release calls the key's Unlock for the lease it holds.
func (z *ZKLock) Release(ctx context.Context, l Lease) error {
	z.mu.Lock()
	h, ok := z.held[l.Key]
	lock := z.locks[l.Key]
	if !ok || h.owner != l.Owner || lock == nil {
		z.mu.Unlock()
		return fmt.Errorf("clients: zk-lock: release %s: %w", l.Owner, ErrNotHeld)
	}
	delete(z.held, l.Key)
	if h.lost != nil {
		close(h.lost)
	}
	z.mu.Unlock()
	err := lock.Unlock()
	switch {
	case err == nil:
		return nil
	case errors.Is(err, zk.ErrNotLocked), errors.Is(err, zk.ErrNoNode):
		return fmt.Errorf("clients: zk-lock: release %s: %w: %w", l.Owner, err, ErrNotHeld)
	default:
		return fmt.Errorf("clients: zk-lock: release %s: %w", l.Owner, err)
	}
}

// Close closes the session, which deletes its ephemeral nodes.
func (z *ZKLock) Close() error {
	z.conn.Close()
	return nil
}
