// Command redsync-extend is go-redsync/redsync's Mutex behind jepsen-lite's
// lock-client protocol, built against two versions of the library: go.mod
// pins v4.12.0, whose Extend unlocks the key on every master when the
// extension fails on one of them, and fixed.mod pins v4.12.1, which took
// that clean-up out again (go-redsync/redsync pull request #150, "[bug]
// Remove clean up on extend fail"). The source is the same for both:
//
//	go build -o redsync-v4.12.0 .
//	go build -modfile=fixed.mod -o redsync-v4.12.1 .
//
// In v4.12.0, Mutex.touch, the extension on one master, runs the release
// script on every master (actOnPoolsAsync) when its own script returns an
// error. Extend counts the masters that extended the key in parallel, so
// when one master is unreachable and the others extended the key before
// the clean-up reached them, Extend reports success and a new validity,
// while the key is gone from every master: the lock is free for anyone
// while its holder believes it holds it for another ttl.
//
// One Mutex per acquire, with an owner value drawn from the process's seed,
// over every master of the worker's endpoints, one try (WithTries(1)).
// The client's own validity is the library's Mutex.Until; the lease the
// masters granted is the ttl (SET PX, PEXPIRE), counted from before the call.
package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/jepsen-lite/jepsen-lite/examples/knownbugs/lockclient"
	"github.com/redis/go-redis/v9"
)

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

// unreached reports whether err names a master that failed with an error
// other than "taken" or "expired", on which the call may have taken effect.
func unreached(err error) bool {
	var re *redsync.RedisError
	return errors.As(err, &re)
}

// Acquire tries the Mutex once. When no quorum set the key, redsync
// unlocked what it set; the outcome is certain unless some master failed
// with an error.
func (c *client) Acquire(ctx context.Context, key string, ttl, _ time.Duration) (lockclient.Grant, error) {
	value := fmt.Sprintf("p%d-%016x", c.process, c.rng.Uint64())
	m := c.rs.NewMutex(key, redsync.WithExpiry(ttl), redsync.WithTries(1),
		redsync.WithGenValueFunc(func() (string, error) { return value, nil }))
	if err := m.LockContext(ctx); err != nil {
		var taken *redsync.ErrTaken
		if errors.As(err, &taken) || errors.Is(err, redsync.ErrFailed) || !unreached(err) {
			return lockclient.Grant{}, fmt.Errorf("%w: %w", err, lockclient.ErrNotAcquired)
		}
		return lockclient.Grant{}, err
	}
	c.held[value] = hold{m: m, ttl: ttl}
	return lockclient.Grant{Owner: value, Until: m.Until(), Lease: ttl}, nil
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
	case unreached(err):
		return fmt.Errorf("unlock: %w", err)
	default:
		return fmt.Errorf("unlock: no quorum of masters had our key (%v): %w", err, lockclient.ErrNotHeld)
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
	ok, err := h.m.ExtendContext(ctx)
	switch {
	case ok:
		return lockclient.Grant{Owner: owner, Until: h.m.Until(), Lease: h.ttl}, nil
	case errors.Is(err, redsync.ErrExtendFailed) || unreached(err):
		// Extended too late to use, or some master failed: unknown.
		return lockclient.Grant{}, fmt.Errorf("extend: %w", err)
	default:
		return lockclient.Grant{}, fmt.Errorf("extend: no quorum of masters had our key (%v): %w", err, lockclient.ErrNotHeld)
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
