package clients

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// RedisSingleDel is redis-single released with a plain DEL key, without
// the compare-and-delete that the Redis documentation's lock asks for
// ("remove the key only if it exists and the value stored at the key is
// exactly the one I expect to be"): the shortcut its text warns of. A
// holder whose lease ran out while it worked deletes the lock of the
// client that took it next, and a third client takes it while the second
// still holds it. Acquire and Renew are redis-single's.
type RedisSingleDel struct {
	*RedisSingle
}

var (
	_ Locker         = (*RedisSingleDel)(nil)
	_ Renewer        = (*RedisSingleDel)(nil)
	_ ResponseHooker = (*RedisSingleDel)(nil)
)

// NewRedisSingleDel is the redis-single-del Factory.
func NewRedisSingleDel(ctx context.Context, t Target) (Locker, error) {
	r, err := newRedisSingle("redis-single-del", t)
	if err != nil {
		return nil, err
	}
	return &RedisSingleDel{r}, nil
}

// Release sends DEL key and succeeds whatever it deleted: it frees the
// lock whoever holds it, and the release of a free lock succeeds.
func (r *RedisSingleDel) Release(ctx context.Context, l Lease) error {
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	if err := r.routes.do(l.Key, func(c *redis.Client) error { return c.Del(cctx, l.Key).Err() }); err != nil {
		return fmt.Errorf("clients: %s: release %s: %w", r.name, l.Key, err)
	}
	return nil
}
