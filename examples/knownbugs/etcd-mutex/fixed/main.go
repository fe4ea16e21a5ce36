// Command fixed is etcd's concurrency.Mutex from the etcd 3.5.0 client
// (module go.etcd.io/etcd/client/v3 v3.5.0) behind jepsen-lite's
// lock-client protocol: the same program as ../buggy, on the client that
// fixed etcd issue 11456. After waitDeletes, its Mutex.Lock reads the
// waiter's own key and returns ErrSessionExpired when the key is gone (the
// waiter's session lease expired while it waited), instead of telling the
// waiter it holds the lock.
//
// Each acquire grants a lease of the ttl rounded up to whole seconds, opens
// a Session on it (which keeps it alive) and takes a Mutex on
// /locks/<key>/: a waiting acquire with Mutex.Lock bounded by the wait, a
// single try with Mutex.TryLock. Release is what the library's users
// write: Mutex.Unlock, then Session.Close, which revokes the lease.
package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/jepsen-lite/jepsen-lite/examples/knownbugs/lockclient"
)

// client holds the sessions and Mutexes of the locks this process holds,
// by their lock keys.
type client struct {
	cli  *clientv3.Client
	held map[string]hold
}

// hold is a held lock's Session and Mutex.
type hold struct {
	s *concurrency.Session
	m *concurrency.Mutex
}

// open connects to every endpoint.
func open(in lockclient.Init) (lockclient.Client, error) {
	addrs := in.Addrs()
	if len(addrs) == 0 {
		return nil, fmt.Errorf("no etcd endpoints in %v", in.Endpoints)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: addrs, DialTimeout: 5 * time.Second})
	if err != nil {
		return nil, err
	}
	return &client{cli: cli, held: map[string]hold{}}, nil
}

// leaseSeconds is the lease TTL for a ttl: whole seconds, rounded up, at
// least 1.
func leaseSeconds(ttl time.Duration) int64 {
	return max(int64((ttl+time.Second-1)/time.Second), 1)
}

// Acquire takes the Mutex on a new session.
func (c *client) Acquire(ctx context.Context, key string, ttl, wait time.Duration) (lockclient.Grant, error) {
	secs := leaseSeconds(ttl)
	grant, err := c.cli.Grant(ctx, secs)
	if err != nil {
		// A lease holds no key: nothing is taken.
		return lockclient.Grant{}, fmt.Errorf("grant: %w: %w", err, lockclient.ErrNotAcquired)
	}
	s, err := concurrency.NewSession(c.cli, concurrency.WithLease(grant.ID), concurrency.WithTTL(int(secs)))
	if err != nil {
		return lockclient.Grant{}, fmt.Errorf("session: %w: %w", err, lockclient.ErrNotAcquired)
	}
	m := concurrency.NewMutex(s, "/locks/"+key)
	if wait > 0 {
		lctx, cancel := context.WithTimeout(ctx, wait)
		err = m.Lock(lctx)
		cancel()
	} else {
		err = m.TryLock(ctx)
	}
	if err != nil {
		// Lock deleted its key; the revoke makes sure nothing is left. A
		// lease etcd no longer knows has taken its key with it.
		if cerr := s.Close(); cerr != nil && !errors.Is(cerr, rpctypes.ErrLeaseNotFound) {
			return lockclient.Grant{}, fmt.Errorf("lock: %w; revoke: %w", err, cerr)
		}
		return lockclient.Grant{}, fmt.Errorf("lock: %w (lease revoked): %w", err, lockclient.ErrNotAcquired)
	}
	c.held[m.Key()] = hold{s: s, m: m}
	// The lease's TTL counts from its grant or its last keep-alive, both
	// after the request was read.
	return lockclient.Grant{Owner: m.Key(), Lease: time.Duration(grant.TTL) * time.Second, Session: true}, nil
}

// Release unlocks the Mutex and closes its session (revoking its lease).
// It is ok when the revoke succeeded: the lease, and so the key, lived
// until our delete or our revoke removed it. Otherwise the outcome is
// unknown.
func (c *client) Release(ctx context.Context, _, owner string) error {
	h, ok := c.held[owner]
	if !ok {
		return fmt.Errorf("release %s: not held by this process: %w", owner, lockclient.ErrNotHeld)
	}
	delete(c.held, owner)
	uerr := h.m.Unlock(ctx)
	if err := h.s.Close(); err != nil {
		return fmt.Errorf("unlock: %v; close session: %w", uerr, err)
	}
	return nil
}

// Renew is not offered (the program does not claim "renew").
func (c *client) Renew(context.Context, string, string, time.Duration) (lockclient.Grant, error) {
	return lockclient.Grant{}, errors.New("renew is not supported")
}

// Close revokes the leases still held and closes the client.
func (c *client) Close() error {
	for _, h := range c.held {
		_ = h.s.Close()
	}
	return c.cli.Close()
}

func main() {
	lockclient.Main(lockclient.Program{
		Name:      "etcd client/v3 " + lockclient.ModuleVersion("go.etcd.io/etcd/client/v3") + " concurrency.Mutex (Go)",
		Abilities: []string{"wait"},
		Open:      open,
	})
}
