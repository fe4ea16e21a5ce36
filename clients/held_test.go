package clients

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestCutHoldsAcquireUntilAfterHeal checks the fact behind the liveness
// rule for acquires held back by a cut (docs/history.md §4.5): an acquire
// sent while its worker's link is cut times out (unknown outcome) and its
// client closes the connection, yet TCP still holds the SET and delivers
// it at its first retransmission after the heal, so the key is taken
// then, well after the acquire returned, and no later than the rule's
// bound (checker.heldUntil: the heal plus as long again as from the send,
// plus the first retransmission timeout).
func TestCutHoldsAcquireUntilAfterHeal(t *testing.T) {
	cs := newClusters(t)
	eps := cs.endpoints(t, redisMasters)
	via, nw, links := throughLinks(t, "w0", eps)
	l := newTCPLocker(t, "redis-single", via, 0, nil, TCP{})
	direct := redis.NewClient(&redis.Options{Addr: eps[0].Addr, MaxRetries: -1})
	t.Cleanup(func() { _ = direct.Close() })
	t.Cleanup(func() { _ = nw.HealAll() })
	ctx := t.Context()
	key := fmt.Sprintf("held-by-cut-%d", time.Now().UnixNano())
	t.Cleanup(func() { _ = direct.Del(context.Background(), key).Err() })
	lockUnlock(t, ctx, l, key) // the connection is open before the cut

	if err := nw.Cut(links...); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	_, err := l.Acquire(ctx, key, time.Minute)
	returned := time.Now()
	if err == nil || errors.Is(err, ErrNotAcquired) {
		t.Fatalf("acquire during the cut: %v, want an error of unknown outcome (its timeout)", err)
	}
	time.Sleep(3 * time.Second)
	if n, err := direct.Exists(ctx, key).Result(); err != nil || n != 0 {
		t.Fatalf("before the heal: EXISTS %s = %d, %v; want 0: nothing crosses a cut", key, n, err)
	}
	if err := nw.HealAll(); err != nil {
		t.Fatal(err)
	}
	healed := time.Now()
	var arrived time.Time
	for deadline := healed.Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		// The key's remaining lease tells when the server set it, however
		// late this poll saw it.
		pttl, err := direct.PTTL(ctx, key).Result()
		seen := time.Now()
		if err != nil {
			t.Fatal(err)
		}
		if pttl > 0 {
			arrived = seen.Add(pttl - time.Minute)
			break
		}
	}
	if arrived.IsZero() {
		t.Fatalf("the SET sent during the cut never arrived after the heal")
	}
	bound := healed.Add(min(healed.Sub(sent)+time.Second, 120*time.Second))
	t.Logf("sent %v before the heal, returned %v after sending, arrived %v after the heal (bound %v after it)",
		healed.Sub(sent).Round(time.Millisecond), returned.Sub(sent).Round(time.Millisecond), arrived.Sub(healed).Round(time.Millisecond), bound.Sub(healed).Round(time.Millisecond))
	if arrived.Before(healed) || arrived.After(bound) {
		t.Errorf("the SET arrived %v after the heal; want after the heal, and no later than the heal plus as long again as it was held plus 1 s (%v)", arrived.Sub(healed), bound.Sub(healed))
	}
}
