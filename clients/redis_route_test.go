package clients

import (
	"errors"
	"fmt"
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
		[]Endpoint{{Name: "n1", Addr: "127.0.0.1:1"}, {Name: "n4", Addr: "127.0.0.1:4"}}, time.Second, TCP{})
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

// TestRoutesTurnAfterUnsentCommand checks that a key's commands go to the
// node its last MOVED named, and to the next endpoint in turn once a
// command could not be sent (a killed node), sentinels left out.
func TestRoutesTurnAfterUnsentCommand(t *testing.T) {
	eps := []Endpoint{{Name: "n1", Role: "primary"}, {Name: "s1", Role: "sentinel"}, {Name: "n2", Role: "primary"}, {Name: "n4", Role: "replica"}}
	rt := newRedisRoutes(eps[0], eps, time.Second, TCP{})
	t.Cleanup(func() { _ = rt.close() })
	unsent := &net.OpError{Op: "dial", Err: errors.New("connection refused")}
	// Each command's reply, in order, and the node each must go to: n1
	// first; unsent, so n2 next, which redirects to n4; n4 until a command
	// to it is unsent, then the next in turn (n4 again: n1, n2, n4), and
	// round to n1.
	replies := []error{unsent, redisErr("MOVED 1 n4:4"), nil, unsent, nil, unsent, nil}
	want := []string{"n1", "n2", "n4", "n4", "n4", "n4", "n1"}
	var got []string
	for len(got) < len(replies) {
		_ = rt.do("k", func(c *redis.Client) error {
			for name, known := range rt.clients {
				if known == c {
					got = append(got, name)
				}
			}
			return replies[len(got)-1]
		})
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the commands went to %v, want %v", got, want)
	}
}
