package clients

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/go-sql-driver/mysql"
)

// mysqlSession is the one connection, and so the one server session, of a
// MySQL or MariaDB Locker: dialled to the primary endpoint's address with
// the target's TCP settings, opened at the first acquire after it has none
// (the "connect" step), and closed when it broke, so that the next acquire
// opens another.
type mysqlSession struct {
	stepHook
	name    string // the algorithm, for errors
	db      *sql.DB
	conn    *sql.Conn
	session uint64 // CONNECTION_ID() of conn's session
	timeout time.Duration
}

// newMySQLSession reads the options "user" and "timeout" of the algorithm
// called name and opens its session within MySQLSetupConnect or the
// timeout, whichever is longer.
func newMySQLSession(ctx context.Context, name string, t Target) (*mysqlSession, error) {
	opts, err := readOptions(name, t.Options, mysqlOptions, false)
	if err != nil {
		return nil, err
	}
	timeout := opts.duration(optMySQLTimeout)
	ep, err := primaryEndpoint(name, t.Endpoints)
	if err != nil {
		return nil, err
	}
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.User = "tcp", ep.Addr, opts.text(optMySQLUser)
	cfg.Timeout = timeout
	// One COM_QUERY per statement: its arguments are interpolated by the
	// driver, not sent in a prepared statement of its own.
	cfg.InterpolateParams = true
	cfg.Logger = mysqlQuiet{}
	if !t.TCP.IsZero() {
		cfg.DialFunc = tcpDialer(t.TCP, 0, goKeepAlive).DialContext
	}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("clients: %s: %w", name, err)
	}
	db := sql.OpenDB(connector)
	// A connection given back to the pool is closed: the Locker's session
	// ends with its connection.
	db.SetMaxIdleConns(0)
	s := &mysqlSession{name: name, db: db, timeout: timeout}
	if err := s.connectWithin(ctx, max(timeout, MySQLSetupConnect)); err != nil {
		_ = db.Close()
		return nil, err
	}
	return s, nil
}

// mysqlQuiet drops the MySQL driver's log lines; every error reaches the
// caller.
type mysqlQuiet struct{}

func (mysqlQuiet) Print(...any) {}

// owner returns the lease owner of the current session.
func (s *mysqlSession) owner() string { return "conn-" + strconv.FormatUint(s.session, 10) }

// connectWithin opens the connection when there is none (the "connect"
// step) and reads its session's id, within bound.
func (s *mysqlSession) connectWithin(ctx context.Context, bound time.Duration) error {
	if s.conn != nil {
		return nil
	}
	s.step("connect")
	cctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	conn, err := s.db.Conn(cctx)
	if err != nil {
		return fmt.Errorf("clients: %s: connect: %w", s.name, err)
	}
	var id uint64
	if err := conn.QueryRowContext(cctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		_ = conn.Close()
		return fmt.Errorf("clients: %s: connect: %w", s.name, err)
	}
	s.conn, s.session = conn, id
	return nil
}

// dropConnection closes the connection, which ends its session (and with
// it every lock and transaction it held) once the server sees the close;
// the next acquire opens another.
func (s *mysqlSession) dropConnection() error {
	if s.conn == nil {
		return nil
	}
	err := s.conn.Close()
	s.conn, s.session = nil, 0
	return err
}

// kept reports whether err leaves the connection usable: no error, or a
// statement the server refused (a *mysql.MySQLError). A Locker closes the
// connection after any other failure.
func mysqlKept(err error) bool {
	var refused *mysql.MySQLError
	return err == nil || errors.As(err, &refused)
}

// mysqlCode returns the server's error number of err, 0 when err is not a
// statement the server refused.
func mysqlCode(err error) uint16 {
	var refused *mysql.MySQLError
	if errors.As(err, &refused) {
		return refused.Number
	}
	return 0
}

// mysqlUnsent reports whether the driver did not send the statement that
// failed with err: it reports driver.ErrBadConn only then.
func mysqlUnsent(err error) bool { return errors.Is(err, driver.ErrBadConn) }

// exec runs one statement on the session, bounded by wait plus the
// per-statement timeout, and returns the rows it affected and the insert
// id of its reply; a failure that leaves the connection unusable closes
// it.
func (s *mysqlSession) exec(ctx context.Context, wait time.Duration, query string, args ...any) (affected, insertID int64, err error) {
	if s.conn == nil {
		return 0, 0, fmt.Errorf("no connection: %w", driver.ErrBadConn)
	}
	cctx, cancel := context.WithTimeout(ctx, wait+s.timeout)
	defer cancel()
	res, err := s.conn.ExecContext(cctx, query, args...)
	if err != nil {
		if !mysqlKept(err) {
			_ = s.dropConnection()
		}
		return 0, 0, err
	}
	affected, _ = res.RowsAffected() // the driver's result never fails
	insertID, _ = res.LastInsertId()
	return affected, insertID, nil
}

// queryRow runs one statement that returns at most one row on the session,
// bounded by wait plus the per-statement timeout, and scans it; found is
// false when it returned none. A failure that leaves the connection
// unusable closes it.
func (s *mysqlSession) queryRow(ctx context.Context, wait time.Duration, query string, args []any, dest ...any) (found bool, err error) {
	if s.conn == nil {
		return false, fmt.Errorf("no connection: %w", driver.ErrBadConn)
	}
	cctx, cancel := context.WithTimeout(ctx, wait+s.timeout)
	defer cancel()
	err = s.conn.QueryRowContext(cctx, query, args...).Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if !mysqlKept(err) {
		_ = s.dropConnection()
	}
	return err == nil, err
}

// releaseRow runs query, a statement on the lease's key and owner (its two
// arguments, in that order) that gives the row back, on the session,
// connecting first when it has none: ErrNotHeld, saying notHeld, when it
// affected no row.
func (s *mysqlSession) releaseRow(ctx context.Context, l Lease, notHeld, query string) error {
	if err := s.connectWithin(ctx, s.timeout); err != nil {
		return fmt.Errorf("clients: %s: release %s: %w", s.name, l.Key, err)
	}
	n, _, err := s.exec(ctx, 0, query, l.Key, l.Owner)
	if err != nil {
		return fmt.Errorf("clients: %s: release %s: %w", s.name, l.Key, err)
	}
	if n == 0 {
		return fmt.Errorf("clients: %s: release %s: %s: %w", s.name, l.Key, notHeld, ErrNotHeld)
	}
	return nil
}

// close closes the connection, ending the session, and the driver's pool.
func (s *mysqlSession) close() error {
	if err := errors.Join(s.dropConnection(), s.db.Close()); err != nil {
		return fmt.Errorf("clients: %s: close: %w", s.name, err)
	}
	return nil
}
