package clients

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
)

// TestZKUnlockCutByReset pins zk.Lock's behaviour (v1.0.4) when the
// connection resets under Unlock, against the project's recipe under the
// same fault. The holder's link resets as soon as data flows; its release's
// delete is the first data, so it never reaches the server and the release
// fails with the connection error. The link heals and the client
// reconnects within the session timeout, keeping its session, and with it
// the node. The application keeps its client, as one does that logs the
// error. zk.Lock still believes it holds the lock (a later Lock fails at
// once with zk.ErrDeadlock), and another client cannot take the lock: only
// the end of the session would free it. The recipe deletes the node at its
// next acquire, and the other client then takes the lock.
func TestZKUnlockCutByReset(t *testing.T) {
	for _, tc := range []struct {
		algorithm string
		options   map[string]string
		stuck     bool
	}{
		{"zk-lock", map[string]string{"session-timeout": "30s"}, true},
		{"zk-recipe", map[string]string{"session-timeout": "30s", "wait": "100ms"}, false},
	} {
		t.Run(tc.algorithm, func(t *testing.T) {
			eps, via, nw, link := zkThroughProxy(t, "w0")
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			const key = "unlock-cut"
			a := newLocker(t, tc.algorithm, via, 0, tc.options)
			la, err := a.(Waiter).AcquireWait(ctx, key, time.Second, 5*time.Second)
			if err != nil {
				t.Fatalf("acquire: %v", err)
			}
			if err := nw.Reset(link); err != nil {
				t.Fatal(err)
			}
			err = a.Release(ctx, la)
			if err == nil || errors.Is(err, ErrNotHeld) {
				t.Fatalf("release across the reset: err = %v, want a connection error", err)
			}
			if err := nw.Heal(link); err != nil {
				t.Fatal(err)
			}
			observer, _, err := zk.Connect([]string{eps[0].Addr}, 30*time.Second, zk.WithLogger(zkLogger{new(atomic.Int64)}))
			if err != nil {
				t.Fatal(err)
			}
			defer observer.Close()
			dir := zkLocksRoot + "/" + key
			children, _, err := observer.Children(dir)
			if err != nil || len(children) != 1 {
				t.Fatalf("children of %s after the failed release: %v, %v; want the holder's node", dir, children, err)
			}

			// The holder's client, kept, asks again; then another client.
			wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
			la2, err := a.(Waiter).AcquireWait(wctx, key, time.Second, 2*time.Second)
			wcancel()
			switch {
			case tc.stuck && !errors.Is(err, ErrNotAcquired):
				t.Fatalf("the holder's next acquire: err = %v, want ErrNotAcquired (zk.ErrDeadlock: zk.Lock still believes it holds)", err)
			case !tc.stuck && err != nil:
				t.Fatalf("the holder's next acquire: %v", err)
			case !tc.stuck:
				if err := a.Release(ctx, la2); err != nil {
					t.Fatalf("release: %v", err)
				}
			}
			b := newLocker(t, tc.algorithm, eps, 1, tc.options)
			lb, err := b.(Waiter).AcquireWait(ctx, key, time.Second, 2*time.Second)
			switch {
			case tc.stuck && err == nil:
				t.Fatalf("another client took the lock whose node outlived the failed Unlock")
			case tc.stuck:
				children, _, _ := observer.Children(dir)
				t.Logf("another client could not take the lock (%v); the nodes left: %v", err, children)
			case err != nil:
				t.Fatalf("another client after the recipe cleaned up: %v", err)
			default:
				_ = b.Release(ctx, lb)
			}
		})
	}
}

// TestZKLockCutAfterCreate pins zk.Lock's behaviour (v1.0.4) when the
// connection resets while Lock, its node created, lists the lock's children:
// Lock returns the connection error without deleting its node, and keeps no
// handle on it (Unlock says zk.ErrNotLocked). The client reconnects within
// the session timeout, so the node lives on with the session and nobody can
// take the lock. The project's recipe under the same fault gives up its node
// (at once, or at its next acquire when the delete could not be sent), and
// the lock is taken again.
//
// The fault is placed without timing: the waiter settles behind the holder
// (its node created, its watch set: its last client xid in the server's
// `cons` stops moving), its replies are slowed by 300 ms, the holder
// releases, and the waiter's link is set to reset what the waiter sends
// (a one-way reset) while the watch event is still on its way: the request
// the event triggers (the children) is cut. A ping of the waiter's in those 300 ms
// would be cut instead; the waiter then simply takes the lock after the
// heal, and the test tries again.
func TestZKLockCutAfterCreate(t *testing.T) {
	for _, tc := range []struct {
		algorithm string
		options   map[string]string
		stuck     bool
	}{
		{"zk-lock", map[string]string{"session-timeout": "60s"}, true},
		{"zk-recipe", map[string]string{"session-timeout": "60s", "wait": "100ms"}, false},
	} {
		t.Run(tc.algorithm, func(t *testing.T) {
			for attempt := 1; ; attempt++ {
				if cutAfterCreate(t, tc.algorithm, tc.options, tc.stuck) {
					return
				}
				if attempt == 5 {
					t.Fatal("in 5 attempts the reset never cut the waiter's request")
				}
				t.Logf("attempt %d: the reset cut a ping, not the waiter's request; again", attempt)
			}
		})
	}
}

// cutAfterCreate runs TestZKLockCutAfterCreate once and reports false when
// the reset missed the waiter's request.
func cutAfterCreate(t *testing.T, algorithm string, options map[string]string, stuck bool) bool {
	t.Helper()
	eps, via, nw, link := zkThroughProxy(t, "w1")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	const key = "lock-cut"
	dir := zkLocksRoot + "/" + key
	a := newLocker(t, algorithm, eps, 0, options)
	la, err := a.(Waiter).AcquireWait(ctx, key, time.Second, 5*time.Second)
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	b := newLocker(t, algorithm, via, 1, options)
	sid := zkSessionID(b)
	for ; sid == 0 && ctx.Err() == nil; sid = zkSessionID(b) {
		time.Sleep(10 * time.Millisecond) // connected, no session yet
	}
	waited := make(chan error, 1)
	go func() {
		_, err := b.(Waiter).AcquireWait(ctx, key, time.Second, 50*time.Second)
		waited <- err
	}()
	observer, _, err := zk.Connect([]string{eps[0].Addr}, 30*time.Second, zk.WithLogger(zkLogger{new(atomic.Int64)}))
	if err != nil {
		t.Fatal(err)
	}
	defer observer.Close()
	waitSettled(t, ctx, observer, eps[0].Addr, dir, sid)
	if err := nw.Latency([]string{link}, 300*time.Millisecond, 0); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx, la); err != nil {
		t.Fatalf("release: %v", err)
	}
	werr := resetWaiter(t, nw, link, waited)
	if werr == nil {
		return false
	}
	t.Logf("the waiter's acquire: %v", werr)
	for zkSessionID(b) != sid && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond) // the same session again
	}
	children, _, err := observer.Children(dir)
	if err != nil {
		t.Fatal(err)
	}
	if stuck {
		nodeLeftBehind(t, ctx, b, algorithm, eps, options, key, children)
		return true
	}
	recipeCleansUp(t, ctx, b, algorithm, eps, options, key, children)
	return true
}

// waitSettled waits until the waiter of session sid settled behind the
// holder: dir has two nodes and the session sent nothing new for ten polls.
func waitSettled(t *testing.T, ctx context.Context, observer *zk.Conn, addr, dir string, sid int64) {
	t.Helper()
	for still, xid := 0, int64(-1); still < 10; {
		time.Sleep(50 * time.Millisecond)
		children, _, err := observer.Children(dir)
		x := zkLastXid(t, addr, sid)
		if err == nil && len(children) == 2 && x >= 0 && x == xid {
			still++
		} else {
			still, xid = 0, x
		}
		if ctx.Err() != nil {
			t.Fatal("the waiter never settled behind the holder")
		}
	}
}

// resetWaiter resets what the waiter sends through link (the event on its
// way back is delivered, and the request it triggers is cut), heals the
// link, and returns the error the waiter's acquire (waited) ended with.
func resetWaiter(t *testing.T, nw *linknet.Network, link string, waited <-chan error) error {
	t.Helper()
	if err := nw.Apply(linknet.Fault{Kind: linknet.FaultReset, Direction: linknet.DirectionForward}, link); err != nil {
		t.Fatal(err)
	}
	// zk.Lock returns at the cut; the recipe once it gave up its node,
	// which may need the heal.
	var werr error
	returned := false
	select {
	case werr = <-waited:
		returned = true
	case <-time.After(3 * time.Second):
	}
	if err := nw.Heal(link); err != nil {
		t.Fatal(err)
	}
	if !returned {
		werr = <-waited
	}
	return werr
}

// nodeLeftBehind checks, for zk-lock, that the failed Lock left the
// waiter's node behind, with no handle on it, and that the node blocks
// another client.
func nodeLeftBehind(t *testing.T, ctx context.Context, b Locker, algorithm string, eps []Endpoint, options map[string]string, key string, children []string) {
	t.Helper()
	if len(children) != 1 {
		t.Fatalf("nodes after the failed Lock: %v; want the waiter's node left behind", children)
	}
	if err := b.(*ZKLock).locks[key].Unlock(); !errors.Is(err, zk.ErrNotLocked) {
		t.Fatalf("Unlock after the failed Lock: %v, want zk.ErrNotLocked (no handle on the node)", err)
	}
	c := newLocker(t, algorithm, eps, 2, options)
	if _, err := c.(Waiter).AcquireWait(ctx, key, time.Second, 2*time.Second); err == nil {
		t.Fatal("another client took the lock behind the node the failed Lock left")
	}
}

// recipeCleansUp checks that the recipe, its client kept, asks again: it
// deletes what is left of its node first, and takes the free lock.
func recipeCleansUp(t *testing.T, ctx context.Context, b Locker, algorithm string, eps []Endpoint, options map[string]string, key string, children []string) {
	t.Helper()
	lb, err := b.(Waiter).AcquireWait(ctx, key, time.Second, 2*time.Second)
	if err != nil {
		t.Fatalf("the waiter's next acquire (nodes %v): %v", children, err)
	}
	if err := b.Release(ctx, lb); err != nil {
		t.Fatalf("release: %v", err)
	}
	c := newLocker(t, algorithm, eps, 2, options)
	lc, err := c.(Waiter).AcquireWait(ctx, key, time.Second, 2*time.Second)
	if err != nil {
		t.Fatalf("another client after the recipe cleaned up: %v", err)
	}
	_ = c.Release(ctx, lc)
}

// zkThroughProxy starts a one-node ZooKeeper cluster of the test's own and
// a proxied link to it from worker: its direct endpoints, the endpoints
// through the link, the network, and the link's name.
func zkThroughProxy(t *testing.T, worker string) (eps, via []Endpoint, nw *linknet.Network, link string) {
	t.Helper()
	_, eps = startOwnCluster(t, zkOne)
	nw, err := cluster.NewNetwork(linknet.WithProxies()) // latency needs proxies
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nw.Close() })
	link = worker + "->" + eps[0].Name
	via = slices.Clone(eps)
	if via[0].Addr, err = nw.Link(link, eps[0].Addr); err != nil {
		t.Fatal(err)
	}
	return eps, via, nw, link
}

// zkSessionID returns the session of a zk-lock or zk-recipe Locker's
// connection.
func zkSessionID(l Locker) int64 {
	switch z := l.(type) {
	case *ZKLock:
		return z.conn.SessionID()
	case *ZKRecipe:
		return z.conn.SessionID()
	}
	return 0
}

// zkLastXid returns the last client xid the server at addr received on
// session sid's connection, from `cons` (-1 when it lists none).
func zkLastXid(t *testing.T, addr string, sid int64) int64 {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("cons")); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("sid=0x%x,", sid)
	lcxid := regexp.MustCompile(`lcxid=0x([0-9a-f]+)`)
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, want) {
			continue
		}
		if m := lcxid.FindStringSubmatch(line); m != nil {
			x, err := strconv.ParseInt(m[1], 16, 64)
			if err == nil {
				return x
			}
		}
	}
	return -1
}
