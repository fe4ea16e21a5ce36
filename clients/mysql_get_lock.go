package clients

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"time"
)

// DefaultMySQLTimeout bounds each MySQL statement and connection attempt
// of the MySQL locks (option "timeout").
const DefaultMySQLTimeout = time.Second

// MySQLSetupConnect bounds a client's first connection, opened before the
// run's clock starts, when it is longer than the client's timeout, as
// PostgresSetupConnect does for the PostgreSQL locks.
const MySQLSetupConnect = 10 * time.Second

// DefaultMySQLUser is the user the MySQL locks connect as (option "user").
const DefaultMySQLUser = "root"

// mysqlLockNameMax is the longest name GET_LOCK takes (MariaDB's and
// MySQL's NAME_LEN, in characters); a longer key is locked under its hash.
const mysqlLockNameMax = 64

// MySQLGetLock is mysql-get-lock: MySQL's and MariaDB's user-level lock,
// `SELECT GET_LOCK(name, 0)` on one session of its own (1 = acquired, 0 =
// held by another session: ErrNotAcquired), given back by `SELECT
// RELEASE_LOCK(name)` (1 = released; 0, held by another session, and
// NULL, held by none, are ErrNotHeld). The lock belongs to the session:
// the server frees it when the session ends (its connection closed, or
// its client gone from the network once the server notices), never on its
// own. The owner is the session's CONNECTION_ID. A Locker keeps one
// connection, dialled to its endpoint's address with the target's TCP
// settings, and opens a new one at its next acquire when that one broke.
//
// GET_LOCK is re-entrant per session (MySQL 5.7, MariaDB 10.0.2 and
// later): a session that holds the name takes it again, and frees it only
// once it has released it as many times. A Locker never asks twice for a
// name it holds; an acquire whose outcome is unknown closes its
// connection, ending the session and whatever it may have taken.
//
// A key longer than 64 characters is locked under "sha256:" and the first
// 28 bytes of its SHA-256 in hex. Options: "user" (default
// DefaultMySQLUser, no password), "timeout" (per statement and connect,
// default DefaultMySQLTimeout).
type MySQLGetLock struct {
	afterResponse
	*mysqlSession
}

var (
	_ Locker         = (*MySQLGetLock)(nil)
	_ ResponseHooker = (*MySQLGetLock)(nil)
)

// NewMySQLGetLock is the mysql-get-lock Factory.
func NewMySQLGetLock(ctx context.Context, t Target) (Locker, error) {
	s, err := newMySQLSession(ctx, "mysql-get-lock", t)
	if err != nil {
		return nil, err
	}
	return &MySQLGetLock{mysqlSession: s}, nil
}

// mysqlLockName returns the GET_LOCK name of key.
func mysqlLockName(key string) string {
	if len([]rune(key)) <= mysqlLockNameMax {
		return key
	}
	sum := sha256.Sum256([]byte(key))
	return "sha256:" + hex.EncodeToString(sum[:28])
}

// queryInt runs one statement that returns one integer or NULL on the
// session (mysqlSession.queryRow).
func (m *MySQLGetLock) queryInt(ctx context.Context, wait time.Duration, query string, args ...any) (sql.NullInt64, error) {
	var v sql.NullInt64
	_, err := m.queryRow(ctx, wait, query, args, &v)
	return v, err
}

// Acquire takes the lock once: GET_LOCK(name, 0).
func (m *MySQLGetLock) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	return m.acquire(ctx, key, 0)
}

// AcquireWait takes the lock, waiting for it up to wait on the server:
// GET_LOCK(name, wait in seconds, fractions included), which returns 0
// when the wait ended with the lock still held by another session.
func (m *MySQLGetLock) AcquireWait(ctx context.Context, key string, ttl, wait time.Duration) (Lease, error) {
	return m.acquire(ctx, key, wait)
}

// acquire runs the steps of mysqlSteps: connect when the Locker has no
// connection (it sends nothing that can take the lock: a failure there is
// ErrNotAcquired), then GET_LOCK. A GET_LOCK the driver did not send (it
// reports driver.ErrBadConn only then) is ErrNotAcquired too; any other
// failure of it is indeterminate, and has closed the connection, so that
// the session ends with whatever it may have taken.
func (m *MySQLGetLock) acquire(ctx context.Context, key string, wait time.Duration) (Lease, error) {
	if err := m.connectWithin(ctx, m.timeout); err != nil {
		return Lease{}, fmt.Errorf("clients: mysql-get-lock: acquire %s: %w", key, beforeGrant("connect", err))
	}
	m.step("get_lock")
	v, err := m.queryInt(ctx, wait, "SELECT GET_LOCK(?, ?)", mysqlLockName(key), wait.Seconds())
	if mysqlUnsent(err) {
		return Lease{}, fmt.Errorf("clients: mysql-get-lock: acquire %s: %w", key, &unsentError{step: "get_lock", err: err})
	}
	if err != nil {
		_ = m.dropConnection()
		return Lease{}, fmt.Errorf("clients: mysql-get-lock: acquire %s: get_lock: %w", key, err)
	}
	m.runAfterResponse()
	switch {
	case !v.Valid:
		// GET_LOCK answers NULL on an error of the server (the session
		// killed, out of memory): whether it took the lock is unknown.
		_ = m.dropConnection()
		return Lease{}, fmt.Errorf("clients: mysql-get-lock: acquire %s: get_lock: GET_LOCK returned NULL", key)
	case v.Int64 == 0 && wait > 0:
		return Lease{}, fmt.Errorf("clients: mysql-get-lock: %s is held (waited %v): %w", key, wait, ErrNotAcquired)
	case v.Int64 == 0:
		return Lease{}, fmt.Errorf("clients: mysql-get-lock: %s is held: %w", key, ErrNotAcquired)
	}
	return Lease{Key: key, Owner: m.owner(), Never: true, Session: true}, nil
}

// Release gives the lock back: RELEASE_LOCK(name) on the lease's session.
// A lease of a session that has ended is not held (its locks ended with
// it); RELEASE_LOCK's 0 (held by another session) and NULL (held by none)
// are ErrNotHeld.
func (m *MySQLGetLock) Release(ctx context.Context, l Lease) error {
	if m.conn == nil || m.owner() != l.Owner {
		return fmt.Errorf("clients: mysql-get-lock: release %s: session %s ended: %w", l.Key, l.Owner, ErrNotHeld)
	}
	v, err := m.queryInt(ctx, 0, "SELECT RELEASE_LOCK(?)", mysqlLockName(l.Key))
	if err != nil {
		return fmt.Errorf("clients: mysql-get-lock: release %s: %w", l.Key, err)
	}
	switch {
	case !v.Valid:
		return fmt.Errorf("clients: mysql-get-lock: release %s: no session holds it: %w", l.Key, ErrNotHeld)
	case v.Int64 != 1:
		return fmt.Errorf("clients: mysql-get-lock: release %s: another session holds it: %w", l.Key, ErrNotHeld)
	}
	return nil
}

// Close closes the connection, ending the session, and the driver's pool.
func (m *MySQLGetLock) Close() error { return m.close() }
