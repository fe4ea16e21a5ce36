package clients

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrStaleToken reports that a fenced resource rejected a write because its
// token is lower than the highest token it has accepted for that key.
var ErrStaleToken = errors.New("clients: stale fencing token")

// Resource is the register per key that the workload protects with the lock
// (docs/design.md §4). An unfenced Resource accepts every write; a fenced one rejects
// a write whose token is lower than the highest token it has accepted for the
// key (an equal token is accepted: one holder may write twice). It stamps each
// accepted or rejected write with the harness time given by its clock. It is
// safe for concurrent use.
type Resource struct {
	fenced bool
	now    func() time.Duration
	mu     sync.Mutex
	regs   map[string]*register
}

type register struct {
	value    int64
	maxToken uint64
}

// NewResource returns an empty Resource; now gives the harness time.
func NewResource(fenced bool, now func() time.Duration) *Resource {
	return &Resource{fenced: fenced, now: now, regs: map[string]*register{}}
}

// Fenced reports whether the resource checks tokens.
func (r *Resource) Fenced() bool { return r.fenced }

func (r *Resource) reg(key string) *register {
	g := r.regs[key]
	if g == nil {
		g = &register{}
		r.regs[key] = g
	}
	return g
}

// Read returns the register's value for key (0 when never written).
func (r *Resource) Read(key string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reg(key).value
}

// Write stores value for key with token and returns the harness time at which
// the write was accepted or rejected. A rejected write returns ErrStaleToken.
func (r *Resource) Write(key string, token uint64, value int64) (time.Duration, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	g := r.reg(key)
	at := r.now()
	if r.fenced && token < g.maxToken {
		return at, fmt.Errorf("%w: %d < %d", ErrStaleToken, token, g.maxToken)
	}
	if token > g.maxToken {
		g.maxToken = token
	}
	g.value = value
	return at, nil
}
