package clients

import (
	"context"
	"fmt"
	"time"
)

// mysqlDatabase is the database of the MySQL row locks' tables, created by
// the first Locker that needs it.
const mysqlDatabase = "jepsen_lite"

// The server's error numbers the row locks read.
const (
	// mysqlLockWaitTimeout (ER_LOCK_WAIT_TIMEOUT): a locking read did
	// not get its row lock within innodb_lock_wait_timeout, or at once
	// with NOWAIT; the statement took nothing.
	mysqlLockWaitTimeout = 1205
	// mysqlDuplicateKey (ER_DUP_ENTRY): an insert met a row of the same
	// unique key.
	mysqlDuplicateKey = 1062
)

// mysqlRowSchema creates the table of each row lock, in mysqlDatabase.
var mysqlRowSchema = map[string]string{
	"mysql-for-update": `CREATE TABLE IF NOT EXISTS ` + mysqlDatabase + `.row_lock (
  id VARCHAR(255) NOT NULL PRIMARY KEY) ENGINE=InnoDB`,
	"mysql-lease": `CREATE TABLE IF NOT EXISTS ` + mysqlDatabase + `.lease_lock (
  id      VARCHAR(255)    NOT NULL PRIMARY KEY,
  owner   VARCHAR(64)     NOT NULL,
  expires DATETIME(6)     NOT NULL,
  token   BIGINT UNSIGNED NOT NULL) ENGINE=InnoDB`,
	"mysql-unique-row": `CREATE TABLE IF NOT EXISTS ` + mysqlDatabase + `.unique_lock (
  id    VARCHAR(255)    NOT NULL PRIMARY KEY,
  owner VARCHAR(64)     NOT NULL,
  token BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  UNIQUE KEY (token)) ENGINE=InnoDB`,
}

// newMySQLRowSession opens the session of the row lock called name and
// creates its database and table when they do not exist (concurrent
// creations by several workers are safe: the server serializes them).
func newMySQLRowSession(ctx context.Context, name string, t Target) (*mysqlSession, error) {
	s, err := newMySQLSession(ctx, name, t)
	if err != nil {
		return nil, err
	}
	for _, stmt := range []string{"CREATE DATABASE IF NOT EXISTS " + mysqlDatabase, mysqlRowSchema[name]} {
		if _, _, err := s.exec(ctx, 4*s.timeout, stmt); err != nil {
			_ = s.close()
			return nil, fmt.Errorf("clients: %s: setup: %w", name, err)
		}
	}
	return s, nil
}

// mysqlStepError returns the error of a row lock's acquire whose step
// that can take the lock failed with err: definite (ErrNotAcquired) when
// the driver did not send it (unsentError) or the server refused it (an
// autocommitted statement the server refused changed nothing), else
// indeterminate.
func mysqlStepError(name, key, step string, err error) error {
	switch {
	case mysqlUnsent(err):
		return fmt.Errorf("clients: %s: acquire %s: %w", name, key, &unsentError{step: step, err: err})
	case mysqlCode(err) != 0:
		return fmt.Errorf("clients: %s: acquire %s: %s refused by the server, which took nothing: %w: %w", name, key, step, err, ErrNotAcquired)
	}
	return fmt.Errorf("clients: %s: acquire %s: %s: %w", name, key, step, err)
}

// mysqlWholeSeconds returns d rounded up to whole seconds, at least one:
// the unit of wait_timeout and innodb_lock_wait_timeout.
func mysqlWholeSeconds(d time.Duration) int64 {
	s := int64((d + time.Second - 1) / time.Second)
	return max(s, 1)
}

// MySQLLease is mysql-lease: the seeds' lease table (the SQL seed's
// timeout lock, with the common-locks seed's owner) on MySQL or MariaDB,
// one row per key in table lease_lock, taken by one autocommitted
// statement:
//
//	INSERT INTO lease_lock (id, owner, expires, token)
//	VALUES (key, owner, NOW(6) + ttl, LAST_INSERT_ID(1))
//	ON DUPLICATE KEY UPDATE
//	  token = IF(expires <= NOW(6), LAST_INSERT_ID(token + 1), token),
//	  owner = IF(expires <= NOW(6), VALUES(owner), owner),
//	  expires = IF(expires <= NOW(6), VALUES(expires), expires)
//
// The server's clock decides: the expiry is written and compared with the
// server's NOW(6), never with the worker's clock, so a skewed worker clock
// changes nothing, while a server clock that jumps forward frees every
// lease early. A new row (1 affected row) or a taken one (2) is the grant;
// 0 rows (the row unchanged) is ErrNotAcquired. The assignments run left
// to right, so the expiry is compared before it changes. The fencing
// token is the row's counter, set to 1 by the insert and raised by each
// update that takes the row, in the statement that grants: strictly
// increasing per key, read from the reply's insert id (LAST_INSERT_ID).
// The owner is a fresh random value per acquisition. Until = the
// acquire's start + ttl − drift; Expires = the start + ttl.
//
// Release sets expires to NOW(6) where the row has the lease's owner and
// has not expired (0 rows = ErrNotHeld); Renew sets it to NOW(6) + ttl
// under the same condition, keeping the token. Options as
// mysql-get-lock's.
type MySQLLease struct {
	afterResponse
	*mysqlSession
	drift  time.Duration
	owners ownerValues
}

var (
	_ Locker         = (*MySQLLease)(nil)
	_ Renewer        = (*MySQLLease)(nil)
	_ Waiter         = (*MySQLLease)(nil)
	_ ResponseHooker = (*MySQLLease)(nil)
)

// mysqlLeaseAcquire is mysql-lease's acquire (MySQLLease).
const mysqlLeaseAcquire = `INSERT INTO ` + mysqlDatabase + `.lease_lock (id, owner, expires, token)
VALUES (?, ?, NOW(6) + INTERVAL ? MICROSECOND, LAST_INSERT_ID(1))
ON DUPLICATE KEY UPDATE
  token = IF(expires <= NOW(6), LAST_INSERT_ID(token + 1), token),
  owner = IF(expires <= NOW(6), VALUES(owner), owner),
  expires = IF(expires <= NOW(6), VALUES(expires), expires)`

// NewMySQLLease is the mysql-lease Factory.
func NewMySQLLease(ctx context.Context, t Target) (Locker, error) {
	const name = "mysql-lease"
	s, err := newMySQLRowSession(ctx, name, t)
	if err != nil {
		return nil, err
	}
	owners, err := newOwnerValues(name, t)
	if err != nil {
		_ = s.close()
		return nil, err
	}
	return &MySQLLease{mysqlSession: s, drift: t.Drift, owners: owners}, nil
}

// Acquire takes the lock once: the steps of mysqlLeaseSteps.
func (m *MySQLLease) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	if err := checkTTL(m.name, ttl); err != nil {
		return Lease{}, err
	}
	if err := m.connectWithin(ctx, m.timeout); err != nil {
		return Lease{}, fmt.Errorf("clients: %s: acquire %s: %w", m.name, key, beforeGrant("connect", err))
	}
	owner := m.owners.next()
	m.step("acquire")
	start := time.Now()
	n, token, err := m.exec(ctx, 0, mysqlLeaseAcquire, key, owner, ttl.Microseconds())
	if err != nil {
		return Lease{}, mysqlStepError(m.name, key, "acquire", err)
	}
	m.runAfterResponse()
	if n == 0 {
		return Lease{}, fmt.Errorf("clients: %s: %s is held: %w", m.name, key, ErrNotAcquired)
	}
	return Lease{Key: key, Owner: owner, Token: uint64(token), Until: validUntil(start, ttl, m.drift), Expires: start.Add(ttl)}, nil
}

// AcquireWait retries the acquire after a random delay until it takes
// the lock or wait has passed.
func (m *MySQLLease) AcquireWait(ctx context.Context, key string, ttl, wait time.Duration) (Lease, error) {
	return retryAcquire(ctx, key, ttl, wait, m.owners.rand, m.Acquire)
}

// Renew moves the lease's expiry to the server's NOW(6) + ttl while the
// row has its owner and has not expired.
func (m *MySQLLease) Renew(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	if err := checkTTL(m.name, ttl); err != nil {
		return Lease{}, err
	}
	if err := m.connectWithin(ctx, m.timeout); err != nil {
		return Lease{}, fmt.Errorf("clients: %s: renew %s: %w", m.name, l.Key, err)
	}
	start := time.Now()
	n, _, err := m.exec(ctx, 0, `UPDATE `+mysqlDatabase+`.lease_lock SET expires = NOW(6) + INTERVAL ? MICROSECOND
WHERE id = ? AND owner = ? AND expires > NOW(6)`, ttl.Microseconds(), l.Key, l.Owner)
	if err != nil {
		return Lease{}, fmt.Errorf("clients: %s: renew %s: %w", m.name, l.Key, err)
	}
	if n == 0 {
		return Lease{}, fmt.Errorf("clients: %s: renew %s: the row has another owner, or expired: %w", m.name, l.Key, ErrNotHeld)
	}
	l.Until, l.Expires = validUntil(start, ttl, m.drift), start.Add(ttl)
	return l, nil
}

// Release ends the lease at the server's NOW(6) while the row has its
// owner and has not expired.
func (m *MySQLLease) Release(ctx context.Context, l Lease) error {
	return m.releaseRow(ctx, l, "the row has another owner, or expired", `UPDATE `+mysqlDatabase+`.lease_lock SET expires = NOW(6)
WHERE id = ? AND owner = ? AND expires > NOW(6)`)
}

// Close closes the connection and the driver's pool.
func (m *MySQLLease) Close() error { return m.close() }

// MySQLUniqueRow is mysql-unique-row: the common-locks seed's database
// lock on MySQL or MariaDB, a row of the key in table unique_lock (id the
// primary key), taken by `INSERT INTO unique_lock (id, owner) VALUES
// (key, owner)` (a duplicate key, ER_DUP_ENTRY, is ErrNotAcquired) and
// given back by `DELETE FROM unique_lock WHERE id = key AND owner =
// owner` (0 rows = ErrNotHeld). No expiry: the row stays until it is
// deleted, whatever becomes of its client. The owner is a fresh random
// value per acquisition. The token is the row's AUTO_INCREMENT, read from
// the reply's insert id: drawn when the insert starts, before the
// duplicate check, so an insert that stalls between the two may take the
// lock with a token below its predecessor's, as pg-unique-row's bigserial
// may; InnoDB keeps the counter across restarts (MariaDB 10.2.4 and
// later). Options as mysql-get-lock's.
type MySQLUniqueRow struct {
	afterResponse
	*mysqlSession
	owners ownerValues
}

var (
	_ Locker         = (*MySQLUniqueRow)(nil)
	_ Waiter         = (*MySQLUniqueRow)(nil)
	_ ResponseHooker = (*MySQLUniqueRow)(nil)
)

// NewMySQLUniqueRow is the mysql-unique-row Factory.
func NewMySQLUniqueRow(ctx context.Context, t Target) (Locker, error) {
	const name = "mysql-unique-row"
	s, err := newMySQLRowSession(ctx, name, t)
	if err != nil {
		return nil, err
	}
	owners, err := newOwnerValues(name, t)
	if err != nil {
		_ = s.close()
		return nil, err
	}
	return &MySQLUniqueRow{mysqlSession: s, owners: owners}, nil
}

// Acquire takes the lock once: the steps of mysqlUniqueRowSteps.
func (m *MySQLUniqueRow) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	if err := m.connectWithin(ctx, m.timeout); err != nil {
		return Lease{}, fmt.Errorf("clients: %s: acquire %s: %w", m.name, key, beforeGrant("connect", err))
	}
	owner := m.owners.next()
	m.step("acquire")
	_, token, err := m.exec(ctx, 0, `INSERT INTO `+mysqlDatabase+`.unique_lock (id, owner) VALUES (?, ?)`, key, owner)
	if mysqlCode(err) == mysqlDuplicateKey {
		m.runAfterResponse()
		return Lease{}, fmt.Errorf("clients: %s: %s is held: %w", m.name, key, ErrNotAcquired)
	}
	if err != nil {
		return Lease{}, mysqlStepError(m.name, key, "acquire", err)
	}
	m.runAfterResponse()
	return Lease{Key: key, Owner: owner, Token: uint64(token), Never: true}, nil
}

// AcquireWait retries the insert after a random delay until it takes the
// lock or wait has passed.
func (m *MySQLUniqueRow) AcquireWait(ctx context.Context, key string, ttl, wait time.Duration) (Lease, error) {
	return retryAcquire(ctx, key, ttl, wait, m.owners.rand, m.Acquire)
}

// Release deletes the lease's row where it still has the lease's owner.
func (m *MySQLUniqueRow) Release(ctx context.Context, l Lease) error {
	return m.releaseRow(ctx, l, "the row has another owner, or none", `DELETE FROM `+mysqlDatabase+`.unique_lock WHERE id = ? AND owner = ?`)
}

// Close closes the connection and the driver's pool.
func (m *MySQLUniqueRow) Close() error { return m.close() }
