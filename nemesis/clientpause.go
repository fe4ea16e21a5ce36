package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/history"
	"github.com/jepsen-lite/jepsen-lite/nemesis/faultkind"
)

// ClientPause stops workers at a pause point of the workload loop for the
// step's Duration, our stand-in for a stop-the-world GC pause (docs/design.md §4).
// Targets name workers ("w0", "w3"); Point is after-response or
// before-write (the default). The pause ends on its own, so it has no heal;
// the worker records the pause in the history when it actually begins. It
// makes no node unavailable, not even with isolate (the paused worker asks
// for nothing while its links are cut).
type ClientPause struct{}

// Facts returns the client pause's facts, declared in faultkind.ClientPause. The nemesis records the pause armed, a
// moment; the worker records the pause itself when it begins
// (ClientPauseOp), ended by its heal, client-resume (ClientResumeOp).
func (ClientPause) Facts() Facts {
	return faultkind.ClientPause()
}

// Name returns the fault's name.
func (f ClientPause) Name() string { return f.Facts().Name }

// ClientPauseOp returns the op a worker records when a client pause stops
// it, with what it does to whom as desc: an interval that its heal,
// ClientResumeOp, ends.
func ClientPauseOp(desc any) history.Op {
	op := faultOp(ClientPause{}.Facts(), history.Info, history.JSONValue(desc), true)
	op.Process = history.NemesisProcess
	return op
}

// ClientResumeOp returns the op a worker records when its client pause ends.
func ClientResumeOp(desc any) history.Op {
	return history.Op{Process: history.NemesisProcess, Type: history.Info, F: ClientPause{}.Facts().Heal, Value: history.JSONValue(desc)}
}

// Check checks the pause point and rejects options.
func (ClientPause) Check(step Step) error {
	if step.Point != "" && !slices.Contains(PausePoints, step.Point) {
		return fmt.Errorf("%w: client-pause point %q (known: %s)", ErrOption, step.Point, strings.Join(PausePoints, ", "))
	}
	if _, err := choiceOption(step, "isolate", "false", "true"); err != nil {
		return err
	}
	return checkOptions(step, []string{"isolate"})
}

// Available reports whether the run has workers to pause.
func (ClientPause) Available(env *Env) error {
	if env.Workers == nil || env.Workers.Count() == 0 {
		return fmt.Errorf("%w: no workers", cluster.ErrUnavailable)
	}
	return nil
}

// Inject arms the pause on every target worker.
func (ClientPause) Inject(_ context.Context, env *Env, step Step) (Heal, any, error) {
	point := step.Point
	if point == "" {
		point = BeforeWrite
	}
	workers, err := ResolveWorkers(step.Targets, env.Workers.Count(), env.Rand)
	if err != nil {
		return nil, nil, err
	}
	d := step.Duration
	if d <= 0 {
		d = DefaultPause
	}
	iso, err := choiceOption(step, "isolate", "false", "true")
	if err != nil {
		return nil, nil, err
	}
	isolate := iso == "true"
	desc := map[string]any{"workers": workers, "point": point, "duration": d.String(), "armed": true, "isolate": isolate}
	var errs []error
	for _, w := range workers {
		if err := env.Workers.PauseAt(w, point, d, isolate); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 && len(errs) < len(workers) {
		return nil, desc, fmt.Errorf("%w: %w", ErrPartly, errors.Join(errs...))
	}
	return nil, desc, errors.Join(errs...)
}

// ClientPauseFailed records that a client pause armed on worker at point
// for d never stopped it, with why (err): the point it waited for never
// came, as when a client that claims the after-response handshake grants a
// lock without it. It is a fault that failed (docs/history.md §1, "Faults
// that failed"): a client-pause op of type fail in the history, and one of
// Failed.
func (r *Runner) ClientPauseFailed(worker int, point string, d time.Duration, err error) {
	desc := map[string]any{"worker": worker, "point": point, "duration": d.String()}
	op := faultOp(ClientPause{}.Facts(), history.Fail, history.JSONValue(desc), false)
	op.Error = err.Error()
	r.record(op)
	step := Step{Fault: ClientPause{}.Name(), Targets: []string{fmt.Sprintf("w%d", worker)}, Point: point, Duration: d}
	r.mu.Lock()
	r.errs = append(r.errs, &FailedError{Step: step, Err: err})
	r.mu.Unlock()
}

// ParseWorkers turns fixed worker targets ("w0", "w3", "all") into worker
// numbers below count; random specs need ResolveWorkers.
func ParseWorkers(targets []string, count int) ([]int, error) {
	return ResolveWorkers(targets, count, nil)
}

// DefaultPause is the length of a client pause whose step has no Duration.
const DefaultPause = 5 * time.Second
