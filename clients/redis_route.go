package clients

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// maxRedisRedirects bounds the MOVED replies one command follows.
const maxRedisRedirects = 5

// redisRoutes is where a single-node Redis lock sends each key's commands:
// to the first primary endpoint, until a node answers MOVED, as a Redis
// Cluster node does for a key whose slot another master serves; the key's
// commands then go to the node the reply names. A node of the harness's
// Redis Cluster names itself by its node name (cluster-announce-hostname),
// which is the name of the worker's endpoint to it, its own link. A MOVED
// reply means the node did not execute the command, so it is sent again to
// the node named; nothing else is sent again. Where the endpoints are a
// Redis Cluster's (several primaries, and replicas), a command that ends
// without a reply (a killed or unreachable node) forgets the key's route,
// and the key's next command goes to the next endpoint in turn, whose
// MOVED names the key's master now; and a new client starts at the
// endpoint its process's number picks, so that a worker whose client died
// with its node asks another. On the other topologies every command goes
// to the first primary: their endpoints are not one service (Redlock's
// masters are independent, a replica refuses writes).
type redisRoutes struct {
	eps     map[string]Endpoint
	order   []string // the endpoints a key without a route starts at, in turn: the first primary first
	turn    bool     // a Redis Cluster's endpoints: a command without a reply moves to the next
	timeout time.Duration
	tcp     TCP

	mu      sync.Mutex
	start   int                      // the index in order of the node a key without a route goes to
	clients map[string]*redis.Client // by node name, opened at the first command to it
	keys    map[string]string        // key -> the node the last MOVED for it named
}

// newRedisRoutes returns the routes of a lock whose first node is first,
// among the endpoints eps; on a Redis Cluster's endpoints it starts at the
// one process picks, in turn.
func newRedisRoutes(first Endpoint, eps []Endpoint, process int, timeout time.Duration, tcp TCP) *redisRoutes {
	rt := &redisRoutes{
		eps: map[string]Endpoint{first.Name: first}, order: []string{first.Name},
		timeout: timeout, tcp: tcp, clients: map[string]*redis.Client{}, keys: map[string]string{},
	}
	for _, ep := range eps {
		if ep.Name == first.Name || ep.Role == "sentinel" {
			continue
		}
		rt.eps[ep.Name] = ep
		rt.order = append(rt.order, ep.Name)
	}
	if rt.turn = clusterEndpoints(eps); rt.turn {
		rt.start = max(process, 0) % len(rt.order)
	}
	return rt
}

// clusterEndpoints reports whether eps are a Redis Cluster's: more than
// one primary, and replicas.
func clusterEndpoints(eps []Endpoint) bool {
	var primaries, replicas int
	for _, ep := range eps {
		switch ep.Role {
		case "primary":
			primaries++
		case "replica":
			replicas++
		}
	}
	return primaries > 1 && replicas > 0
}

// client returns the client of the node that serves key, as far as the
// routes know.
func (rt *redisRoutes) client(key string) *redis.Client {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	name, ok := rt.keys[key]
	if !ok {
		name = rt.order[rt.start]
	}
	c, ok := rt.clients[name]
	if !ok {
		c = newRedisClient(rt.eps[name].Addr, rt.timeout, rt.tcp)
		rt.clients[name] = c
	}
	return c
}

// do runs one command of key on the node that serves it, following MOVED
// replies to the node each names.
func (rt *redisRoutes) do(key string, cmd func(c *redis.Client) error) error {
	for redirects := 0; ; redirects++ {
		err := cmd(rt.client(key))
		var reply redis.Error
		if rt.turn && err != nil && !errors.As(err, &reply) {
			rt.forget(key)
		}
		name, moved := rt.movedTo(err)
		if !moved || redirects == maxRedisRedirects {
			return err
		}
		rt.mu.Lock()
		rt.keys[key] = name
		rt.mu.Unlock()
	}
}

// forget drops key's route and moves the start of the keys without one to
// the next endpoint.
func (rt *redisRoutes) forget(key string) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	delete(rt.keys, key)
	rt.start = (rt.start + 1) % len(rt.order)
}

// movedTo returns the endpoint a MOVED reply names ("MOVED 3999 n4:30004"
// names n4); moved is false for any other outcome, and for a node no
// endpoint is named after.
func (rt *redisRoutes) movedTo(err error) (name string, moved bool) {
	var rerr redis.Error
	if err == nil || !errors.As(err, &rerr) {
		return "", false
	}
	f := strings.Fields(rerr.Error())
	if len(f) != 3 || f[0] != "MOVED" {
		return "", false
	}
	host, _, splitErr := net.SplitHostPort(f[2])
	if _, known := rt.eps[host]; splitErr != nil || !known {
		return "", false
	}
	return host, true
}

// close closes every client.
func (rt *redisRoutes) close() error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	var errs []error
	for _, c := range rt.clients {
		errs = append(errs, c.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	return nil
}
