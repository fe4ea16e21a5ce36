package clients

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// stepFault is one acquire whose step is cut by a real network fault, and
// the outcome the history must record for it.
type stepFault struct {
	algorithmCase
	step string       // the step (Step.Name) the worker's links reset at
	want history.Type // fail before any step that can take the lock, info at one
	// warm: the Locker takes and releases the lock once before the
	// faulted acquire, so that a step done once per key and client
	// (zk-recipe's parent) is not sent again.
	warm bool
	// disconnect: the Locker has no open connection when the faulted
	// acquire begins, so that it opens one (the connect step).
	disconnect bool
}

// warmSteps are the steps reached only once the Locker has taken the lock
// once (the steps before them are sent once per key and client).
var warmSteps = []string{"zk-recipe/create"}

// stepFaults returns the fault cases of the declared steps: for every
// algorithm with a step that cannot take the lock, one case for each such
// step and one for its first step that can, each expecting what the
// step's declaration says (fail before any step that can take the lock,
// info at one).
func stepFaults(t *testing.T) []stepFault {
	t.Helper()
	var cases []stepFault
	for _, c := range algorithmCases(t, false) {
		if len(c.Steps) == 0 || c.Steps[0].Grants {
			continue
		}
		for _, s := range c.Steps {
			f := stepFault{algorithmCase: c, step: s.Name, want: history.Fail,
				warm: slices.Contains(warmSteps, c.Name+"/"+s.Name),
				// A PostgreSQL or MariaDB Locker opens its connection at
				// the first acquire after it has none.
				disconnect: (c.System == systemPostgres || c.System == systemMariaDB) && s.Name == "connect"}
			if s.Grants {
				f.want = history.Info
			}
			cases = append(cases, f)
			if s.Grants {
				break
			}
		}
	}
	return cases
}

// TestStepFaultsCoverEverySteppedAlgorithm keeps the step fault cases
// true to the declarations: a step that can take the lock in every
// algorithm, and the warm steps named by declared steps.
func TestStepFaultsCoverEverySteppedAlgorithm(t *testing.T) {
	for _, a := range Algorithms() {
		if !slices.ContainsFunc(a.Steps, func(s Step) bool { return s.Grants }) {
			t.Errorf("%s: no step can take the lock", a.Name)
		}
	}
	covered := map[string]bool{}
	for _, c := range stepFaults(t) {
		covered[c.Name+"/"+c.step] = true
	}
	for _, w := range warmSteps {
		if !covered[w] {
			t.Errorf("warm step %s names no declared step before or at the first that can take the lock", w)
		}
	}
	if len(covered) < 10 {
		t.Errorf("%d step fault cases, want the zadd, pg, zk-recipe and etcd-mutex steps", len(covered))
	}
}

// TestStepFaults resets the worker's links to the servers (TCP RST as soon
// as data flows: the request is dropped) right before one step of an
// acquire is sent, and checks what the history records: an acquire that
// failed before any step that can take the lock is fail, it took nothing
// (another worker then takes the lock at once) and its process goes on;
// one that failed at a step that can take the lock is info. The fault is
// placed by the step hook, so no timing decides which step it cuts.
func TestStepFaults(t *testing.T) {
	cs := newClusters(t)
	for _, tc := range stepFaults(t) {
		t.Run(tc.Name+"/"+tc.step, func(t *testing.T) { runStepFault(t, cs, tc) })
	}
}

// runStepFault is TestStepFaults' run of one algorithm's step.
func runStepFault(t *testing.T, cs *clusters, tc stepFault) {
	eps := cs.endpoints(t, tc.spec)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	via, nw, links := throughLinks(t, "w0", eps)
	const ttl = 5 * time.Second
	// A key of this run's own: the servers outlive a test run.
	key := fmt.Sprintf("steps-%s-%s-%d", tc.Name, tc.step, time.Now().UnixNano())
	l := newLocker(t, tc.Name, via, 0, tc.options)
	rec := history.NewRecorder()
	a := &Recorded{Locker: l, Rec: rec, Proc: NewProcess(0, 2)}
	if tc.warm {
		la, err := l.Acquire(ctx, key, ttl)
		if err != nil {
			t.Fatalf("acquire before the fault: %v", err)
		}
		if err := l.Release(ctx, la); err != nil {
			t.Fatalf("release before the fault: %v", err)
		}
	}
	if tc.disconnect {
		if err := disconnect(t, l); err != nil {
			t.Fatal(err)
		}
	}

	var steps []string
	hooked := l.(interface{ setBeforeStep(func(string)) })
	hooked.setBeforeStep(func(step string) {
		steps = append(steps, step)
		if step == tc.step {
			if err := nw.Reset(links...); err != nil {
				t.Errorf("reset: %v", err)
			}
		}
	})
	_, err := a.Acquire(ctx, key, ttl)
	hooked.setBeforeStep(nil)
	if err := nw.Heal(links...); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(steps, tc.step) {
		t.Fatalf("the acquire never reached step %s (steps %v; err %v)", tc.step, steps, err)
	}
	if steps[len(steps)-1] != tc.step {
		t.Fatalf("the acquire went on past the faulted step %s: steps %v (err %v)", tc.step, steps, err)
	}
	if checkStepRecorded(t, tc, rec, a, err) {
		return
	}
	tookNothing(t, ctx, tc, eps, key, ttl)
}

// checkStepRecorded checks what the history records of the acquire whose
// step tc.step was reset, which returned err: its type, and its error
// naming the step. It reports whether the acquire was indeterminate (info),
// and then that the process crashed; for a fail, that err is the step's
// definite failure and the process goes on. A step that can take the lock
// whose request the driver says it never wrote (unsentError) is a fail
// too.
func checkStepRecorded(t *testing.T, tc stepFault, rec *history.Recorder, a *Recorded, err error) (info bool) {
	t.Helper()
	h := rec.History()
	if len(h) != 2 {
		t.Fatalf("history %v, want the acquire's invoke and completion", h)
	}
	done := h[1]
	var unsent *unsentError
	if tc.want == history.Info && done.Type == history.Fail && errors.As(err, &unsent) && unsent.step == tc.step {
		// The reset met the connection before the step's request was
		// written (a keep-alive probe, or the driver's own check of an
		// idle connection, drew the RST first), and the driver said so:
		// the step was never sent, so the acquire is definite and took
		// nothing, which tookNothing checks.
		if a.Proc.ID() != 0 {
			t.Fatalf("a step never sent crashed the process (now %d)", a.Proc.ID())
		}
		t.Logf("the %s step was never sent (%v): recorded fail", tc.step, err)
		return false
	}
	if done.Type != tc.want {
		t.Fatalf("acquire with step %s cut: recorded %s (%s), want %s", tc.step, done.Type, done.Error, tc.want)
	}
	if err == nil || !strings.Contains(done.Error, tc.step) {
		t.Fatalf("recorded error %q does not name the step %s", done.Error, tc.step)
	}
	if tc.want == history.Info {
		if errors.Is(err, ErrNotAcquired) || a.Proc.ID() != 2 {
			t.Fatalf("info: err %v, process %d; want an indeterminate error and a crash", err, a.Proc.ID())
		}
		return true
	}
	var bg *beforeGrantError
	if !errors.As(err, &bg) || bg.step != tc.step || !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("fail: err %v, want the %s step's failure, wrapping ErrNotAcquired", err, tc.step)
	}
	if a.Proc.ID() != 0 {
		t.Fatalf("a definite failure crashed the process (now %d)", a.Proc.ID())
	}
	return false
}

// tookNothing checks that an acquire that failed before any step that can
// take the lock took nothing: another worker takes key at once.
func tookNothing(t *testing.T, ctx context.Context, tc stepFault, eps []Endpoint, key string, ttl time.Duration) {
	t.Helper()
	// It took nothing: another worker takes the lock at once.
	b := newLocker(t, tc.Name, eps, 1, tc.options)
	lb, err := b.Acquire(ctx, key, ttl)
	if err != nil {
		t.Fatalf("another worker after the failed acquire: %v", err)
	}
	if err := b.Release(ctx, lb); err != nil && !errors.Is(err, ErrReleaseNoOp) {
		t.Fatalf("release: %v", err)
	}
}

// disconnect closes the connection of a PostgreSQL or MariaDB Locker,
// which opens another at its next acquire.
func disconnect(t *testing.T, l Locker) error {
	t.Helper()
	if m, ok := l.(interface{ dropConnection() error }); ok {
		return m.dropConnection()
	}
	return postgresOf(t, l).Close()
}

// postgresOf returns the Postgres behind a PostgreSQL Locker.
func postgresOf(t *testing.T, l Locker) *Postgres {
	t.Helper()
	switch p := l.(type) {
	case *Postgres:
		return p
	case *PgTimeout:
		return p.Postgres
	}
	t.Fatalf("%T is not a PostgreSQL Locker", l)
	return nil
}

// throughLinks routes a worker's connections to every node of eps through
// a proxied link of its own, closed at cleanup: the endpoints through the
// links, the network (made with opts) and the links' names.
func throughLinks(t *testing.T, worker string, eps []Endpoint, opts ...linknet.Option) (via []Endpoint, nw *linknet.Network, links []string) {
	t.Helper()
	nw, err := cluster.NewNetwork(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nw.Close() })
	via = slices.Clone(eps)
	for i, ep := range eps {
		link := linknet.Name(worker, ep.Name)
		if via[i].Addr, err = nw.Link(link, ep.Addr); err != nil {
			t.Fatal(err)
		}
		links = append(links, link)
	}
	return via, nw, links
}

// TestStepDoneButReplyLost delays the replies of a step that cannot take
// the lock past the request's timeout, so that the step takes effect on
// the server while the acquire fails: the acquire is still recorded fail,
// what the step left behind (a released member or row, a lease without a
// key) is there, and it blocks nobody: another worker takes the lock at
// once.
func TestStepDoneButReplyLost(t *testing.T) {
	cs := newClusters(t)
	tests := []replyLostCase{
		{"redis-zadd-mutex", redisMasters, "create", zaddMember(zaddMutexSet)},
		{"redis-zadd-state", redisMasters, "create", zaddMember(zaddStateSet)},
		{"pg-mutex", postgresOne, "create", pgRow(`select acquired::text from task_state where id = $1`, "false")},
		{"pg-timeout", postgresOne, "create", pgRow(`select ts::text from task_timeout where id = $1`, "0")},
		{"pg-state", postgresOne, "create", pgRow(`select status::text from task where id = $1`, "done")},
		{"etcd-mutex", etcdOne, "grant", nil}, // the new lease is looked for below
	}
	for _, tc := range tests {
		t.Run(tc.algorithm, func(t *testing.T) { runReplyLost(t, cs, tc) })
	}
}

// replyLostCase is a step of TestStepDoneButReplyLost: the algorithm, its
// servers, the step whose replies are delayed, and left, which reports
// whether what the step leaves behind is on the server (nil for etcd's
// lease, looked for among the server's leases).
type replyLostCase struct {
	algorithm string
	spec      cluster.Spec
	step      string
	left      func(t *testing.T, ctx context.Context, eps []Endpoint, key string) bool
}

// runReplyLost is TestStepDoneButReplyLost's run of one case.
func runReplyLost(t *testing.T, cs *clusters, tc replyLostCase) {
	eps := cs.endpoints(t, tc.spec)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	via, nw, links := throughLinks(t, "w0", eps, linknet.WithProxies()) // latency needs proxies
	const timeout, delay = time.Second, 3 * time.Second
	options := map[string]string{"timeout": timeout.String()}
	l := newLocker(t, tc.algorithm, via, 0, options)
	rec := history.NewRecorder()
	a := &Recorded{Locker: l, Rec: rec, Proc: NewProcess(0, 2)}
	key := fmt.Sprintf("reply-lost-%s-%d", tc.algorithm, time.Now().UnixNano())
	// A first acquire on another key opens the connection and
	// prepares the statements, so that the delayed step is sent
	// at once rather than behind a handshake or a prepare whose
	// reply is delayed too.
	lw, err := l.Acquire(ctx, key+"-warm", time.Second)
	if err != nil {
		t.Fatalf("acquire before the fault: %v", err)
	}
	if err := l.Release(ctx, lw); err != nil && !errors.Is(err, ErrReleaseNoOp) {
		t.Fatalf("release before the fault: %v", err)
	}
	var admin *clientv3.Client
	var leasesBefore map[clientv3.LeaseID]bool
	if tc.left == nil {
		admin = etcdAdmin(t, eps)
		leasesBefore = etcdLeases(t, ctx, admin)
	}
	var steps []string
	hooked := l.(interface{ setBeforeStep(func(string)) })
	hooked.setBeforeStep(func(step string) {
		steps = append(steps, step)
		if step == tc.step {
			if err := nw.Latency(links, delay, 0); err != nil {
				t.Errorf("latency: %v", err)
			}
		}
	})
	_, err = a.Acquire(ctx, key, 5*time.Second)
	hooked.setBeforeStep(nil)
	if err := nw.Heal(links...); err != nil {
		t.Fatal(err)
	}
	if len(steps) == 0 || steps[len(steps)-1] != tc.step {
		t.Fatalf("steps %v, want the acquire to end at %s (err %v)", steps, tc.step, err)
	}
	h := rec.History()
	if len(h) != 2 || h[1].Type != history.Fail {
		t.Fatalf("history %v, want the acquire's invoke and fail", h)
	}
	stepLeft(t, ctx, tc, eps, key, admin, leasesBefore)
	b := newLocker(t, tc.algorithm, eps, 1, nil)
	lb, err := b.Acquire(ctx, key, 5*time.Second)
	if err != nil {
		t.Fatalf("another worker, with what the failed step left: %v", err)
	}
	if err := b.Release(ctx, lb); err != nil && !errors.Is(err, ErrReleaseNoOp) {
		t.Fatalf("release: %v", err)
	}
}

// stepLeft waits until what tc's step did is on the server (poll: the
// request may still be on its way), failing when ctx ends first. A step
// whose request never left the client would leave nothing, and the test
// would fail here.
func stepLeft(t *testing.T, ctx context.Context, tc replyLostCase, eps []Endpoint, key string, admin *clientv3.Client, leasesBefore map[clientv3.LeaseID]bool) {
	t.Helper()
	for {
		var there bool
		if tc.left != nil {
			there = tc.left(t, ctx, eps, key)
		} else {
			there = newLease(etcdLeases(t, ctx, admin), leasesBefore)
		}
		if there {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the %s step never took effect on the server", tc.step)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// zaddMember reports whether key is a member of set with score 0 (released
// or done).
func zaddMember(set string) func(t *testing.T, ctx context.Context, eps []Endpoint, key string) bool {
	return func(t *testing.T, ctx context.Context, eps []Endpoint, key string) bool {
		t.Helper()
		c := redis.NewClient(&redis.Options{Addr: eps[0].Addr, DisableIdentity: true})
		defer c.Close()
		score, err := c.ZScore(ctx, set, key).Result()
		switch {
		case errors.Is(err, redis.Nil):
			return false
		case err != nil:
			t.Fatalf("ZSCORE %s %s: %v", set, key, err)
		case score != zaddReleased:
			t.Fatalf("ZSCORE %s %s = %v, want %d", set, key, score, zaddReleased)
		}
		return true
	}
}

// pgRow reports whether query, given the key, returns one row whose text
// is want; a row with another value fails the test.
func pgRow(query, want string) func(t *testing.T, ctx context.Context, eps []Endpoint, key string) bool {
	return func(t *testing.T, ctx context.Context, eps []Endpoint, key string) bool {
		t.Helper()
		host, port, _ := net.SplitHostPort(eps[0].Addr)
		conn, err := pgx.Connect(ctx, fmt.Sprintf("host=%s port=%s user=postgres dbname=postgres sslmode=disable", host, port))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		var got string
		err = conn.QueryRow(ctx, query, key).Scan(&got)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return false
		case err != nil:
			t.Fatalf("%s: %v", query, err)
		case got != want:
			t.Fatalf("%s: %q, want %q", query, got, want)
		}
		return true
	}
}

// etcdLeases returns the leases etcd knows.
func etcdLeases(t *testing.T, ctx context.Context, admin *clientv3.Client) map[clientv3.LeaseID]bool {
	t.Helper()
	resp, err := admin.Leases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[clientv3.LeaseID]bool{}
	for _, l := range resp.Leases {
		ids[l.ID] = true
	}
	return ids
}

// newLease reports whether now holds a lease that before did not.
func newLease(now, before map[clientv3.LeaseID]bool) bool {
	for id := range now {
		if !before[id] {
			return true
		}
	}
	return false
}

// TestAcquireNeverSentIsFail kills the Redis node before the first acquire
// of new clients: the connection cannot be opened, so the one step that can
// take the lock was never sent, and the acquire is recorded fail; the
// worker's process goes on.
func TestAcquireNeverSentIsFail(t *testing.T) {
	cl, eps := startOwnCluster(t, cluster.Spec{System: cluster.Redis, Nodes: 1})
	ctx := t.Context()
	lockers := map[string]Locker{}
	names := []string{"redis-single", "redis-fenced", "redis-zadd-timeout"}
	for i, name := range names {
		lockers[name] = newLocker(t, name, eps, i, nil)
	}
	if err := cl.Kill(ctx, eps[0].Name); err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			rec := history.NewRecorder()
			a := &Recorded{Locker: lockers[name], Rec: rec, Proc: NewProcess(0, 2)}
			_, err := a.Acquire(ctx, "never-sent", 5*time.Second)
			var unsent *unsentError
			if !errors.As(err, &unsent) || !errors.Is(err, ErrNotAcquired) {
				t.Fatalf("acquire with the node down: err = %v, want a step never sent, wrapping ErrNotAcquired", err)
			}
			h := rec.History()
			if len(h) != 2 || h[1].Type != history.Fail || a.Proc.ID() != 0 {
				t.Fatalf("history %v, process %d; want the acquire's invoke and fail, and no crash", h, a.Proc.ID())
			}
		})
	}
}
