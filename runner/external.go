package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/jepsen-lite/jepsen-lite/clients"
	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/history"
	"github.com/jepsen-lite/jepsen-lite/lockproto"
	"github.com/jepsen-lite/jepsen-lite/nemesis"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// logLines is an io.Writer that writes each line it is given to the run's
// log as a line of its own (an external client's standard error).
type logLines struct{ l *log.Logger }

func (w logLines) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		w.l.Print(line)
	}
	return len(p), nil
}

// skewsClients reports whether the scenario's schedule skews a worker's
// clock.
func skewsClients(s *scenarios.Scenario) bool { return nemesis.SkewsWorkerClocks(s.Nemesis.Steps) }

// pausesAt reports whether the scenario's schedule pauses a worker at point.
func pausesAt(s *scenarios.Scenario, point string) bool {
	for _, st := range s.Nemesis.Steps {
		if st.Fault == (nemesis.ClientPause{}).Name() && st.Point == point {
			return true
		}
	}
	return false
}

// externalClient is a Locker that runs as a program of its own and names
// itself (clients.Exec).
type externalClient interface {
	Client() string
	WallClock() time.Time
}

// lockName names the lock under test in setup errors: the scenario's
// algorithm, or an external client by the name it gives itself.
func lockName(s *scenarios.Scenario, l clients.Locker) string {
	if e, ok := l.(externalClient); ok {
		return fmt.Sprintf("the exec client %q", e.Client())
	}
	return s.Lock.Algorithm
}

// probeSkew is the clock offset of the probe that checks that client-clock
// reaches an external client.
const probeSkew = time.Hour

// probeClientClock checks, for a scenario that skews client clocks and
// runs an external client, that the client's wall clock follows its
// worker's: it starts the client once with a clock one hour ahead and
// compares the wall clock of its init_ok. A client whose runtime reads
// the clock without libc (a Go program) is a setup error, before any
// worker starts.
func probeClientClock(ctx context.Context, s *scenarios.Scenario, factory clients.Factory, t clients.Target, dir string) error {
	if !skewsClients(s) || s.Lock.Algorithm != clients.ExecAlgorithm {
		return nil
	}
	clock := &workerClock{dir: dir, needed: true}
	defer clock.close()
	if err := clock.set(probeSkew); err != nil {
		return fmt.Errorf("%w: %w", ErrSetup, err)
	}
	t.Clock, t.Log = clock, io.Discard
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	before := time.Now()
	l, err := factory(pctx, t)
	if err != nil {
		return fmt.Errorf("%w: client-clock probe: %w", ErrSetup, err)
	}
	after := time.Now()
	defer l.Close()
	e, ok := l.(externalClient)
	if !ok {
		return nil
	}
	wall := e.WallClock()
	if wall.Before(before.Add(probeSkew-time.Minute)) || wall.After(after.Add(probeSkew+time.Minute)) {
		return fmt.Errorf("%w: client-clock cannot skew %s: started with its clock %v ahead, it reported the wall clock %s, %v from the host's (a Go program reads the clock without libc, so the clock-skew library cannot reach it)",
			ErrSetup, lockName(s, l), probeSkew, wall.UTC().Format(time.RFC3339), wall.Sub(after).Round(time.Second))
	}
	return nil
}

// answerSink counts, per worker, the lock calls its client answered for
// certain (an ok or a fail) and those it did not (an info: no reply in
// time, an error reply), with the error of the last of those, as the ops
// are recorded. It is a history.Sink.
type answerSink struct {
	mu      sync.Mutex
	workers map[int]*answers
}

// answers is what answerSink counted for one worker: its calls, those
// answered for certain, those not, and the error of the last of those.
type answers struct {
	calls, answered, unanswered int
	lastError                   string
}

// lockCalls are the ops that are calls to the lock client (the workload's
// reads and writes of the harness's register are not).
var lockCalls = map[string]bool{
	history.FAcquire: true, history.FRelease: true, history.FRenew: true,
	history.FCapture: true, history.FSetStatus: true, history.FReap: true,
}

// Append counts op when it completes a call to the lock client.
func (s *answerSink) Append(op history.Op) error {
	if op.IsNemesis() || !lockCalls[op.F] {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.workers == nil {
		s.workers = map[int]*answers{}
	}
	a := s.workers[op.Client]
	if a == nil {
		a = &answers{}
		s.workers[op.Client] = a
	}
	switch op.Type {
	case history.Invoke:
		a.calls++
	case history.Info:
		a.unanswered++
		a.lastError = op.Error
	default:
		a.answered++
	}
	return nil
}

// silentWorkers returns, for a run of an external client (the exec
// algorithm), one line for each of its workers whose client answered no
// call for certain over the whole run: it was asked nothing, or every call
// ended without an answer (no reply within its timeout, or an error
// reply). Such a run tested nothing of that worker's lock, so its verdict
// is unknown (docs/lock-protocol.md §4). For the built-in algorithms it
// returns nothing.
func silentWorkers(s *scenarios.Scenario, sink *answerSink) []string {
	if s.Lock.Algorithm != clients.ExecAlgorithm {
		return nil
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	var silent []string
	for w := range s.Workers {
		a := sink.workers[w]
		switch {
		case a == nil:
			silent = append(silent, fmt.Sprintf("w%d: its lock client was asked nothing over the run", w))
		case a.answered == 0 && a.unanswered == 0:
			silent = append(silent, fmt.Sprintf("w%d: its lock client answered none of its %d calls over the run: the run ended while it waited", w, a.calls))
		case a.answered == 0:
			silent = append(silent, fmt.Sprintf("w%d: its lock client answered none of its %d calls over the run; the last unanswered: %s", w, a.calls, lockproto.Quote(a.lastError)))
		}
	}
	return silent
}

// silentNote is the verdict's note for a run with silent workers.
func silentNote(silent []string) string {
	return "the lock client never answered some workers, so the run tested nothing of them: " + strings.Join(silent, "; ")
}

// errNoHandshake says why a client pause armed at after-response failed:
// the client claimed the after-response handshake and granted a lock
// without it.
var errNoHandshake = errors.New("never fired: the client sent no after-response")

// pauseNeverFired records that the pause armed at point on the worker
// failed with err, and disarms it: the point it waits for never came (a
// client that claims the after-response handshake and granted a lock
// without it). Nothing is done when no pause is armed there.
func (w *worker) pauseNeverFired(point string, err error) {
	w.mu.Lock()
	p, ok := w.pauses[point]
	delete(w.pauses, point)
	w.mu.Unlock()
	if ok && w.pauseFailed != nil {
		w.pauseFailed(point, p.d, err)
	}
}

// probeAbilities makes, before any cluster starts, one client of the
// scenario's lock and reads the abilities a hunt draws for
// (clients.CapWait, clients.CapRenew): a Locker of the caller's own from
// its factory (its type's abilities), else the external client of the exec
// algorithm, started once (the abilities its init_ok claims). The Target
// lists the nodes of the scenario's topology (cluster.Layout), each at the
// address of a listener that accepts connections and answers nothing
// (silentListener): a client that only connects when it is made is made;
// one that asks its servers something then fails the probe, and the error
// says so. It returns the client's name and its abilities, and closes it.
func probeAbilities(ctx context.Context, s *scenarios.Scenario, factory clients.Factory) (string, map[clients.Capability]bool, error) {
	nodes, err := cluster.Layout(cluster.Spec{System: s.System.Name, Topology: s.System.Topology, Nodes: s.System.Nodes})
	if err != nil {
		return "", nil, err
	}
	silent, err := listenSilent()
	if err != nil {
		return "", nil, err
	}
	defer silent.close()
	t := clients.Target{System: s.System.Name, Options: s.Lock.Options, Log: io.Discard,
		Clock: &workerClock{}, Rand: rand.New(rand.NewPCG(s.Seed, 0))}
	for _, n := range nodes {
		t.Endpoints = append(t.Endpoints, clients.Endpoint{Name: n.Name, Role: n.Role, Addr: silent.addr()})
	}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	if factory == nil {
		factory = clients.NewExec
	}
	l, err := factory(pctx, t)
	if err != nil {
		return "", nil, fmt.Errorf("making its client with no server answering failed: %w", err)
	}
	defer l.Close()
	name := fmt.Sprintf("%T", l)
	if e, ok := l.(externalClient); ok {
		name = e.Client()
	}
	can := map[clients.Capability]bool{}
	for _, c := range []clients.Capability{clients.CapWait, clients.CapRenew} {
		can[c] = clients.Has(l, c)
	}
	return name, can, nil
}

// probeTimeout bounds the abilities probe: the protocol's 20 s for init
// and the time to end the client.
const probeTimeout = 30 * time.Second

// silentListener accepts every connection on 127.0.0.1 and answers
// nothing, until it is closed: the servers of the abilities probe.
type silentListener struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	done  chan struct{}
}

// listenSilent starts a silentListener on a free port.
func listenSilent() (*silentListener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	l := &silentListener{ln: ln, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.mu.Lock()
			l.conns = append(l.conns, c)
			l.mu.Unlock()
		}
	}()
	return l, nil
}

func (l *silentListener) addr() string { return l.ln.Addr().String() }

// close stops accepting and closes every connection accepted.
func (l *silentListener) close() {
	_ = l.ln.Close()
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		_ = c.Close()
	}
}
