package conformance

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/jackc/pgx/v5"
	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/redis/go-redis/v9"
)

// probe is how the suite talks to one system's servers, over new direct
// connections to a node's Addr.
type probe struct {
	// answer returns nil when the node serves requests.
	answer func(ctx context.Context, addr string) error
	// write stores key=value through the node.
	write func(ctx context.Context, addr, key, value string) error
	// read returns the value of key as the node has it; found is false
	// when the node does not have the key.
	read func(ctx context.Context, addr, key string) (value string, found bool, err error)
	// clock returns the node's wall clock as its server reads it; nil for
	// systems whose servers cannot be skewed.
	clock func(ctx context.Context, addr string) (time.Time, error)
}

// Redis ---------------------------------------------------------------

// redisQuiet drops the Redis client's log lines (failed dials to killed
// and paused nodes are what the suite expects).
type redisQuiet struct{}

func (redisQuiet) Printf(context.Context, string, ...any) {}

var quietRedis sync.Once

// redisDo sends one command to addr on a new connection.
func redisDo(ctx context.Context, addr string, args ...any) (any, error) {
	quietRedis.Do(func() { redis.SetLogger(redisQuiet{}) })
	c := redis.NewClient(&redis.Options{
		Addr: addr, DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second,
		MaxRetries: -1, PoolSize: 1, DisableIdentity: true,
	})
	defer c.Close()
	return c.Do(ctx, args...).Result()
}

var redisProbe = probe{
	answer: func(ctx context.Context, addr string) error {
		r, err := redisDo(ctx, addr, "PING")
		if err == nil && r != "PONG" {
			err = fmt.Errorf("PING answered %v", r)
		}
		return err
	},
	write: func(ctx context.Context, addr, key, value string) error {
		_, err := redisDo(ctx, addr, "SET", key, value)
		return err
	},
	read: func(ctx context.Context, addr, key string) (string, bool, error) {
		r, err := redisDo(ctx, addr, "GET", key)
		if errors.Is(err, redis.Nil) {
			return "", false, nil
		}
		if err != nil {
			return "", false, err
		}
		return fmt.Sprint(r), true, nil
	},
	clock: func(ctx context.Context, addr string) (time.Time, error) {
		r, err := redisDo(ctx, addr, "TIME")
		parts, ok := r.([]any)
		if err != nil || !ok || len(parts) != 2 {
			return time.Time{}, fmt.Errorf("TIME: %v, %v", r, err)
		}
		sec, err1 := strconv.ParseInt(fmt.Sprint(parts[0]), 10, 64)
		usec, err2 := strconv.ParseInt(fmt.Sprint(parts[1]), 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			return time.Time{}, fmt.Errorf("TIME %v: %w", parts, err)
		}
		return time.Unix(sec, usec*1000), nil
	},
}

// PostgreSQL ----------------------------------------------------------

// postgresDo runs fn on a new connection to addr.
func postgresDo(ctx context.Context, addr string, fn func(*pgx.Conn) error) error {
	conn, err := pgx.Connect(ctx, cluster.PostgresDSN(addr))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return fn(conn)
}

var postgresProbe = probe{
	answer: func(ctx context.Context, addr string) error {
		return postgresDo(ctx, addr, func(c *pgx.Conn) error { _, err := c.Exec(ctx, "select 1"); return err })
	},
	write: func(ctx context.Context, addr, key, value string) error {
		return postgresDo(ctx, addr, func(c *pgx.Conn) error {
			if _, err := c.Exec(ctx, "create table if not exists conformance (k text primary key, v text)"); err != nil {
				return err
			}
			_, err := c.Exec(ctx, "insert into conformance values ($1, $2) on conflict (k) do update set v = excluded.v", key, value)
			return err
		})
	},
	read: func(ctx context.Context, addr, key string) (string, bool, error) {
		var v string
		found := false
		err := postgresDo(ctx, addr, func(c *pgx.Conn) error {
			err := c.QueryRow(ctx, "select v from conformance where k = $1", key).Scan(&v)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			found = err == nil
			return err
		})
		return v, found, err
	},
	clock: func(ctx context.Context, addr string) (time.Time, error) {
		var ts time.Time
		err := postgresDo(ctx, addr, func(c *pgx.Conn) error {
			return c.QueryRow(ctx, "select clock_timestamp()").Scan(&ts)
		})
		return ts, err
	},
}

// MariaDB -------------------------------------------------------------

// mariadbDo runs fn on a new connection to addr.
func mariadbDo(ctx context.Context, addr string, fn func(*sql.Conn) error) error {
	db, err := cluster.MariaDBOpen(addr)
	if err != nil {
		return err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return fn(conn)
}

var mariadbProbe = probe{
	answer: func(ctx context.Context, addr string) error {
		return mariadbDo(ctx, addr, func(c *sql.Conn) error { _, err := c.ExecContext(ctx, "SELECT 1"); return err })
	},
	write: func(ctx context.Context, addr, key, value string) error {
		return mariadbDo(ctx, addr, func(c *sql.Conn) error {
			if _, err := c.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS conformance"); err != nil {
				return err
			}
			if _, err := c.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS conformance.kv (k VARCHAR(255) PRIMARY KEY, v TEXT) ENGINE=InnoDB"); err != nil {
				return err
			}
			_, err := c.ExecContext(ctx, "INSERT INTO conformance.kv VALUES (?, ?) ON DUPLICATE KEY UPDATE v = VALUES(v)", key, value)
			return err
		})
	},
	read: func(ctx context.Context, addr, key string) (string, bool, error) {
		var v string
		found := false
		err := mariadbDo(ctx, addr, func(c *sql.Conn) error {
			var exists int
			if err := c.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'conformance' AND table_name = 'kv'").Scan(&exists); err != nil || exists == 0 {
				return err
			}
			err := c.QueryRowContext(ctx, "SELECT v FROM conformance.kv WHERE k = ?", key).Scan(&v)
			if errors.Is(err, sql.ErrNoRows) {
				return nil
			}
			found = err == nil
			return err
		})
		return v, found, err
	},
	// clock is SYSDATE(6), the time at which the server evaluates it (NOW()
	// is the statement's start), read as microseconds since the epoch.
	clock: func(ctx context.Context, addr string) (time.Time, error) {
		var us int64
		err := mariadbDo(ctx, addr, func(c *sql.Conn) error {
			return c.QueryRowContext(ctx, "SELECT CAST(UNIX_TIMESTAMP(SYSDATE(6)) * 1000000 AS SIGNED)").Scan(&us)
		})
		return time.UnixMicro(us), err
	},
}

// ZooKeeper -----------------------------------------------------------

// zkQuiet drops the ZooKeeper client's log lines.
type zkQuiet struct{}

func (zkQuiet) Printf(string, ...any) {}

// zkDo runs fn on a new session with the server at addr; ctx bounds the
// connection and fn.
func zkDo(ctx context.Context, addr string, fn func(*zk.Conn) error) error {
	conn, events, err := zk.Connect([]string{addr}, 4*time.Second, zk.WithLogger(zkQuiet{}))
	if err != nil {
		return err
	}
	defer conn.Close()
	for connected := false; !connected; {
		select {
		case ev := <-events:
			connected = ev.State == zk.StateHasSession
		case <-ctx.Done():
			return fmt.Errorf("zookeeper %s: no session: %w", addr, ctx.Err())
		}
	}
	done := make(chan error, 1)
	go func() { done <- fn(conn) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		conn.Close()
		return fmt.Errorf("zookeeper %s: %w", addr, ctx.Err())
	}
}

var zookeeperProbe = probe{
	answer: func(ctx context.Context, addr string) error {
		_, err := cluster.ZooKeeperMode(ctx, addr)
		return err
	},
	write: func(ctx context.Context, addr, key, value string) error {
		return zkDo(ctx, addr, func(c *zk.Conn) error {
			_, err := c.Create("/"+key, []byte(value), 0, zk.WorldACL(zk.PermAll))
			if errors.Is(err, zk.ErrNodeExists) {
				_, err = c.Set("/"+key, []byte(value), -1)
			}
			return err
		})
	},
	read: func(ctx context.Context, addr, key string) (string, bool, error) {
		var v []byte
		found := false
		err := zkDo(ctx, addr, func(c *zk.Conn) error {
			if _, err := c.Sync("/"); err != nil {
				return err
			}
			data, _, err := c.Get("/" + key)
			if errors.Is(err, zk.ErrNoNode) {
				return nil
			}
			v, found = data, err == nil
			return err
		})
		return string(v), found, err
	},
	// clock is the creation time of a new znode, which the ensemble's
	// leader stamps from its wall clock: skew the leader to move it.
	clock: func(ctx context.Context, addr string) (time.Time, error) {
		var ts time.Time
		err := zkDo(ctx, addr, func(c *zk.Conn) error {
			path, err := c.Create("/clock-", nil, zk.FlagSequence|zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
			if err != nil {
				return err
			}
			_, stat, err := c.Get(path)
			if err != nil {
				return err
			}
			ts = time.UnixMilli(stat.Ctime)
			return nil
		})
		return ts, err
	},
}

// etcd ----------------------------------------------------------------

// etcdPost posts a request to the member's JSON gateway and decodes the
// answer into out.
func etcdPost(ctx context.Context, addr, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd %s%s: %s: %s", addr, path, resp.Status, bytes.TrimSpace(b))
	}
	return json.Unmarshal(b, out)
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

var etcdProbe = probe{
	answer: func(ctx context.Context, addr string) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/health", nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var h struct {
			Health string `json:"health"`
		}
		if err := json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&h); err != nil {
			return err
		}
		if h.Health != "true" {
			return fmt.Errorf("etcd %s is not healthy", addr)
		}
		return nil
	},
	write: func(ctx context.Context, addr, key, value string) error {
		var out struct{}
		return etcdPost(ctx, addr, "/v3/kv/put", map[string]string{"key": b64(key), "value": b64(value)}, &out)
	},
	read: func(ctx context.Context, addr, key string) (string, bool, error) {
		var out struct {
			Kvs []struct {
				Value string `json:"value"`
			} `json:"kvs"`
		}
		if err := etcdPost(ctx, addr, "/v3/kv/range", map[string]string{"key": b64(key)}, &out); err != nil {
			return "", false, err
		}
		if len(out.Kvs) == 0 {
			return "", false, nil
		}
		v, err := base64.StdEncoding.DecodeString(out.Kvs[0].Value)
		return string(v), err == nil, err
	},
}
