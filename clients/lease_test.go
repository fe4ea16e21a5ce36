package clients

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// serverLease reads, from the server itself, the window in which the service
// will free the lock that l names on its own: no earlier than lo and no later
// than hi, as instants on this process's monotonic clock. The acquire ran
// from start to end.
type serverLease func(t *testing.T, ctx context.Context, eps []Endpoint, l Lease, start, end time.Time) (lo, hi time.Time)

// leaseServer is how the tests read one algorithm's lease from its server:
// with what ttl and options, and by what reading.
type leaseServer struct {
	ttl     time.Duration
	options map[string]string
	read    serverLease
}

// leaseServers are the algorithms whose leases the tests read from the
// server as well (TestLeaseMatchesServer, TestRenew).
var leaseServers = map[string]leaseServer{
	"redis-single":       {ttl: 5 * time.Second, read: redisPTTL(1)},
	"redis-single-del":   {ttl: 5 * time.Second, read: redisPTTL(1)},
	ExecAlgorithm:        {ttl: 5 * time.Second, read: redisPTTL(1)},
	"redis-fenced":       {ttl: 5 * time.Second, read: redisPTTL(1)},
	"redlock":            {ttl: 5 * time.Second, read: redisPTTL(3)},
	"redsync":            {ttl: 5 * time.Second, read: redisPTTL(3)},
	"redis-zadd-timeout": {ttl: 2 * time.Second, read: zaddSlotEnd},
	"pg-timeout":         {ttl: 2 * time.Second, read: pgTimeoutRow},
	"mysql-lease":        {ttl: 2 * time.Second, read: mysqlLeaseRow},
	// The server clamps the session timeout asked for (90 s) to its
	// maximum (60 s): the lease is what it granted, not what was asked.
	"zk-recipe": {ttl: 5 * time.Second, options: map[string]string{"session-timeout": "90s"}, read: zkSessionTimeout},
	"zk-lock":   {ttl: 5 * time.Second, options: map[string]string{"session-timeout": "90s"}, read: zkSessionTimeout},
	// A ttl of 1.5 s is a lease of 2 s: etcd leases are whole seconds.
	"etcd-mutex": {ttl: 1500 * time.Millisecond, read: etcdGrantedTTL},
}

// TestLeaseMatchesServer takes each algorithm's lock once and checks the
// Lease it returns (Expires, Never, Session) against its declared lease
// semantics and, where the tests know how to read it (leaseServers),
// against the server's own view of the lock: the key's PTTL, the stored
// slot or timestamp, the negotiated session timeout, the lease's granted
// TTL. Expires must not be after the earliest moment the server may free
// the lock (a later one would make the checker call a legitimate grant
// early), and not earlier than that moment less the acquire's own duration
// (and a millisecond of rounding).
func TestLeaseMatchesServer(t *testing.T) {
	eachAlgorithm(t, func(t *testing.T, ctx context.Context, c algorithmCase, eps []Endpoint) {
		a := newLocker(t, c.Name, eps, 0, c.options)
		key := "lease-" + c.Name
		start := time.Now()
		l, err := a.Acquire(ctx, key, c.ttl)
		end := time.Now()
		if err != nil {
			t.Fatalf("acquire: %v", err)
		}
		t.Cleanup(func() { _ = a.Release(context.Background(), l) })
		if l.Session != c.lease.Session {
			t.Errorf("Session = %v, declared %v", l.Session, c.lease.Session)
		}
		if c.lease.Expiry == ExpiresNever {
			if !l.Never || !l.Expires.IsZero() {
				t.Fatalf("the server keeps the lock until a release; lease says Never %v, Expires %v", l.Never, l.Expires)
			}
			return
		}
		if l.Never || l.Expires.IsZero() {
			t.Fatalf("the server frees the lock on its own; lease says Never %v, Expires %v", l.Never, l.Expires)
		}
		if c.server == nil {
			return
		}
		lo, hi := c.server(t, ctx, eps, l, start, end)
		if l.Expires.After(hi) {
			t.Errorf("Expires is %v after the acquire started, but the server may free the lock %v after it", l.Expires.Sub(start), hi.Sub(start))
		}
		// Servers that keep milliseconds round the lease's start down.
		if slack := end.Sub(start) + time.Millisecond; l.Expires.Before(lo.Add(-slack)) {
			t.Errorf("Expires is %v after the acquire started, more than the acquire's duration and 1 ms (%v) before the server frees the lock (%v after it)",
				l.Expires.Sub(start), slack, lo.Sub(start))
		}
	})
}

// TestLeaseServersAreDeclared keeps leaseServers to declared algorithms
// whose service frees the lock on its own.
func TestLeaseServersAreDeclared(t *testing.T) {
	for name := range leaseServers {
		a, err := Lookup(name)
		if err != nil {
			t.Errorf("lease server of %s: %v", name, err)
			continue
		}
		if a.Lease != nil && a.Lease.Expiry == ExpiresNever {
			t.Errorf("lease server of %s, whose service never frees the lock", name)
		}
	}
}

// eachAlgorithm runs f as one subtest per declared algorithm, on its
// system's cluster, with a context bounded for the subtest.
func eachAlgorithm(t *testing.T, f func(t *testing.T, ctx context.Context, c algorithmCase, eps []Endpoint)) {
	cs := newClusters(t)
	for _, c := range algorithmCases(t, false) {
		t.Run(c.label, func(t *testing.T) {
			eps := cs.endpoints(t, c.spec)
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			f(t, ctx, c, eps)
		})
	}
}

// redisPTTL reads the key's PTTL on the first masters masters.
func redisPTTL(masters int) serverLease {
	return func(t *testing.T, ctx context.Context, eps []Endpoint, l Lease, _, _ time.Time) (time.Time, time.Time) {
		t.Helper()
		var lo, hi time.Time
		for _, ep := range eps[:masters] {
			c := redis.NewClient(&redis.Options{Addr: ep.Addr, DisableIdentity: true})
			before := time.Now()
			pttl, err := c.PTTL(ctx, l.Key).Result()
			after := time.Now()
			c.Close()
			if err != nil || pttl <= 0 {
				t.Fatalf("%s: PTTL %s = %v, %v", ep.Name, l.Key, pttl, err)
			}
			// PTTL counts whole milliseconds left.
			nodeLo, nodeHi := before.Add(pttl), after.Add(pttl+time.Millisecond)
			if lo.IsZero() || nodeLo.Before(lo) {
				lo = nodeLo
			}
			if hi.IsZero() || nodeHi.Before(hi) {
				hi = nodeHi
			}
		}
		return lo, hi
	}
}

// wallToMono maps a wall-clock instant onto this process's monotonic clock.
func wallToMono(wall time.Time) time.Time {
	now := time.Now()
	return now.Add(wall.Sub(now.Round(0)))
}

// zaddSlotEnd reads the key's score (its slot): a contender on the same clock
// takes the next slot at (score+1) × ttl milliseconds.
func zaddSlotEnd(t *testing.T, ctx context.Context, eps []Endpoint, l Lease, _, _ time.Time) (time.Time, time.Time) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: eps[0].Addr, DisableIdentity: true})
	defer c.Close()
	score, err := c.ZScore(ctx, zaddTimeoutSet, l.Key).Result()
	if err != nil {
		t.Fatalf("ZSCORE: %v", err)
	}
	const ttl = 2 * time.Second
	end := wallToMono(time.UnixMilli((int64(score) + 1) * ttl.Milliseconds()))
	return end.Add(-time.Millisecond), end.Add(time.Millisecond)
}

// pgTimeoutRow reads the row's ts and timeout: a contender on the same clock
// takes it once its ts exceeds ts + timeout.
func pgTimeoutRow(t *testing.T, ctx context.Context, eps []Endpoint, l Lease, _, _ time.Time) (time.Time, time.Time) {
	t.Helper()
	host, port, _ := net.SplitHostPort(eps[0].Addr)
	conn, err := pgx.Connect(ctx, fmt.Sprintf("host=%s port=%s user=postgres dbname=postgres sslmode=disable", host, port))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var ts, timeout int64
	if err := conn.QueryRow(ctx, `select ts, timeout from task_timeout where id = $1`, l.Key).Scan(&ts, &timeout); err != nil {
		t.Fatal(err)
	}
	first := wallToMono(time.UnixMilli(ts + timeout + 1)) // the first ts that passes ts + timeout < $1
	return first.Add(-time.Millisecond), first
}

// zkSessionTimeout reads the session's timeout from the server (`cons`): the
// session ends no earlier than that after the server last heard from the
// client, at the latest when the create arrived, between start and end.
func zkSessionTimeout(t *testing.T, ctx context.Context, eps []Endpoint, l Lease, start, end time.Time) (time.Time, time.Time) {
	t.Helper()
	sid := fmt.Sprintf("sid=0x%x,", zkSessionOf(t, ctx, eps, l))
	d := net.Dialer{Timeout: 2 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", eps[0].Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("cons")); err != nil {
		t.Fatal(err)
	}
	to := regexp.MustCompile(`[(,]to=(\d+)[,)]`)
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, sid) {
			continue
		}
		m := to.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("cons: no timeout in %q", line)
		}
		ms, _ := strconv.Atoi(m[1])
		timeout := time.Duration(ms) * time.Millisecond
		if timeout != 60*time.Second {
			t.Fatalf("server granted %v; the test expects its maximum, 60s", timeout)
		}
		return start.Add(timeout), end.Add(timeout)
	}
	t.Fatalf("cons lists no connection with %s", sid)
	return time.Time{}, time.Time{}
}

// zkSessionOf returns the session that owns the lease's node: the only
// node under the key's directory (zk.Lock does not tell its node's path).
func zkSessionOf(t *testing.T, ctx context.Context, eps []Endpoint, l Lease) int64 {
	t.Helper()
	z := newLocker(t, "zk-recipe", eps, 9, nil).(*ZKRecipe)
	dir := zkLocksRoot + "/" + l.Key
	children, _, err := z.conn.Children(dir)
	if err != nil || len(children) != 1 {
		t.Fatalf("children of %s: %v, %v; want the lease's node alone", dir, children, err)
	}
	ok, stat, err := z.conn.Exists(dir + "/" + children[0])
	if err != nil || !ok {
		t.Fatalf("node %s: exists %v, %v", children[0], ok, err)
	}
	return stat.EphemeralOwner
}

// etcdGrantedTTL reads the lock key's lease and its granted TTL.
func etcdGrantedTTL(t *testing.T, ctx context.Context, eps []Endpoint, l Lease, start, end time.Time) (time.Time, time.Time) {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{eps[0].Addr}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, err := c.Get(ctx, l.Owner)
	if err != nil || len(got.Kvs) != 1 {
		t.Fatalf("get %s: %v, %v", l.Owner, got, err)
	}
	ttl, err := c.TimeToLive(ctx, clientv3.LeaseID(got.Kvs[0].Lease))
	if err != nil {
		t.Fatal(err)
	}
	granted := time.Duration(ttl.GrantedTTL) * time.Second
	if granted != 2*time.Second {
		t.Fatalf("granted TTL %v; the test expects 2s for a ttl of 1.5s", granted)
	}
	// The lease counts from the grant, made within the acquire, or from a
	// later keep-alive.
	return start.Add(granted), end.Add(granted)
}

// mysqlLeaseRow reads how long the mysql-lease row has left by the
// server's clock (expires - NOW(6), in microseconds): the server frees it
// no earlier than that after the read started, and no later than that
// after the read ended.
func mysqlLeaseRow(t *testing.T, ctx context.Context, eps []Endpoint, l Lease, _, _ time.Time) (time.Time, time.Time) {
	t.Helper()
	db, err := sql.Open("mysql", "root@tcp("+eps[0].Addr+")/")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var left int64
	before := time.Now()
	err = db.QueryRowContext(ctx, `SELECT TIMESTAMPDIFF(MICROSECOND, NOW(6), expires) FROM `+mysqlDatabase+`.lease_lock WHERE id = ? AND owner = ?`, l.Key, l.Owner).Scan(&left)
	after := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	d := time.Duration(left) * time.Microsecond
	return before.Add(d), after.Add(d)
}
