package clients

import (
	"errors"
	"fmt"
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
