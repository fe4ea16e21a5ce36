package lockapi

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestCalls plays a process's requests and holds each reply to the
// protocol's type and fields.
func TestCalls(t *testing.T) {
	m := &memLock{held: map[string]string{}, lost: make(chan struct{})}
	c := serve(t, renewingLock{m})
	c.call(initLine)
	steps := []struct {
		name    string
		request string
		typ     string
		fields  []string // fields the reply must have
	}{
		{"an acquire is granted", `{"type":"acquire","id":1,"key":"k1","ttl_ms":1000}`, "ok", []string{"owner", "token", "until_ms", "lease_ms", "received_ms", "now_ms"}},
		{"a held lock is not acquired", `{"type":"acquire","id":2,"key":"k1","ttl_ms":1000}`, "not-acquired", []string{"message", "received_ms", "now_ms"}},
		{"a renewal of the holder", `{"type":"renew","id":3,"key":"k1","owner":"o1","token":1,"ttl_ms":2000}`, "ok", []string{"owner", "until_ms", "lease_ms"}},
		{"a release of the holder", `{"type":"release","id":4,"key":"k1","owner":"o1","token":1}`, "ok", []string{"received_ms", "now_ms"}},
		{"a second release did nothing", `{"type":"release","id":5,"key":"k1","owner":"o1","token":1}`, "not-held", []string{"message"}},
		{"a renewal of a lease that is gone", `{"type":"renew","id":6,"key":"k1","owner":"o1","token":1,"ttl_ms":1000}`, "not-held", []string{"message"}},
		{"a waiting acquire", `{"type":"acquire","id":7,"key":"k2","ttl_ms":1000,"wait_ms":500}`, "ok", []string{"owner"}},
		{"a request it does not serve", `{"type":"capture","id":8,"queue":"q0","limit":1}`, "error", []string{"message"}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			rep := c.call(s.request)
			if rep["type"] != s.typ {
				t.Fatalf("reply %v, want type %s", rep, s.typ)
			}
			for _, f := range s.fields {
				if _, ok := rep[f]; !ok {
					t.Errorf("reply %v has no %q", rep, f)
				}
			}
		})
	}
	t.Run("lease_ms is the service's lease in ms", func(t *testing.T) {
		rep := c.call(`{"type":"acquire","id":9,"key":"k3","ttl_ms":1500}`)
		if l, _ := rep["lease_ms"].(float64); l < 1500 || l > 1600 {
			t.Errorf("lease_ms %v, want 1500 or a little more: the service counts from later", rep["lease_ms"])
		}
		if u, _ := rep["until_ms"].(float64); u < 1500 || u > 60_000 {
			t.Errorf("until_ms %v: not on the clock since init", rep["until_ms"])
		}
	})
	t.Run("a lost lease is told", func(t *testing.T) {
		close(m.lost)
		if rep := c.read(); rep["type"] != "lost" || rep["owner"] == nil {
			t.Errorf("notice %v, want lost", rep)
		}
	})
}

// TestEndOfInput requires Serve, once its input ends, to end the hold's
// context with ErrHoldEnded, close the Locker and return nil.
func TestEndOfInput(t *testing.T) {
	m := &memLock{held: map[string]string{}}
	c := serve(t, m)
	c.call(initLine)
	if rep := c.call(`{"type":"acquire","id":1,"key":"k1","ttl_ms":1000}`); rep["type"] != "ok" {
		t.Fatalf("acquire: %v", rep)
	}
	if err := c.end(); err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.closed {
		t.Error("the Locker was not closed")
	}
	if cause := context.Cause(m.holdCtx); !errors.Is(cause, ErrHoldEnded) {
		t.Errorf("the hold's context ended with %v, want ErrHoldEnded", cause)
	}
}

// TestErrorReplies maps an acquire's error onto its reply.
func TestErrorReplies(t *testing.T) {
	tests := []struct {
		name string
		err  error
		typ  string
	}{
		{"ErrNotAcquired wrapped", errors.Join(errors.New("quorum"), ErrNotAcquired), "not-acquired"},
		{"an unknown outcome", ErrOutcomeUnknown, "error"},
		{"a deadline", context.DeadlineExceeded, "error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := serve(t, &memLock{held: map[string]string{}, fail: tt.err})
			c.call(initLine)
			rep := c.call(`{"type":"acquire","id":1,"key":"k1","ttl_ms":1000}`)
			if rep["type"] != tt.typ || rep["message"] != tt.err.Error() {
				t.Errorf("reply %v, want %s with %q", rep, tt.typ, tt.err)
			}
		})
	}
}

// TestInitRefused requires an error, not a reply, for a first line that is
// no init.
func TestInitRefused(t *testing.T) {
	c := serve(t, &memLock{held: map[string]string{}})
	c.send(`{"type":"acquire","id":1}`)
	select {
	case err := <-c.done:
		if err == nil {
			t.Fatal("Serve accepted an acquire as its first line")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return")
	}
}
