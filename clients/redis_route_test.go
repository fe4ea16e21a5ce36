package clients

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisErr is a reply error as go-redis returns one.
type redisErr string

func (e redisErr) Error() string { return string(e) }
func (redisErr) RedisError()     {}

var _ redis.Error = redisErr("")

// TestMovedTo checks which replies redisRoutes follows: a MOVED naming
// an endpoint, also wrapped, and nothing else.
func TestMovedTo(t *testing.T) {
	rt := newRedisRoutes(Endpoint{Name: "n1", Addr: "127.0.0.1:1"},
		[]Endpoint{{Name: "n1", Addr: "127.0.0.1:1"}, {Name: "n4", Addr: "127.0.0.1:4"}}, 0, time.Second, TCP{})
	t.Cleanup(func() { _ = rt.close() })
	tests := []struct {
		name  string
		err   error
		to    string
		moved bool
	}{
		{"moved to an endpoint", redisErr("MOVED 3999 n4:30004"), "n4", true},
		{"wrapped", fmt.Errorf("clients: %w", redisErr("MOVED 3999 n4:30004")), "n4", true},
		{"moved to an unknown node", redisErr("MOVED 3999 n9:30009"), "", false},
		{"moved to an address", redisErr("MOVED 3999 127.0.0.1:30004"), "", false},
		{"ask", redisErr("ASK 3999 n4:30004"), "", false},
		{"cluster down", redisErr("CLUSTERDOWN The cluster is down"), "", false},
		{"not a reply", errors.New("MOVED 3999 n4:30004"), "", false},
		{"no error", nil, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			to, moved := rt.movedTo(tt.err)
			if to != tt.to || moved != tt.moved {
				t.Errorf("movedTo(%v) = %q, %v; want %q, %v", tt.err, to, moved, tt.to, tt.moved)
			}
		})
	}
}

// TestRoutesTurn checks where a key's commands go: on a Redis Cluster's
// endpoints to the node its last MOVED named, to the next endpoint in turn
// (sentinels left out) once a command ended without a reply, and first to
// the endpoint the process picks; on other endpoints always to the first
// primary.
func TestRoutesTurn(t *testing.T) {
	unsent := &net.OpError{Op: "dial", Err: errors.New("connection refused")}
	cluster := []Endpoint{{Name: "n1", Role: "primary"}, {Name: "s1", Role: "sentinel"}, {Name: "n2", Role: "primary"}, {Name: "n4", Role: "replica"}}
	masters := []Endpoint{{Name: "n1", Role: "primary"}, {Name: "n2", Role: "primary"}}
	replicated := []Endpoint{{Name: "n1", Role: "primary"}, {Name: "n2", Role: "replica"}}
	tests := []struct {
		name    string
		eps     []Endpoint
		process int
		replies []error
		want    []string // the node each command goes to
	}{
		// n1 first; no reply, so n2 next, which redirects to n4; n4 until
		// a command to it gets no reply, then the next in turn (n4 again:
		// n1, n2, n4), and round to n1.
		{"cluster", cluster, 0, []error{unsent, redisErr("MOVED 1 n4:4"), nil, io.EOF, nil, unsent, nil},
			[]string{"n1", "n2", "n4", "n4", "n4", "n4", "n1"}},
		{"cluster, a later process", cluster, 4, []error{nil, context.DeadlineExceeded, nil},
			[]string{"n2", "n2", "n4"}},
		{"cluster, an error reply stays", cluster, 0, []error{redisErr("CLUSTERDOWN The cluster is down"), nil},
			[]string{"n1", "n1"}},
		{"independent masters", masters, 3, []error{unsent, io.EOF, nil}, []string{"n1", "n1", "n1"}},
		{"primary and replica", replicated, 1, []error{unsent, nil}, []string{"n1", "n1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := newRedisRoutes(tt.eps[0], tt.eps, tt.process, time.Second, TCP{})
			t.Cleanup(func() { _ = rt.close() })
			var got []string
			for len(got) < len(tt.replies) {
				_ = rt.do("k", func(c *redis.Client) error {
					for name, known := range rt.clients {
						if known == c {
							got = append(got, name)
						}
					}
					return tt.replies[len(got)-1]
				})
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("the commands went to %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFenceKey(t *testing.T) {
	tests := []struct {
		name, key, want string
	}{
		{name: "a plain key gets its own hash tag", key: "orders", want: "{orders}:fence"},
		{name: "a key with a hash tag keeps it", key: "{user1}:lock", want: "{user1}:lock:fence"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fenceKey(tt.key); got != tt.want {
				t.Errorf("fenceKey(%q) = %q, want %q", tt.key, got, tt.want)
			}
		})
	}
}
