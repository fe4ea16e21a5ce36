package clients

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DefaultPostgresTimeout bounds each PostgreSQL statement and connection
// attempt (option "timeout").
const DefaultPostgresTimeout = time.Second

// PostgresSetupConnect bounds a client's first connection, opened before the
// run's clock starts, when it is longer than the client's timeout: a loaded
// machine forking a backend for each of eight workers at once may take more
// than a statement's second, and a run that never started tells nothing.
const PostgresSetupConnect = 10 * time.Second

// Defaults of the PostgreSQL connection options "user" and "database".
const (
	DefaultPostgresUser     = "postgres"
	DefaultPostgresDatabase = "postgres"
)

// postgresSetupLock is the advisory lock (two-int4 key space, so it never
// meets pg-advisory's one-bigint locks) that serializes table creation by
// concurrent workers.
const postgresSetupLock = 0x6a6c

// pgFlavor selects one of the PostgreSQL locks.
type pgFlavor int

const (
	pgMutex pgFlavor = iota
	pgTimeout
	pgState
	pgUniqueRow
	pgAdvisory
)

func (f pgFlavor) String() string {
	return [...]string{"pg-mutex", "pg-timeout", "pg-state", "pg-unique-row", "pg-advisory"}[f]
}

// pgStateCapture is the seed's capture, limited to one task id.
const pgStateCapture = `update task set status = 'in_progress'
where id in (
  select id
  from task
  where status = any(array ['done', 'failed']::task_status[]) and id = $1
  limit 1
) returning id, status::text`

// pgResourceSchema creates the register of GuardedResource.
const pgResourceSchema = `create table if not exists guarded_resource (
  key   text   primary key,
  value bigint not null,
  token bigint not null)`

// pgSchema creates each flavor's table, as the seeds write them.
var pgSchema = map[pgFlavor][]string{
	pgMutex: {`create table if not exists task_state (
  id       text    not null,
  acquired boolean not null,
  constraint task_state_unique_id unique (id))`},
	pgTimeout: {`create table if not exists task_timeout (
  id      text   not null,
  ts      bigint not null,
  timeout bigint not null,
  constraint task_timeout_unique_id unique (id))`},
	pgState: {
		`do $$ begin
  create type task_status as enum ('done', 'in_progress', 'failed');
exception when duplicate_object then null;
end $$`,
		`create table if not exists task (
  id     text        not null,
  status task_status not null,
  constraint task_unique_id unique (id))`},
	pgUniqueRow: {`create table if not exists lock_row (
  id    text      primary key,
  owner text      not null,
  token bigserial not null)`},
}

// Postgres is one of the PostgreSQL locks, each exactly as its seed writes it,
// weaknesses included, on one connection to the primary (or first) endpoint.
// A Locker whose connection broke reconnects at its next call.
//
// pg-mutex (task_state): the row is created released; acquire is `update
// task_state set acquired = $1 where id = $2 and acquired != $1` with true (1
// row = acquired, 0 = ErrNotAcquired); release the same with false (0 rows =
// ErrNotHeld). No expiry, no owner check, no token, no Until.
//
// pg-timeout (task_timeout): acquire is `update task_timeout set ts = $1 where
// id = $2 and ts + timeout < $1` with ts the worker's own clock (Target.Clock)
// in milliseconds; the row is created with ts 0 and timeout = the first
// acquirer's ttl in milliseconds, as the seed stores one timeout per task.
// Until = the acquire's start + the stored timeout − drift; the token is ts,
// which the statement makes strictly increase per key; Lease.Expires = the
// acquire's start + the stored timeout (a contender on a clock like ours
// takes the row only after it). Release does nothing, as in the seed
// (ErrReleaseNoOp). A skewed worker clock takes the lock early.
//
// pg-state (task, enum task_status): capture is the seed's `update task set
// status = 'in_progress' where id in (select id from task where status =
// any(array['done','failed']) and id = $1 limit 1) returning id, status`
// (a row = acquired); release is SetStatus(done), an unconditional update (no
// rows only when the task does not exist: ErrNotHeld). No expiry, no owner, no
// token, no Until. Its capture is unsafe even without faults: a capture that
// waits on a concurrent capture's row lock succeeds too once that one commits,
// because PostgreSQL rechecks only `id in (...)` against the subquery's old
// result, not the status.
//
// pg-unique-row (lock_row): acquire inserts (id, owner); a unique violation is
// ErrNotAcquired; release deletes the row where id and owner match (0 rows =
// ErrNotHeld). No expiry. The token is the row's bigserial, strictly
// increasing across acquisitions.
//
// pg-advisory: session-level pg_try_advisory_lock(hashtextextended(key, 0));
// false = ErrNotAcquired; release is pg_advisory_unlock (false = ErrNotHeld).
// The lock lives as long as the connection; the owner is the backend's pid.
// An acquire whose outcome is unknown closes the connection, ending the
// session and any lock it may have taken. No token, no Until.
//
// Options: "user" (default DefaultPostgresUser), "database" (default
// DefaultPostgresDatabase), "timeout" (per statement and connect, default
// DefaultPostgresTimeout). The connection uses sslmode=disable.
type Postgres struct {
	afterResponse
	stepHook
	flavor  pgFlavor
	config  *pgx.ConnConfig
	conn    *pgx.Conn
	timeout time.Duration
	drift   time.Duration
	clock   Clock
	owners  ownerValues
}

var (
	_ Locker          = (*Postgres)(nil)
	_ ResponseHooker  = (*Postgres)(nil)
	_ GuardedResource = (*Postgres)(nil)
)

// NewPgMutex is the pg-mutex Factory.
func NewPgMutex(ctx context.Context, t Target) (Locker, error) { return newPostgres(ctx, pgMutex, t) }

// NewPgTimeout is the pg-timeout Factory. It needs t.Clock.
func NewPgTimeout(ctx context.Context, t Target) (Locker, error) {
	l, err := newPostgres(ctx, pgTimeout, t)
	if err != nil {
		return nil, err
	}
	return &PgTimeout{l}, nil
}

// PgTimeout is pg-timeout (Postgres), which can also renew: Renew moves the
// row's timestamp forward to the worker's clock now, only while the lease
// is still held: the row's ts is still the lease's token, and by the
// worker's clock the stored timeout has not run out (`update task_timeout
// set ts = $now where id = $key and ts = $token and ts + timeout >= $now`).
// The seed's row has no other column to extend, and its ts is the lease's
// fencing token, so a renewal hands out a new token: the renewed lease's
// Token is the new ts (the history's renew ok carries it). The stored
// timeout stays, so ttl is not used; Until and Expires count the stored
// timeout from before the clock reading, as Acquire does. ErrNotHeld when
// no row matched.
type PgTimeout struct{ *Postgres }

var _ Renewer = (*PgTimeout)(nil)

// Renew moves the lease's timestamp forward while it is held.
func (p *PgTimeout) Renew(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	name := p.flavor.String()
	start := time.Now() // no later than the clock reading below
	ts := p.clock.Now().UnixMilli()
	var timeout int64
	found, err := p.queryRow(ctx, `update task_timeout set ts = $1 where id = $2 and ts = $3 and ts + timeout >= $1 returning timeout`,
		[]any{ts, l.Key, int64(l.Token)}, &timeout)
	if err != nil {
		return Lease{}, fmt.Errorf("clients: %s: renew %s: %w", name, l.Key, err)
	}
	if !found {
		return Lease{}, fmt.Errorf("clients: %s: renew %s: the row no longer holds token %d, or its timeout ran out: %w", name, l.Key, l.Token, ErrNotHeld)
	}
	stored := time.Duration(timeout) * time.Millisecond
	l.Token, l.Until, l.Expires = uint64(ts), validUntil(start, stored, p.drift), start.Add(stored)
	return l, nil
}

// NewPgState is the pg-state Factory.
func NewPgState(ctx context.Context, t Target) (Locker, error) { return newPostgres(ctx, pgState, t) }

// NewPgUniqueRow is the pg-unique-row Factory.
func NewPgUniqueRow(ctx context.Context, t Target) (Locker, error) {
	return newPostgres(ctx, pgUniqueRow, t)
}

// NewPgAdvisory is the pg-advisory Factory.
func NewPgAdvisory(ctx context.Context, t Target) (Locker, error) {
	return newPostgres(ctx, pgAdvisory, t)
}

// postgresConfig builds the connection config for ep from the options,
// dialing with tcp's timeouts.
func postgresConfig(name string, ep Endpoint, user, database string, tcp TCP) (*pgx.ConnConfig, error) {
	host, port, err := net.SplitHostPort(ep.Addr)
	if err != nil {
		return nil, fmt.Errorf("clients: %s: endpoint %s: %w", name, ep.Addr, err)
	}
	if _, err := strconv.Atoi(port); err != nil {
		return nil, fmt.Errorf("clients: %s: endpoint %s: bad port: %w", name, ep.Addr, err)
	}
	dsn := fmt.Sprintf("host=%s port=%s user=%s dbname=%s sslmode=disable", host, port, user, database)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("clients: %s: %w", name, err)
	}
	if !tcp.IsZero() {
		cfg.DialFunc = tcpDialer(tcp, 0, goKeepAlive).DialContext
	}
	return cfg, nil
}

func newPostgres(ctx context.Context, f pgFlavor, t Target) (*Postgres, error) {
	return newPostgresNamed(ctx, f.String(), f, t)
}

// newPostgresNamed is newPostgres for a client that calls itself name in
// its errors (a queue implementation built on a flavor's connection).
func newPostgresNamed(ctx context.Context, name string, f pgFlavor, t Target) (*Postgres, error) {
	opts, err := readOptions(name, t.Options, pgOptions, false)
	if err != nil {
		return nil, err
	}
	user, database, timeout := opts.text(optPgUser), opts.text(optPgDatabase), opts.duration(optPgTimeout)
	ep, err := primaryEndpoint(name, t.Endpoints)
	if err != nil {
		return nil, err
	}
	cfg, err := postgresConfig(name, ep, user, database, t.TCP)
	if err != nil {
		return nil, err
	}
	if f == pgTimeout && t.Clock == nil {
		return nil, fmt.Errorf("clients: %s: target has no clock", name)
	}
	owners, err := newOwnerValues(name, t)
	if err != nil {
		return nil, err
	}
	p := &Postgres{flavor: f, config: cfg, timeout: timeout, drift: t.Drift, clock: t.Clock, owners: owners}
	conn, err := p.connectWithin(ctx, max(timeout, PostgresSetupConnect))
	if err != nil {
		return nil, err
	}
	if err := postgresSetup(ctx, conn, timeout, append(slices.Clone(pgSchema[f]), pgResourceSchema)); err != nil {
		_ = p.Close()
		return nil, fmt.Errorf("clients: %s: %w", name, err)
	}
	return p, nil
}

// postgresSetup runs the schema statements in one transaction under an
// advisory lock, so that workers creating the same table at once do not race
// on the catalog.
func postgresSetup(ctx context.Context, conn *pgx.Conn, timeout time.Duration, stmts []string) error {
	if len(stmts) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*timeout)
	defer cancel()
	tx, err := conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `select pg_advisory_xact_lock($1, 0)`, int32(postgresSetupLock)); err != nil {
		return fmt.Errorf("setup lock: %w", err)
	}
	for _, s := range stmts {
		if _, err := tx.Exec(ctx, s); err != nil {
			return fmt.Errorf("setup: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("setup commit: %w", err)
	}
	return nil
}

// pgConnectError is the error of a connection that failed to open: no
// statement was sent on it.
type pgConnectError struct{ err error }

func (e *pgConnectError) Error() string { return "connect: " + e.err.Error() }
func (e *pgConnectError) Unwrap() error { return e.err }

// connection returns the open connection, connecting first if there is none
// or the last one broke (the "connect" step); a connection that failed to
// open is a *pgConnectError.
func (p *Postgres) connection(ctx context.Context) (*pgx.Conn, error) {
	return p.connectWithin(ctx, p.timeout)
}

// connectWithin is connection with bound on the connecting.
func (p *Postgres) connectWithin(ctx context.Context, bound time.Duration) (*pgx.Conn, error) {
	if p.conn != nil && !p.conn.IsClosed() {
		return p.conn, nil
	}
	if p.conn != nil {
		_ = p.conn.Close(ctx)
		p.conn = nil
	}
	p.step("connect")
	cctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, p.config)
	if err != nil {
		return nil, fmt.Errorf("clients: %s: %w", p.flavor, &pgConnectError{err})
	}
	p.conn = conn
	return conn, nil
}

// exec runs one statement with the per-statement timeout and returns the
// number of rows it affected.
func (p *Postgres) exec(ctx context.Context, sql string, args ...any) (int64, error) {
	conn, err := p.connection(ctx)
	if err != nil {
		return 0, err
	}
	cctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	tag, err := conn.Exec(cctx, sql, args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

// queryRow runs one statement that returns at most one row and scans it;
// found is false when it returned none.
func (p *Postgres) queryRow(ctx context.Context, sql string, args []any, dest ...any) (found bool, err error) {
	conn, err := p.connection(ctx)
	if err != nil {
		return false, err
	}
	cctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	err = conn.QueryRow(cctx, sql, args...).Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// Acquire takes the lock once.
//
// Its steps (pgSteps): connect, when the Locker has no open connection; for
// pg-mutex, pg-timeout and pg-state, create, an insert of the key's row
// (released, with ts 0, or done) that does nothing when the row exists;
// then the one statement that can take the lock. Neither the connect nor
// the create can take the lock: a row created released holds nothing, and
// an insert that does nothing on conflict never changes a row that exists,
// whenever it commits. A failure at either, a network error included, is
// ErrNotAcquired (recorded fail), and so is a failure to open the
// connection that the last statement needed. A failure after the last
// statement was sent is indeterminate.
func (p *Postgres) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	name := p.flavor.String()
	lease, err := p.acquire(ctx, key, ttl)
	var bg *beforeGrantError
	var ce *pgConnectError
	switch {
	case err == nil:
		return lease, nil
	case errors.As(err, &bg):
		return Lease{}, fmt.Errorf("clients: %s: acquire %s: %w", name, key, err)
	case errors.As(err, &ce):
		// The connection the last statement needed did not open: it was
		// not sent.
		return Lease{}, fmt.Errorf("clients: %s: acquire %s: %w", name, key, beforeGrant("connect", err))
	case errors.Is(err, ErrNotAcquired):
		return Lease{}, fmt.Errorf("clients: %s: %s is held: %w", name, key, err)
	default:
		if p.flavor == pgAdvisory && p.conn != nil {
			// The session may have taken the lock without our knowing;
			// ending it releases whatever it holds (session advisory locks
			// are reentrant, so keeping it could hold the lock forever).
			_ = p.Close()
		}
		return Lease{}, fmt.Errorf("clients: %s: acquire %s: %w", name, key, err)
	}
}

func (p *Postgres) acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	if _, err := p.connection(ctx); err != nil {
		return Lease{}, beforeGrant("connect", err)
	}
	switch p.flavor {
	case pgMutex:
		return p.acquireMutex(ctx, key)
	case pgTimeout:
		return p.acquireTimeout(ctx, key, ttl)
	case pgState:
		return p.acquireState(ctx, key)
	case pgUniqueRow:
		return p.acquireUniqueRow(ctx, key)
	default: // pgAdvisory
		return p.acquireAdvisory(ctx, key)
	}
}

// acquireMutex takes the pg-mutex lock: the row's acquired flag, set from
// false to true.
func (p *Postgres) acquireMutex(ctx context.Context, key string) (Lease, error) {
	p.step("create")
	if _, err := p.exec(ctx, `insert into task_state (id, acquired) values ($1, false) on conflict (id) do nothing`, key); err != nil {
		return Lease{}, beforeGrant("create", err)
	}
	p.step("acquire")
	n, err := p.exec(ctx, `update task_state set acquired = $1 where id = $2 and acquired != $1`, true, key)
	if err != nil {
		return Lease{}, err
	}
	p.runAfterResponse()
	if n == 0 {
		return Lease{}, ErrNotAcquired
	}
	return Lease{Key: key, Never: true}, nil
}

// acquireTimeout takes the pg-timeout lock: the row's ts, moved to the
// worker's clock when the stored one has timed out.
func (p *Postgres) acquireTimeout(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	if err := checkTTL(p.flavor.String(), ttl); err != nil {
		return Lease{}, err
	}
	p.step("create")
	if _, err := p.exec(ctx, `insert into task_timeout (id, ts, timeout) values ($1, 0, $2) on conflict (id) do nothing`,
		key, ttl.Milliseconds()); err != nil {
		return Lease{}, beforeGrant("create", err)
	}
	p.step("acquire")
	start := time.Now() // no later than the clock reading below
	ts := p.clock.Now().UnixMilli()
	var timeout int64
	found, err := p.queryRow(ctx, `update task_timeout set ts = $1 where id = $2 and ts + timeout < $1 returning timeout`,
		[]any{ts, key}, &timeout)
	if err != nil {
		return Lease{}, err
	}
	p.runAfterResponse()
	if !found {
		return Lease{}, ErrNotAcquired
	}
	if ts < 0 {
		return Lease{}, fmt.Errorf("worker clock before 1970 gave ts %d", ts)
	}
	// A contender takes the row when its own clock passes ts + timeout:
	// timeout after start on a clock like ours.
	stored := time.Duration(timeout) * time.Millisecond
	return Lease{Key: key, Token: uint64(ts), Until: validUntil(start, stored, p.drift), Expires: start.Add(stored)}, nil
}

// acquireState takes the pg-state lock: the task's status, captured as
// pgStateCapture does.
func (p *Postgres) acquireState(ctx context.Context, key string) (Lease, error) {
	p.step("create")
	if _, err := p.exec(ctx, `insert into task (id, status) values ($1, 'done') on conflict (id) do nothing`, key); err != nil {
		return Lease{}, beforeGrant("create", err)
	}
	p.step("acquire")
	var id, status string
	found, err := p.queryRow(ctx, pgStateCapture, []any{key}, &id, &status)
	if err != nil {
		return Lease{}, err
	}
	p.runAfterResponse()
	if !found {
		return Lease{}, ErrNotAcquired
	}
	return Lease{Key: key, Never: true}, nil
}

// acquireUniqueRow takes the pg-unique-row lock: a row of the key's id,
// which the primary key lets only one insert create.
func (p *Postgres) acquireUniqueRow(ctx context.Context, key string) (Lease, error) {
	owner := p.owners.next()
	var token int64
	p.step("acquire")
	_, err := p.queryRow(ctx, `insert into lock_row (id, owner) values ($1, $2) returning token`, []any{key, owner}, &token)
	p.runAfterResponse()
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23505" {
			return Lease{}, ErrNotAcquired
		}
		return Lease{}, err
	}
	return Lease{Key: key, Owner: owner, Token: uint64(token), Never: true}, nil
}

// acquireAdvisory takes the pg-advisory lock: the session's advisory lock
// on the key's hash.
func (p *Postgres) acquireAdvisory(ctx context.Context, key string) (Lease, error) {
	var ok bool
	p.step("acquire")
	if _, err := p.queryRow(ctx, `select pg_try_advisory_lock(hashtextextended($1, 0))`, []any{key}, &ok); err != nil {
		return Lease{}, err
	}
	p.runAfterResponse()
	if !ok {
		return Lease{}, ErrNotAcquired
	}
	return Lease{Key: key, Owner: "pid-" + strconv.FormatUint(uint64(p.conn.PgConn().PID()), 10), Never: true, Session: true}, nil
}

// Release gives the lock back as the flavor's seed does.
func (p *Postgres) Release(ctx context.Context, l Lease) error {
	name := p.flavor.String()
	var held bool
	var err error
	switch p.flavor {
	case pgTimeout:
		return fmt.Errorf("clients: %s: release %s: %w", name, l.Key, ErrReleaseNoOp)
	case pgMutex:
		var n int64
		n, err = p.exec(ctx, `update task_state set acquired = $1 where id = $2 and acquired != $1`, false, l.Key)
		held = n > 0
	case pgState:
		var n int64
		n, err = p.exec(ctx, `update task set status = $1 where id = $2`, "done", l.Key)
		held = n > 0
	case pgUniqueRow:
		var n int64
		n, err = p.exec(ctx, `delete from lock_row where id = $1 and owner = $2`, l.Key, l.Owner)
		held = n > 0
	case pgAdvisory:
		if p.conn == nil || p.conn.IsClosed() ||
			"pid-"+strconv.FormatUint(uint64(p.conn.PgConn().PID()), 10) != l.Owner {
			// The session that held the lock is gone, and its locks with it.
			return fmt.Errorf("clients: %s: release %s: session %s ended: %w", name, l.Key, l.Owner, ErrNotHeld)
		}
		_, err = p.queryRow(ctx, `select pg_advisory_unlock(hashtextextended($1, 0))`, []any{l.Key}, &held)
	}
	if err != nil {
		return fmt.Errorf("clients: %s: release %s: %w", name, l.Key, err)
	}
	if !held {
		return fmt.Errorf("clients: %s: release %s: %w", name, l.Key, ErrNotHeld)
	}
	return nil
}

// Close closes the connection.
func (p *Postgres) Close() error {
	if p.conn == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.timeout)
	defer cancel()
	err := p.conn.Close(ctx)
	p.conn = nil
	if err != nil {
		return fmt.Errorf("clients: %s: close: %w", p.flavor, err)
	}
	return nil
}

// ReadGuarded returns the guarded register's value for l.Key.
func (p *Postgres) ReadGuarded(ctx context.Context, l Lease) (int64, error) {
	var value int64
	if _, err := p.queryRow(ctx, `select value from guarded_resource where key = $1`, []any{l.Key}, &value); err != nil {
		return 0, fmt.Errorf("clients: %s: read %s: %w", p.flavor, l.Key, err)
	}
	return value, nil
}

// WriteGuarded stores value for l.Key in one statement that applies only
// while the stored token is not above the lease's.
func (p *Postgres) WriteGuarded(ctx context.Context, l Lease, value int64) error {
	if l.Token > math.MaxInt64 {
		return fmt.Errorf("clients: %s: token %d does not fit a bigint", p.flavor, l.Token)
	}
	n, err := p.exec(ctx, `insert into guarded_resource (key, value, token) values ($1, $2, $3)
on conflict (key) do update set value = excluded.value, token = excluded.token
where guarded_resource.token <= excluded.token`, l.Key, value, int64(l.Token))
	if err != nil {
		return fmt.Errorf("clients: %s: write %s: %w", p.flavor, l.Key, err)
	}
	if n == 0 {
		return fmt.Errorf("clients: %s: write %s with token %d: %w", p.flavor, l.Key, l.Token, ErrStaleToken)
	}
	return nil
}
