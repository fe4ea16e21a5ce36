package clients

import (
	"context"
	"net"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
)

// redsyncClusterSteps are redsync-cluster's: the ClusterClient sends the
// SET to the key's master, following MOVED and retrying as go-redis does.
var redsyncClusterSteps = []Step{{"lock", "redsync's SET NX PX through a go-redis ClusterClient, to the master of the key's slot", true}}

// NewRedsyncCluster is the redsync-cluster Factory: redsync over one pool,
// a go-redis ClusterClient of a Redis Cluster, as redsync's go-redis
// adapter takes any redis.UniversalClient. The ClusterClient finds the
// master of the key's slot itself (CLUSTER SLOTS, MOVED, ASK) and retries
// as the library does; redsync's quorum is the one pool. Its lease, errors
// and options are redsync's (Redsync).
func NewRedsyncCluster(ctx context.Context, t Target) (Locker, error) {
	const name = "redsync-cluster"
	opts, err := readOptions(name, t.Options, redsyncOptions, false)
	if err != nil {
		return nil, err
	}
	owners, err := newOwnerValues(name, t)
	if err != nil {
		return nil, err
	}
	r := &Redsync{nodes: 1, driftFactor: opts.fraction(optRedsyncDriftFactor), timeoutFactor: opts.fraction(optRedsyncTimeoutFactor),
		drift: t.Drift, owners: owners}
	// Redsync bounds each call with its own context; the client's socket
	// timeouts are only a backstop.
	r.cluster = newRedisClusterClient(t.Endpoints, time.Second, t.TCP)
	r.rs = redsync.New(goredis.NewPool(r.cluster))
	return r, nil
}

// newRedisClusterClient returns a go-redis ClusterClient that starts from
// every endpoint that is not a sentinel and reaches a node a reply names by
// its hostname (the harness's Redis Cluster announces node names) through
// the worker's endpoint of that name; other addresses are dialed as they
// are. Its nodes' own clients never retry; the ClusterClient's redirections
// and retries are the library's.
func newRedisClusterClient(eps []Endpoint, timeout time.Duration, tcp TCP) *redis.ClusterClient {
	byName := map[string]string{}
	var seeds []string
	for _, ep := range eps {
		byName[ep.Name] = ep.Addr
		if ep.Role != "sentinel" {
			seeds = append(seeds, ep.Addr)
		}
	}
	d := tcpDialer(tcp, timeout, goRedisKeepAlive)
	return redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: seeds,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if host, _, err := net.SplitHostPort(addr); err == nil && byName[host] != "" {
				addr = byName[host]
			}
			return d.DialContext(ctx, network, addr)
		},
		MaxRetries:            -1,
		DialTimeout:           timeout,
		ReadTimeout:           timeout,
		WriteTimeout:          timeout,
		ContextTimeoutEnabled: true,
		PoolSize:              2,
		DisableIdentity:       true,
	})
}
