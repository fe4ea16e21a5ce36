package runner

import (
	"context"
	"fmt"
	"io"
	"log"
	"strings"
	"time"

	"github.com/jepsen-lite/jepsen-lite/clients"
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
