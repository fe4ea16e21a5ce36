// Command gozero-redislock is go-zero's RedisLock (core/stores/redis)
// behind jepsen-lite's lock-client protocol, built against two versions of
// the library, one source for both:
//
//	go build -o gozero-v1.3.1 .
//	go build -modfile=fixed.mod -o gozero-v1.3.2 .
//
// A RedisLock's holder keeps its key alive by calling Acquire again: the
// lock script sets the key's expiry anew when the key holds the lock's own
// id. go.mod pins v1.3.1, in which Acquire counts re-entrant calls instead
// (zeromicro/go-zero pull request 1366, for issue 1338): a second Acquire
// on the same RedisLock returns true at once, without a word to Redis, and
// the key expires on the expiry of the first Acquire while its holder
// believes it renewed it; Release, which counts the calls down, returns
// true without deleting the key until the count is back to zero.
// fixed.mod pins v1.3.2, which removed the count and brought back the
// script (pull request 1704, "remove reentrance in redislock, timeout
// bug").
//
// One RedisLock per acquire, with the expiry (SetExpire, whole seconds) the
// ttl rounded up to a second; the grant reports that expiry as its lease
// (the library adds a tolerance to the key's own expiry, 1 s in v1.3.1 and
// 500 ms in v1.3.2, which the lease leaves out). A renewal is the holder's
// Acquire on its RedisLock. The library has no waiting acquire.
package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/jepsen-lite/jepsen-lite/examples/knownbugs/lockclient"
)

// client holds the RedisLocks this process acquired, by owner values of its
// own (the library's ids are not exported).
type client struct {
	store *redis.Redis
	held  map[string]hold
	// process and rng make the owner values: unique to the process, drawn
	// from its seed.
	process int
	rng     *rand.Rand
}

// hold is an acquired RedisLock and the expiry it was acquired with.
type hold struct {
	lock  *redis.RedisLock
	lease time.Duration
}

// open records the worker's Redis node; go-zero connects on the first
// request.
func open(in lockclient.Init) (lockclient.Client, error) {
	addrs := in.Addrs()
	if len(addrs) == 0 {
		return nil, fmt.Errorf("no redis endpoints in %v", in.Endpoints)
	}
	return &client{store: redis.New(addrs[0]), held: map[string]hold{},
		process: in.Process, rng: rand.New(rand.NewPCG(in.Seed, uint64(in.Process)))}, nil
}

// seconds returns ttl rounded up to whole seconds, at least one: the
// expiry a RedisLock takes.
func seconds(ttl time.Duration) int {
	return max(1, int((ttl+time.Second-1)/time.Second))
}

// Acquire tries a new RedisLock once. Acquire's false is certain (the
// key was set by another); an error may have set the key.
func (c *client) Acquire(_ context.Context, key string, ttl, _ time.Duration) (lockclient.Grant, error) {
	s := seconds(ttl)
	l := redis.NewRedisLock(c.store, key)
	l.SetExpire(s)
	ok, err := l.Acquire()
	switch {
	case err != nil:
		return lockclient.Grant{}, fmt.Errorf("acquire: %w", err)
	case !ok:
		return lockclient.Grant{}, fmt.Errorf("acquire: the key is another's: %w", lockclient.ErrNotAcquired)
	}
	owner := fmt.Sprintf("p%d-%016x", c.process, c.rng.Uint64())
	lease := time.Duration(s) * time.Second
	c.held[owner] = hold{lock: l, lease: lease}
	return lockclient.Grant{Owner: owner, Lease: lease}, nil
}

// Release releases the RedisLock that acquired owner: not-held when the
// library found the key another's.
func (c *client) Release(_ context.Context, _, owner string) error {
	h, ok := c.held[owner]
	if !ok {
		return fmt.Errorf("release %s: not acquired by this process: %w", owner, lockclient.ErrNotHeld)
	}
	delete(c.held, owner)
	ok, err := h.lock.Release()
	switch {
	case err != nil:
		return fmt.Errorf("release: %w", err)
	case !ok:
		return fmt.Errorf("release: the key was not ours: %w", lockclient.ErrNotHeld)
	}
	return nil
}

// Renew calls Acquire again on the holder's RedisLock, which sets the
// key's expiry anew (v1.3.2) with the expiry the lock was acquired with,
// whatever ttl the request asks for (the harness renews with the ttl it
// acquired with). Its false is certain: the key was another's.
func (c *client) Renew(_ context.Context, _, owner string, _ time.Duration) (lockclient.Grant, error) {
	h, ok := c.held[owner]
	if !ok {
		return lockclient.Grant{}, fmt.Errorf("renew %s: not acquired by this process: %w", owner, lockclient.ErrNotHeld)
	}
	ok, err := h.lock.Acquire()
	switch {
	case err != nil:
		return lockclient.Grant{}, fmt.Errorf("renew: %w", err)
	case !ok:
		return lockclient.Grant{}, fmt.Errorf("renew: the key is another's: %w", lockclient.ErrNotHeld)
	}
	return lockclient.Grant{Owner: owner, Lease: h.lease}, nil
}

// Close lets the process end: go-zero's connections close with it.
func (c *client) Close() error {
	return nil
}

func main() {
	lockclient.Main(lockclient.Program{
		Name:      "zeromicro/go-zero " + lockclient.ModuleVersion("github.com/zeromicro/go-zero") + " RedisLock (Go)",
		Abilities: []string{"renew"},
		Open:      open,
	})
}
