// Command rueidislock-interval is the rueidislock package of
// github.com/rueian/rueidis (the module's name before it moved to
// github.com/redis/rueidis) behind jepsen-lite's lock-client protocol,
// built against two versions of the library, one source for both:
//
//	go build -o rueidislock-v0.0.78 .
//	go build -modfile=fixed.mod -o rueidislock-v0.0.80 .
//
// go.mod pins v0.0.78, whose Locker extends a held key every
// ExtendInterval, by default one second whatever the key's validity, and
// fixed.mod v0.0.80, whose default interval is half the validity (commit
// ddad398, "set rueidislock's default option.ExtendInterval to be half of
// option.KeyValidity", released in v0.0.79, which the module proxy does
// not serve). With a validity shorter than a second and the default
// interval, v0.0.78 lets each key expire before its first extension:
// another client takes the lock while the holder still holds it; the
// library cancels the lock's context only when it finds the key gone.
//
// One Locker per ttl and process: one key per lock (KeyMajority 1), its
// KeyValidity the ttl, its ExtendInterval the library's default (the bug),
// and its TryNextAfter, with one key the timeout of an acquire, half the
// ttl (the default, 20 ms, refuses acquires on a slow link). The fixed
// version is built from the same code (fixed.mod); its Locker waits after
// each extension for Redis's invalidation of its own write, a wait that
// can outlast the key on a loaded machine, after the first extension
// (docs/knownbugs.md), which v0.0.78 never reaches.
//
// A try is TryWithContext; a waiting acquire is WithContext, its wait
// ended by cancelling the context it waits on (the lock's context is a
// child of that context, so it has no deadline of its own). The grant
// reports the validity as its lease and no until: the library extends the
// key by itself for as long as the holder holds it, and tells the holder
// that it lost the lock only by cancelling the lock's context, which this
// program reports at the release (not-held); it sends no lost notices.
package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/rueian/rueidis"
	"github.com/rueian/rueidis/rueidislock"

	"github.com/jepsen-lite/jepsen-lite/examples/knownbugs/lockclient"
)

// client holds the Lockers of this process, by validity, and the locks it
// holds, by their owner values.
type client struct {
	addrs   []string
	lockers map[time.Duration]rueidislock.Locker
	held    map[string]hold
	process int
	rng     *rand.Rand
}

// hold is a held lock: the context the library cancels when the lock is
// lost, and the function that releases it.
type hold struct {
	ctx    context.Context
	cancel context.CancelFunc
	// stop cancels the context the lock's context derives from.
	stop context.CancelFunc
}

// open records the worker's Redis endpoints; the Lockers connect on the
// first acquire of each ttl.
func open(in lockclient.Init) (lockclient.Client, error) {
	addrs := in.Addrs()
	if len(addrs) == 0 {
		return nil, fmt.Errorf("no redis endpoints in %v", in.Endpoints)
	}
	return &client{addrs: addrs, lockers: map[time.Duration]rueidislock.Locker{}, held: map[string]hold{},
		process: in.Process, rng: rand.New(rand.NewPCG(in.Seed, uint64(in.Process)))}, nil
}

// locker returns the process's Locker whose keys are valid for ttl.
func (c *client) locker(ttl time.Duration) (rueidislock.Locker, error) {
	if l, ok := c.lockers[ttl]; ok {
		return l, nil
	}
	opt := rueidislock.LockerOption{
		ClientOption: rueidis.ClientOption{InitAddress: c.addrs[:1]},
		KeyMajority:  1,
		KeyValidity:  ttl,
		TryNextAfter: ttl / 2,
	}
	l, err := rueidislock.NewLocker(opt)
	if err != nil {
		return nil, err
	}
	c.lockers[ttl] = l
	return l, nil
}

// Acquire tries the lock once, or waits for it up to wait.
func (c *client) Acquire(ctx context.Context, key string, ttl, wait time.Duration) (lockclient.Grant, error) {
	l, err := c.locker(ttl)
	if err != nil {
		return lockclient.Grant{}, fmt.Errorf("locker: %w: %w", err, lockclient.ErrNotAcquired)
	}
	src, stop := context.WithCancel(context.Background())
	lctx, cancel, err := c.take(ctx, l, src, stop, key, wait)
	if err != nil {
		stop()
		return lockclient.Grant{}, err
	}
	owner := fmt.Sprintf("p%d-%016x", c.process, c.rng.Uint64())
	c.held[owner] = hold{ctx: lctx, cancel: cancel, stop: stop}
	return lockclient.Grant{Owner: owner, Lease: ttl, Session: true}, nil
}

// take calls TryWithContext, or WithContext until wait ends or ctx (the
// request's) is done, both on src, which stop cancels. An error wraps
// ErrNotAcquired when the library had let go of every key it took.
func (c *client) take(ctx context.Context, l rueidislock.Locker, src context.Context, stop context.CancelFunc, key string, wait time.Duration) (context.Context, context.CancelFunc, error) {
	if wait <= 0 {
		lctx, cancel, err := l.TryWithContext(src, key)
		if errors.Is(err, rueidislock.ErrNotLocked) {
			return nil, nil, fmt.Errorf("try: %w: %w", err, lockclient.ErrNotAcquired)
		}
		return lctx, cancel, err
	}
	ended, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
		case <-ended:
			return
		}
		stop()
	}()
	lctx, cancel, err := l.WithContext(src, key)
	close(ended)
	// Once the goroutine has returned, src is cancelled only if the wait
	// ended before WithContext did (the request's context, which the
	// protocol loop cancels after the reply, can no longer reach it).
	<-done
	switch {
	case err != nil && src.Err() != nil:
		return nil, nil, fmt.Errorf("wait ended: %w: %w", err, lockclient.ErrNotAcquired)
	case err != nil:
		return nil, nil, err
	case lctx.Err() != nil:
		// The wait ended as the lock was granted: the library is
		// letting it go again.
		cancel()
		return nil, nil, errors.New("the wait ended as the lock was granted; the library released it")
	}
	return lctx, cancel, nil
}

// Release cancels the lock's context, which makes the library delete its
// key. It is not-held when the library had already cancelled that context
// itself: it had lost the lock.
func (c *client) Release(_ context.Context, _, owner string) error {
	h, ok := c.held[owner]
	if !ok {
		return fmt.Errorf("release %s: not acquired by this process: %w", owner, lockclient.ErrNotHeld)
	}
	delete(c.held, owner)
	lost := h.ctx.Err()
	h.cancel()
	h.stop()
	if lost != nil {
		return fmt.Errorf("the library had cancelled the lock's context (%v): %w", lost, lockclient.ErrNotHeld)
	}
	return nil
}

// Renew is not offered (the program does not claim "renew"): the library
// extends the key by itself.
func (c *client) Renew(context.Context, string, string, time.Duration) (lockclient.Grant, error) {
	return lockclient.Grant{}, errors.New("renew is not supported")
}

// Close releases what is still held and closes the Lockers.
func (c *client) Close() error {
	for _, h := range c.held {
		h.cancel()
		h.stop()
	}
	for _, l := range c.lockers {
		l.Close()
	}
	return nil
}

func main() {
	lockclient.Main(lockclient.Program{
		Name:      "rueian/rueidis " + lockclient.ModuleVersion("github.com/rueian/rueidis") + " rueidislock (Go)",
		Abilities: []string{"wait"},
		Open:      open,
	})
}
