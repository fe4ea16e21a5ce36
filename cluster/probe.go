package cluster

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
)

// The readiness probes of the systems (each system's SystemInfo.Ready):
// each reports nil once a node at addr serves clients, whatever backend
// runs it. A published container port
// accepts connections before its server listens, so every probe waits for
// an answer of the server itself, not for a successful dial.

// PostgreSQL connection facts: clients connect over TCP to the node's Addr
// as this superuser, to this database, without a password (trust auth).
const (
	PostgresUser     = "postgres"
	PostgresDatabase = "postgres"
)

// PostgresDSN returns the connection string of a PostgreSQL node at addr
// ("127.0.0.1:port").
func PostgresDSN(addr string) string {
	return fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", PostgresUser, addr, PostgresDatabase)
}

// PostgresReady reports whether the PostgreSQL server at addr accepts a
// connection and answers a ping.
func PostgresReady(ctx context.Context, addr string) error {
	conn, err := pgx.Connect(ctx, PostgresDSN(addr))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return conn.Ping(ctx)
}

// MariaDB connection facts: clients connect over TCP to the node's Addr as
// this user, without a password (the server skips its grant tables,
// MariaDBSettings).
const MariaDBUser = "root"

// MariaDBConfig returns the driver's configuration of a connection to the
// MariaDB node at addr ("127.0.0.1:port"), with its log lines dropped.
func MariaDBConfig(addr string) *mysql.Config {
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.User = "tcp", addr, MariaDBUser
	cfg.Logger = quietMySQL{}
	return cfg
}

// quietMySQL drops the MySQL driver's log lines (failed reads of killed
// and paused servers are what a run expects; the caller gets the error).
type quietMySQL struct{}

func (quietMySQL) Print(...any) {}

// MariaDBOpen returns a database handle on the MariaDB node at addr
// (MariaDBConfig); it connects on first use, and the caller closes it.
func MariaDBOpen(addr string) (*sql.DB, error) {
	conn, err := mysql.NewConnector(MariaDBConfig(addr))
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(conn), nil
}

// MariaDBReady reports whether the MariaDB server at addr accepts a
// connection and answers a query.
func MariaDBReady(ctx context.Context, addr string) error {
	db, err := MariaDBOpen(addr)
	if err != nil {
		return err
	}
	defer db.Close()
	var one int
	if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return err
	}
	if one != 1 {
		return fmt.Errorf("cluster: mariadb answered SELECT 1 with %d", one)
	}
	return nil
}

// zkFourLetter sends a ZooKeeper four-letter command and returns the whole
// answer.
func zkFourLetter(ctx context.Context, addr, cmd string) (string, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if _, err := io.WriteString(conn, cmd); err != nil {
		return "", err
	}
	b, err := io.ReadAll(conn)
	return string(b), err
}

// ZooKeeperMode returns the server's mode as `srvr` reports it
// ("standalone", "leader", "follower"), or an error when it is not serving.
func ZooKeeperMode(ctx context.Context, addr string) (string, error) {
	out, err := zkFourLetter(ctx, addr, "srvr")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(out, "\n") {
		if m, ok := strings.CutPrefix(line, "Mode: "); ok {
			return strings.TrimSpace(m), nil
		}
	}
	return "", fmt.Errorf("cluster: zookeeper not serving: %q", strings.TrimSpace(out))
}

// ZooKeeperReady reports whether the ZooKeeper server at addr serves
// clients: `srvr` names its mode only then.
func ZooKeeperReady(ctx context.Context, addr string) error {
	_, err := ZooKeeperMode(ctx, addr)
	return err
}

// EtcdReady reports whether the etcd member whose client address is addr
// says it is healthy (it has a leader and answers).
func EtcdReady(ctx context.Context, addr string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return err
	}
	var h struct {
		Health string `json:"health"`
	}
	if err := json.Unmarshal(body, &h); err != nil {
		return fmt.Errorf("cluster: etcd health %q: %w", body, err)
	}
	if h.Health != "true" {
		return fmt.Errorf("cluster: etcd not healthy: %s", strings.TrimSpace(string(body)))
	}
	return nil
}

// ClockFileEnv is the environment variable the clock-skew library reads in
// a node: the path of the file whose first 8 bytes hold the clock offset.
const ClockFileEnv = "JEPSEN_LITE_CLOCK_FILE"
