// Command redsync-release is go-redsync/redsync's Mutex behind jepsen-lite's
// lock-client protocol, built against two versions of the library: go.mod
// pins v4.0.3, whose Unlock and Extend report success on a key that is no
// longer ours, and fixed.mod pins v4.0.4, which fixed them
// (go-redsync/redsync pull request #61). The source is the same for both:
//
//	go build -o redsync-v4.0.3 .
//	go build -modfile=fixed.mod -o redsync-v4.0.4 .
//
// In v4.0.3 the release script's reply, an int64 inside an interface{}, is
// compared with the untyped constant 0 (an int): `status != 0` is true for
// every reply, 0 included. The extend script's reply is compared with the
// string "ERR", which it never is. So Unlock and Extend count every master
// that answered as one where the key was ours. v4.0.4 compares both with
// int64(0).
//
// One Mutex per acquire, with an owner value drawn from the process's seed,
// over every master of the worker's endpoints, one
// try (WithTries(1)). The client's own validity is redsync's:
// ttl − elapsed − ttl × 0.01 from the start of the call (v4.0.3 keeps it
// private, so it is computed here the same way). The lease the masters
// granted is the ttl (SET PX), counted from before the call.
package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/go-redis/redis/v8"
	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v8"
	"github.com/jepsen-lite/jepsen-lite/examples/knownbugs/lockclient"
)

// driftFactor is redsync's default clock drift factor.
const driftFactor = 0.01

// client holds the Mutexes this process acquired, by their values.
type client struct {
	clients []*redis.Client
	rs      *redsync.Redsync
	held    map[string]hold
	// process and rng make the owner values: unique to the process, drawn
	// from its seed.
	process int
	rng     *rand.Rand
}

// hold is an acquired Mutex and the ttl it was acquired with, which its
// Extend renews.
type hold struct {
	m   *redsync.Mutex
	ttl time.Duration
}

// open connects to every master of the worker's endpoints (go-redis
// connects lazily, on the first request).
func open(in lockclient.Init) (lockclient.Client, error) {
	addrs := in.Addrs()
	if len(addrs) == 0 {
		return nil, fmt.Errorf("no redis endpoints in %v", in.Endpoints)
	}
	c := &client{held: map[string]hold{}, process: in.Process, rng: rand.New(rand.NewPCG(in.Seed, uint64(in.Process)))}
	var pools []redsyncredis.Pool
	for _, a := range addrs {
		rc := redis.NewClient(&redis.Options{Addr: a})
		c.clients = append(c.clients, rc)
		pools = append(pools, goredis.NewPool(rc))
	}
	c.rs = redsync.New(pools...)
	return c, nil
}

// Acquire tries the Mutex once.
func (c *client) Acquire(ctx context.Context, key string, ttl, _ time.Duration) (lockclient.Grant, error) {
	value := fmt.Sprintf("p%d-%016x", c.process, c.rng.Uint64())
	m := c.rs.NewMutex(key, redsync.WithExpiry(ttl), redsync.WithTries(1),
		redsync.WithGenValueFunc(func() (string, error) { return value, nil }))
	start := time.Now()
	if err := m.LockContext(ctx); err != nil {
		if err == redsync.ErrFailed {
			// No quorum set the key; redsync unlocked what it set.
			return lockclient.Grant{}, fmt.Errorf("%w: %w", err, lockclient.ErrNotAcquired)
		}
		return lockclient.Grant{}, err
	}
	c.held[value] = hold{m: m, ttl: ttl}
	return lockclient.Grant{Owner: value, Until: validity(start, ttl), Lease: ttl}, nil
}

// validity is redsync's own: the ttl from start, less the drift.
func validity(start time.Time, ttl time.Duration) time.Time {
	return start.Add(ttl - time.Duration(float64(ttl)*driftFactor))
}

// Release unlocks the Mutex that acquired owner.
func (c *client) Release(ctx context.Context, _, owner string) error {
	h, ok := c.held[owner]
	if !ok {
		return fmt.Errorf("release %s: not acquired by this process: %w", owner, lockclient.ErrNotHeld)
	}
	delete(c.held, owner)
	ok, err := h.m.UnlockContext(ctx)
	switch {
	case ok:
		return nil
	case err != nil:
		return fmt.Errorf("unlock: %w", err)
	default:
		return fmt.Errorf("unlock: no quorum of masters had our key: %w", lockclient.ErrNotHeld)
	}
}

// Renew extends the lease with Extend, which sets the Mutex's own expiry,
// the ttl it was acquired with, whatever ttl the request asks for (the
// harness renews with the ttl it acquired with).
func (c *client) Renew(ctx context.Context, _, owner string, _ time.Duration) (lockclient.Grant, error) {
	h, ok := c.held[owner]
	if !ok {
		return lockclient.Grant{}, fmt.Errorf("renew %s: not acquired by this process: %w", owner, lockclient.ErrNotHeld)
	}
	start := time.Now()
	ok, err := h.m.ExtendContext(ctx)
	switch {
	case ok:
		return lockclient.Grant{Owner: owner, Until: validity(start, h.ttl), Lease: h.ttl}, nil
	case err != nil:
		return lockclient.Grant{}, fmt.Errorf("extend: %w", err)
	default:
		return lockclient.Grant{}, fmt.Errorf("extend: no quorum of masters had our key: %w", lockclient.ErrNotHeld)
	}
}

// Close closes the connections to the masters.
func (c *client) Close() error {
	for _, rc := range c.clients {
		_ = rc.Close()
	}
	return nil
}

func main() {
	lockclient.Main(lockclient.Program{
		Name:      "go-redsync/redsync " + lockclient.ModuleVersion("github.com/go-redsync/redsync/v4") + " Mutex (Go)",
		Abilities: []string{"renew"},
		Open:      open,
	})
}
