// Package lockclient is the client side of jepsen-lite's lock-client
// protocol (docs/lock-protocol.md, version 1), for the programs of the
// known-bug corpus: it reads the harness's requests from standard input,
// calls a Client, and writes the replies to standard output. It is a module
// of its own without dependencies (the harness's side of the protocol is
// its package lockproto), so that each program can pin the library version
// it tests without the harness's module graph.
package lockclient

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"time"
)

// Version is the protocol version this package speaks.
const Version = 1

// ErrNotAcquired is returned by Client.Acquire when the lock was certainly
// not taken and nothing is left to undo; the reply is not-acquired.
var ErrNotAcquired = errors.New("lockclient: not acquired")

// ErrNotHeld is returned by Client.Release and Client.Renew when the call
// certainly did nothing because the lock was not ours any more; the reply is
// not-held.
var ErrNotHeld = errors.New("lockclient: not held")

// Endpoint is one of the worker's own links to a node.
type Endpoint struct {
	Name string `json:"name"`
	Role string `json:"role"`
	Addr string `json:"addr"`
}

// Init is the harness's first message to a process.
type Init struct {
	Protocol  int               `json:"protocol"`
	Worker    int               `json:"worker"`
	Process   int               `json:"process"`
	System    string            `json:"system"`
	Endpoints []Endpoint        `json:"endpoints"`
	Options   map[string]string `json:"options"`
	Seed      uint64            `json:"seed,string"`
}

// Addrs returns the addresses of the endpoints that are not replicas or
// sentinels: the nodes a lock client talks to.
func (in Init) Addrs() []string {
	var out []string
	for _, e := range in.Endpoints {
		if e.Role == "replica" || e.Role == "sentinel" {
			continue
		}
		out = append(out, e.Addr)
	}
	return out
}

// Grant is a held lock as a Client reports it.
type Grant struct {
	// Owner identifies the holder to the service; the harness sends it back
	// with release and renew.
	Owner string
	// Token is the fencing token, 0 for none.
	Token uint64
	// Until is the moment until which the client itself considers the lease
	// valid; the zero time for none.
	Until time.Time
	// Lease is the lease the service granted, counted from when the request
	// was read; 0 when the client does not know it.
	Lease time.Duration
	// Session is true when closing the client frees the lock.
	Session bool
}

// Client is a lock library behind the protocol. The loop never calls it
// concurrently.
type Client interface {
	// Acquire takes the lock on key for ttl, trying once when wait is 0 and
	// waiting up to wait otherwise. It returns ErrNotAcquired (wrapped or
	// not) when the lock was certainly not taken.
	Acquire(ctx context.Context, key string, ttl, wait time.Duration) (Grant, error)
	// Release gives the lock back; ErrNotHeld when it certainly did nothing.
	Release(ctx context.Context, key, owner string) error
	// Renew extends the lease by ttl; ErrNotHeld when it certainly did
	// nothing.
	Renew(ctx context.Context, key, owner string, ttl time.Duration) (Grant, error)
	// Close ends the client's connections and sessions.
	Close() error
}

// Program describes the program that serves the protocol.
type Program struct {
	// Name is what the report and run.log name the client by: library,
	// version, lock, language.
	Name string
	// Abilities are the optional parts of the protocol the client has
	// ("renew", "wait").
	Abilities []string
	// Open makes the Client from the init message, once per process.
	Open func(Init) (Client, error)
}

// request is any request of the harness.
type request struct {
	Type   string  `json:"type"`
	ID     int64   `json:"id"`
	Key    string  `json:"key"`
	TTLms  float64 `json:"ttl_ms"`
	WaitMs float64 `json:"wait_ms"`
	Owner  string  `json:"owner"`
}

// Main serves the protocol on standard input and output and exits: with
// status 0 at the end of input, with status 1 after a protocol error or a
// client that could not be opened (written to standard error).
func Main(p Program) {
	if err := Serve(p, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", p.Name, err)
		os.Exit(1)
	}
}

// Serve reads requests from in and writes replies to out until in ends.
// Every reply carries received_ms and now_ms, when the request was read and
// the reply written, in ms from the moment init was read, with which the
// harness maps the replies' until_ms onto its own clock.
func Serve(p Program, in io.Reader, out io.Writer) error {
	r := bufio.NewReader(in)
	w := bufio.NewWriter(out)
	send := func(m map[string]any) error {
		b, err := json.Marshal(m)
		if err != nil {
			return err
		}
		if _, err := w.Write(append(b, '\n')); err != nil {
			return err
		}
		return w.Flush()
	}
	line, err := r.ReadBytes('\n')
	zero := time.Now()
	if err != nil {
		return fmt.Errorf("read init: %w", err)
	}
	var init Init
	if err := json.Unmarshal(line, &init); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	if init.Protocol != Version {
		return fmt.Errorf("init: protocol %d, want %d", init.Protocol, Version)
	}
	c, err := p.Open(init)
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer c.Close()
	ms := func(t time.Time) float64 { return float64(t.Sub(zero).Microseconds()) / 1000 }
	abilities := p.Abilities
	if abilities == nil {
		abilities = []string{}
	}
	if err := send(map[string]any{"type": "init_ok", "now_ms": ms(time.Now()), "wall_ms": time.Now().UnixMilli(), "client": p.Name, "abilities": abilities}); err != nil {
		return err
	}
	for {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) && len(line) == 0 {
			return nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		received := ms(time.Now())
		var req request
		if err := json.Unmarshal(line, &req); err != nil {
			return fmt.Errorf("request %q: %w", line, err)
		}
		reply := handle(c, req, ms)
		reply["id"] = req.ID
		reply["received_ms"] = received
		reply["now_ms"] = ms(time.Now())
		if err := send(reply); err != nil {
			return err
		}
	}
}

// handle runs one request and returns its reply without the id. Each call
// is bounded by nine tenths of the op's timeout as the harness counts it
// (the ttl, at least 1 s, plus the wait), so that a call that hangs ends,
// and is answered, before the harness gives up on it.
func handle(c Client, req request, ms func(time.Time) float64) map[string]any {
	ttl := time.Duration(req.TTLms * float64(time.Millisecond))
	wait := time.Duration(req.WaitMs * float64(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), (max(ttl, time.Second)+wait)*9/10)
	defer cancel()
	grant := func(g Grant) map[string]any {
		m := map[string]any{"type": "ok", "owner": g.Owner}
		if g.Token != 0 {
			m["token"] = g.Token
		}
		if !g.Until.IsZero() {
			m["until_ms"] = ms(g.Until)
		}
		if g.Lease > 0 {
			m["lease_ms"] = float64(g.Lease.Microseconds()) / 1000
		}
		if g.Session {
			m["session"] = true
		}
		return m
	}
	failure := func(err error, definite error, kind string) map[string]any {
		if errors.Is(err, definite) {
			return map[string]any{"type": kind, "message": err.Error()}
		}
		return map[string]any{"type": "error", "message": err.Error()}
	}
	switch req.Type {
	case "acquire":
		g, err := c.Acquire(ctx, req.Key, ttl, wait)
		if err != nil {
			return failure(err, ErrNotAcquired, "not-acquired")
		}
		return grant(g)
	case "release":
		if err := c.Release(ctx, req.Key, req.Owner); err != nil {
			return failure(err, ErrNotHeld, "not-held")
		}
		return map[string]any{"type": "ok"}
	case "renew":
		g, err := c.Renew(ctx, req.Key, req.Owner, ttl)
		if err != nil {
			return failure(err, ErrNotHeld, "not-held")
		}
		return grant(g)
	default:
		return map[string]any{"type": "error", "message": fmt.Sprintf("unknown request type %q", req.Type)}
	}
}

// ModuleVersion returns the version of module path that the running
// program was built with, from its build information; "(unknown)" when it
// has none.
func ModuleVersion(path string) string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	for _, d := range info.Deps {
		if d.Path == path {
			if d.Replace != nil {
				return d.Replace.Version
			}
			return d.Version
		}
	}
	return "(unknown)"
}
