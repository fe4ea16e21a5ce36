package lockapi

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// memLock is a lock kept in the test's memory: one holder per key, leases
// of the ttl asked for. It is the Locker the protocol is tested with.
type memLock struct {
	mu      sync.Mutex
	held    map[string]string // key → owner
	n       int
	lost    chan struct{}
	closed  bool
	holdCtx context.Context
	fail    error // returned by the next Acquire
}

var (
	_ Locker  = (*memLock)(nil)
	_ Renewer = (*renewingLock)(nil)
	_ Waiter  = (*renewingLock)(nil)
)

func (m *memLock) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	start := time.Now()
	if m.fail != nil {
		err := m.fail
		m.fail = nil
		return Lease{}, err
	}
	if m.held[key] != "" {
		return Lease{}, ErrNotAcquired
	}
	m.n++
	owner := "o" + string(rune('0'+m.n))
	m.held[key], m.holdCtx = owner, ctx
	return Lease{Key: key, Owner: owner, Token: uint64(m.n), Until: start.Add(ttl), Expires: start.Add(ttl)}, nil
}

func (m *memLock) Release(ctx context.Context, l Lease) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.held[l.Key] != l.Owner || l.Owner == "" {
		return ErrNotHeld
	}
	delete(m.held, l.Key)
	return nil
}

func (m *memLock) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	return nil
}

// renewingLock is a memLock that renews, waits and watches its leases.
type renewingLock struct{ *memLock }

func (r renewingLock) Renew(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held[l.Key] != l.Owner {
		return Lease{}, ErrNotHeld
	}
	now := time.Now()
	l.Until, l.Expires = now.Add(ttl), now.Add(ttl)
	return l, nil
}

func (r renewingLock) AcquireWait(ctx context.Context, key string, ttl, wait time.Duration) (Lease, error) {
	return r.Acquire(ctx, key, ttl)
}

func (r renewingLock) Lost(Lease) <-chan struct{} { return r.lost }

// conn is the harness's end of a Serve.
type conn struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *bufio.Scanner
	done chan error
}

// serve starts Serve on l and returns the harness's end.
func serve(t *testing.T, l Locker) *conn {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &conn{t: t, in: inW, out: bufio.NewScanner(outR), done: make(chan error, 1)}
	go func() {
		err := Serve(context.Background(), inR, outW, "mem", func(context.Context, Target) (Locker, error) { return l, nil })
		outW.Close()
		c.done <- err
	}()
	t.Cleanup(func() { inW.Close() })
	return c
}

// send writes one request.
func (c *conn) send(m string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, m+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

// read reads one line of the client's into a map.
func (c *conn) read() map[string]any {
	c.t.Helper()
	if !c.out.Scan() {
		c.t.Fatalf("no line from the client: %v", c.out.Err())
	}
	var m map[string]any
	if err := json.Unmarshal(c.out.Bytes(), &m); err != nil {
		c.t.Fatalf("%q: %v", c.out.Text(), err)
	}
	return m
}

// call sends a request and reads its reply.
func (c *conn) call(m string) map[string]any {
	c.t.Helper()
	c.send(m)
	return c.read()
}

// end closes the input and waits for Serve to return.
func (c *conn) end() error {
	c.in.Close()
	select {
	case err := <-c.done:
		return err
	case <-time.After(5 * time.Second):
		c.t.Fatal("Serve did not return after the end of its input")
		return nil
	}
}

const initLine = `{"type":"init","protocol":1,"worker":3,"process":11,"system":"redis","endpoints":[{"name":"n1","role":"primary","addr":"127.0.0.1:1"}],"options":{"timeout":"1s"},"seed":"18446744073709551615"}`

// TestInitOK holds init_ok to the protocol: now_ms, wall_ms from the
// worker's clock (the clock file's offset added), the client's name and
// the abilities of the Locker's type.
func TestInitOK(t *testing.T) {
	tests := []struct {
		name      string
		locker    Locker
		offset    time.Duration
		abilities []string
	}{
		{"a plain Locker claims nothing", &memLock{held: map[string]string{}}, 0, []string{}},
		{"renew, wait and lost from the type", renewingLock{&memLock{held: map[string]string{}}}, 0, []string{"renew", "wait", "lost"}},
		{"the clock file's hour moves wall_ms", &memLock{held: map[string]string{}}, time.Hour, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(ClockFileEnv, clockFile(t, tt.offset))
			c := serve(t, tt.locker)
			ok := c.call(initLine)
			if ok["type"] != "init_ok" || ok["client"] != "mem" {
				t.Fatalf("init answered %v", ok)
			}
			if now, _ := ok["now_ms"].(float64); now < 0 || now > 1000 {
				t.Errorf("now_ms %v", ok["now_ms"])
			}
			want := float64(time.Now().Add(tt.offset).UnixMilli())
			if wall, _ := ok["wall_ms"].(float64); wall < want-5000 || wall > want+5000 {
				t.Errorf("wall_ms %v, want about %v", ok["wall_ms"], want)
			}
			got := []string{}
			for _, a := range ok["abilities"].([]any) {
				got = append(got, a.(string))
			}
			if !slices.Equal(got, tt.abilities) {
				t.Errorf("abilities %v, want %v", got, tt.abilities)
			}
			if err := c.end(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// clockFile writes a clock file holding offset and returns its path.
func clockFile(t *testing.T, offset time.Duration) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "clock")
	b := binary.NativeEndian.AppendUint64(nil, uint64(offset))
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
