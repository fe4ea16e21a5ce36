package clients

import (
	"context"
	"fmt"
	"time"
)

// MySQLForUpdate is mysql-for-update: InnoDB's row lock, taken by a
// locking read, `SELECT id FROM row_lock WHERE id = key FOR UPDATE`, in a
// transaction the Locker keeps open on its own session while it holds the
// lock, and given back by COMMIT. The server frees the row lock when the
// transaction ends: at the COMMIT, or when the session ends (its
// connection closed, or killed by the server).
//
// The lease is the session's wait_timeout: before the transaction begins
// the session's wait_timeout is set to the ttl in whole seconds (rounded
// up), so that the server ends a session that sent nothing for that long
// and rolls its transaction back. Until = the acquire's start + that
// timeout − drift; Expires = the start + that timeout (the server counts
// it from its reply to the locking read, after the start). A refused
// acquire and a release set wait_timeout back to the server's default.
//
// The locking read waits for the row lock as the server does: without a
// wait, FOR UPDATE NOWAIT; with one, up to the session's
// innodb_lock_wait_timeout, set to the wait in whole seconds (rounded
// up). A read that did not get the row (ER_LOCK_WAIT_TIMEOUT) is
// ErrNotAcquired, and its transaction is rolled back. The key's row is
// created at the first acquire that finds none, by an INSERT IGNORE after
// a plain (non-locking) read: an INSERT IGNORE of a row that exists would
// wait for the holder's lock. The owner is the session's CONNECTION_ID.
// No token. An acquire whose outcome is unknown closes its connection,
// ending the session and whatever it may have taken, as does a release
// that failed. A Locker holds one key at a time. Options as
// mysql-get-lock's.
type MySQLForUpdate struct {
	afterResponse
	*mysqlSession
	drift time.Duration
	held  string // the key whose row the open transaction holds; "" when none
}

var (
	_ Locker         = (*MySQLForUpdate)(nil)
	_ Waiter         = (*MySQLForUpdate)(nil)
	_ ResponseHooker = (*MySQLForUpdate)(nil)
)

// NewMySQLForUpdate is the mysql-for-update Factory.
func NewMySQLForUpdate(ctx context.Context, t Target) (Locker, error) {
	s, err := newMySQLRowSession(ctx, "mysql-for-update", t)
	if err != nil {
		return nil, err
	}
	return &MySQLForUpdate{mysqlSession: s, drift: t.Drift}, nil
}

// Acquire takes the lock once: FOR UPDATE NOWAIT.
func (m *MySQLForUpdate) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	return m.acquire(ctx, key, ttl, 0)
}

// AcquireWait takes the lock, waiting for the row lock on the server up to
// wait in whole seconds (innodb_lock_wait_timeout).
func (m *MySQLForUpdate) AcquireWait(ctx context.Context, key string, ttl, wait time.Duration) (Lease, error) {
	return m.acquire(ctx, key, ttl, wait)
}

// acquire runs the steps of mysqlForUpdateSteps: connect, create, begin,
// then the locking read, the one that can take the lock.
func (m *MySQLForUpdate) acquire(ctx context.Context, key string, ttl, wait time.Duration) (Lease, error) {
	if err := checkTTL(m.name, ttl); err != nil {
		return Lease{}, err
	}
	if m.held != "" {
		return Lease{}, fmt.Errorf("clients: %s: acquire %s: the Locker holds %s; release it first", m.name, key, m.held)
	}
	timeout := time.Duration(mysqlWholeSeconds(ttl)) * time.Second
	if err := m.prepare(ctx, key, timeout, wait); err != nil {
		return Lease{}, fmt.Errorf("clients: %s: acquire %s: %w", m.name, key, err)
	}
	m.step("select")
	start := time.Now()
	read, limit := `SELECT id FROM `+mysqlDatabase+`.row_lock WHERE id = ? FOR UPDATE NOWAIT`, time.Duration(0)
	if wait > 0 {
		read, limit = `SELECT id FROM `+mysqlDatabase+`.row_lock WHERE id = ? FOR UPDATE`, time.Duration(mysqlWholeSeconds(wait))*time.Second
	}
	var id string
	found, err := m.queryRow(ctx, limit, read, []any{key}, &id)
	switch {
	case err == nil && found:
	case mysqlCode(err) == mysqlLockWaitTimeout || err == nil:
		m.runAfterResponse()
		m.endTransaction(ctx, "ROLLBACK")
		return Lease{}, fmt.Errorf("clients: %s: %s is held: %w", m.name, key, ErrNotAcquired)
	case mysqlUnsent(err):
		_ = m.dropConnection()
		return Lease{}, fmt.Errorf("clients: %s: acquire %s: %w", m.name, key, &unsentError{step: "select", err: err})
	default:
		// The transaction may hold the row: ending the session frees it.
		_ = m.dropConnection()
		return Lease{}, fmt.Errorf("clients: %s: acquire %s: select: %w", m.name, key, err)
	}
	m.runAfterResponse()
	m.held = key
	return Lease{Key: key, Owner: m.owner(), Until: validUntil(start, timeout, m.drift), Expires: start.Add(timeout), Session: true}, nil
}

// prepare runs the steps before the locking read, none of which can take
// the lock: connect, create (the key's row, when a plain read finds none)
// and begin (the session's timeouts, then START TRANSACTION). Its errors
// are ErrNotAcquired (beforeGrant).
func (m *MySQLForUpdate) prepare(ctx context.Context, key string, timeout, wait time.Duration) error {
	if err := m.connectWithin(ctx, m.timeout); err != nil {
		return beforeGrant("connect", err)
	}
	m.step("create")
	var rows int64
	if _, err := m.queryRow(ctx, 0, `SELECT COUNT(*) FROM `+mysqlDatabase+`.row_lock WHERE id = ?`, []any{key}, &rows); err != nil {
		return beforeGrant("create", err)
	}
	if rows == 0 {
		if _, _, err := m.exec(ctx, 0, `INSERT IGNORE INTO `+mysqlDatabase+`.row_lock (id) VALUES (?)`, key); err != nil {
			return beforeGrant("create", err)
		}
	}
	m.step("begin")
	if _, _, err := m.exec(ctx, 0, `SET SESSION wait_timeout = ?, SESSION innodb_lock_wait_timeout = ?`,
		int64(timeout/time.Second), mysqlWholeSeconds(wait)); err != nil {
		return beforeGrant("begin", err)
	}
	if _, _, err := m.exec(ctx, 0, `START TRANSACTION`); err != nil {
		// Whatever the server began holds no row yet.
		_ = m.dropConnection()
		return beforeGrant("begin", err)
	}
	return nil
}

// endTransaction ends the open transaction with stmt (COMMIT or ROLLBACK)
// and sets the session's wait_timeout back to the server's default; it
// closes the connection when either fails, which ends the transaction
// too, and returns the error of stmt.
func (m *MySQLForUpdate) endTransaction(ctx context.Context, stmt string) error {
	m.held = ""
	_, _, err := m.exec(ctx, 0, stmt)
	if err == nil {
		_, _, err2 := m.exec(ctx, 0, `SET SESSION wait_timeout = DEFAULT`)
		if err2 != nil {
			_ = m.dropConnection()
		}
		return nil
	}
	_ = m.dropConnection()
	return err
}

// Release commits the transaction that holds the lease's row. A lease of
// a session that has ended is not held (its transaction was rolled back
// with it); so is one whose COMMIT the driver found the server had closed
// the connection before (driver.ErrBadConn).
func (m *MySQLForUpdate) Release(ctx context.Context, l Lease) error {
	if m.conn == nil || m.owner() != l.Owner || m.held != l.Key {
		return fmt.Errorf("clients: %s: release %s: session %s ended: %w", m.name, l.Key, l.Owner, ErrNotHeld)
	}
	err := m.endTransaction(ctx, "COMMIT")
	switch {
	case err == nil:
		return nil
	case mysqlUnsent(err):
		return fmt.Errorf("clients: %s: release %s: the server closed session %s: %w: %w", m.name, l.Key, l.Owner, err, ErrNotHeld)
	}
	return fmt.Errorf("clients: %s: release %s: commit: %w", m.name, l.Key, err)
}

// Close closes the connection, ending the session and its transaction,
// and the driver's pool.
func (m *MySQLForUpdate) Close() error {
	m.held = ""
	return m.close()
}
