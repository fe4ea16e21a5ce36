package lockapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"time"
)

// Serve is the client side of the lock-client protocol
// (docs/lock-protocol.md, version 1) for the Lockers that f builds: it reads
// the harness's init from in, builds a Target from it (endpoints, options,
// worker, process, system, a source seeded with init's seed, the worker's
// Clock), calls f once, answers init_ok (client names the client in the
// run's report), then answers each acquire, release and renew on out with
// the replies of the protocol until in ends; it then ends every hold's
// context, closes the Locker and returns nil.
//
// Its abilities follow from the Locker's type: renew for a Renewer, wait
// for a Waiter, lost for a LeaseWatcher (a lost notice is sent when the
// channel of a held lease closes). ErrNotAcquired is answered not-acquired,
// ErrNotHeld not-held, ErrReleaseNoOp no-op, any other error error. Serve
// gives the Locker's calls no deadline of their own: the harness ends a
// process whose reply is late. It returns an error when init is missing or
// wrong, when f fails, or when in or out fails.
func Serve(ctx context.Context, in io.Reader, out io.Writer, client string, f Factory) error {
	s := &server{in: bufio.NewScanner(in), out: out, holds: map[holdKey]*hold{}}
	s.in.Buffer(make([]byte, 0, 64<<10), maxLine)
	init, err := s.readInit()
	if err != nil {
		return err
	}
	clock, err := newWorkerClock(os.Getenv(ClockFileEnv))
	if err != nil {
		return err
	}
	defer clock.close()
	l, err := f(ctx, target(init, clock))
	if err != nil {
		return fmt.Errorf("lockapi: the factory: %w", err)
	}
	s.locker, s.ctx = l, ctx
	defer s.end()
	now := time.Now()
	ok := initOK{Type: "init_ok", NowMS: s.ms(now), WallMS: float64(clock.Now().UnixNano()) / 1e6, Client: client, Abilities: abilities(l)}
	if err := s.write(ok); err != nil {
		return err
	}
	return s.loop()
}

// ClockFileEnv names the environment variable that gives the worker's clock
// file: an int64 nanosecond offset, in the host's byte order, at its byte 0,
// which the harness rewrites to skew the worker's wall clock
// (docs/lock-protocol.md §5).
const ClockFileEnv = "JEPSEN_LITE_CLOCK_FILE"

// server is one process of Serve.
type server struct {
	in     *bufio.Scanner
	zero   time.Time // when init was read: the client's clock's zero
	ctx    context.Context
	locker Locker

	mu    sync.Mutex // guards out and holds: lost notices come from other goroutines
	out   io.Writer
	holds map[holdKey]*hold
}

// holdKey identifies a hold as the harness names it: key and owner.
type holdKey struct{ key, owner string }

// hold is a lease Serve granted and the context its Acquire was given.
type hold struct {
	lease Lease
	ctx   context.Context
	end   context.CancelCauseFunc
}

// readInit reads the first line, which must be the harness's init.
func (s *server) readInit() (initMsg, error) {
	var m initMsg
	if !s.in.Scan() {
		if err := s.in.Err(); err != nil {
			return m, fmt.Errorf("lockapi: reading init: %w", err)
		}
		return m, errors.New("lockapi: the input ended before init")
	}
	s.zero = time.Now()
	if err := json.Unmarshal(s.in.Bytes(), &m); err != nil {
		return m, fmt.Errorf("lockapi: the first line is no init: %w", err)
	}
	if m.Type != "init" || m.Protocol != ProtocolVersion {
		return m, fmt.Errorf("lockapi: the first line is no init of protocol %d: type %q, protocol %d", ProtocolVersion, m.Type, m.Protocol)
	}
	return m, nil
}

// target is the Target that init describes, with clock as its Clock.
func target(m initMsg, clock Clock) Target {
	t := Target{
		Worker:  m.Worker,
		Process: m.Process,
		System:  m.System,
		Clock:   clock,
		Rand:    rand.New(rand.NewPCG(m.Seed, m.Seed^0x6c6f636b617069)),
		Options: m.Options,
		Log:     os.Stderr,
	}
	if t.Options == nil {
		t.Options = map[string]string{}
	}
	for _, e := range m.Endpoints {
		t.Endpoints = append(t.Endpoints, Endpoint{Name: e.Name, Addr: e.Addr, Role: e.Role})
	}
	return t
}

// abilities lists the protocol's abilities that l's type has.
func abilities(l Locker) []string {
	out := []string{}
	if _, ok := l.(Renewer); ok {
		out = append(out, "renew")
	}
	if _, ok := l.(Waiter); ok {
		out = append(out, "wait")
	}
	if _, ok := l.(LeaseWatcher); ok {
		out = append(out, "lost")
	}
	return out
}

// ms is t on the client's clock: milliseconds since init was read.
func (s *server) ms(t time.Time) float64 { return float64(t.Sub(s.zero)) / float64(time.Millisecond) }

// msp is ms(t) as a field of a reply.
func (s *server) msp(t time.Time) *float64 { v := s.ms(t); return &v }

// write writes m as one line.
func (s *server) write(m any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writeLocked(m)
}

// writeLocked writes m as one line; s.mu is held.
func (s *server) writeLocked(m any) error {
	b, err := encode(m)
	if err != nil {
		return fmt.Errorf("lockapi: encoding a reply: %w", err)
	}
	if _, err := s.out.Write(b); err != nil {
		return fmt.Errorf("lockapi: writing a reply: %w", err)
	}
	return nil
}

// end ends every hold's context with ErrHoldEnded and closes the Locker.
func (s *server) end() {
	s.mu.Lock()
	for k, h := range s.holds {
		h.end(ErrHoldEnded)
		delete(s.holds, k)
	}
	s.mu.Unlock()
	if err := s.locker.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "lockapi: closing the locker: %v\n", err)
	}
}
