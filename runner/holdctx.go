package runner

import (
	"context"
	"sync"
	"time"

	"github.com/jepsen-lite/jepsen-lite/clients"
)

// holdContext is the context a worker gives Acquire and AcquireWait. While
// the call runs, it is the call's context: it has the call's deadline, ends
// with context.DeadlineExceeded when the call runs past it, and, for a
// waiting acquire, ends with the cause clients.ErrRunEnded when the run
// ends. Once the call has returned, it has no deadline of its own and lives
// as long as the hold: end ends it with the cause clients.ErrHoldEnded
// after the hold (once Release returned, or when the process crashed), and
// the run's abort ends it too. A library that ties a heartbeat or a
// keepalive to the context it was given thus keeps it for the whole hold,
// and no longer.
type holdContext struct {
	context.Context // the cancel-cause context under it
	cancel          context.CancelCauseFunc
	timer           *time.Timer
	unhook          func() bool // stops the run-end trigger; nil when the call does not wait

	mu       sync.Mutex
	deadline time.Time // the call's deadline; zero once it returned
}

// newHoldContext returns the context of one acquire call that may take up
// to timeout, under parent (the run's abort). With waits, the end of stop
// (the end of the run) ends the call too, with the cause
// clients.ErrRunEnded.
func newHoldContext(parent context.Context, timeout time.Duration, stop context.Context, waits bool) *holdContext {
	ctx, cancel := context.WithCancelCause(parent)
	c := &holdContext{Context: ctx, cancel: cancel, deadline: time.Now().Add(timeout)}
	if d, ok := parent.Deadline(); ok && d.Before(c.deadline) {
		c.deadline = d
	}
	c.timer = time.AfterFunc(timeout, func() { c.cancelCall(context.DeadlineExceeded) })
	if waits {
		c.unhook = context.AfterFunc(stop, func() { c.cancelCall(clients.ErrRunEnded) })
	}
	return c
}

// cancelCall ends the context with cause, unless the call has returned.
func (c *holdContext) cancelCall(cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.deadline.IsZero() {
		c.cancel(cause)
	}
}

// returned marks the call as returned: from now on neither its timeout nor
// the end of the run ends the context.
func (c *holdContext) returned() {
	c.mu.Lock()
	c.deadline = time.Time{}
	c.mu.Unlock()
	c.timer.Stop()
	if c.unhook != nil {
		c.unhook()
	}
}

// end ends the context: the hold is over.
func (c *holdContext) end() { c.cancel(clients.ErrHoldEnded) }

// Deadline returns the call's deadline while it runs, and afterwards the
// parent's, if it has one.
func (c *holdContext) Deadline() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.deadline.IsZero() {
		return c.Context.Deadline()
	}
	return c.deadline, true
}

// Err returns context.DeadlineExceeded when the call ran past its timeout,
// as a context with a deadline does, and otherwise the error of the context
// under it.
func (c *holdContext) Err() error {
	err := c.Context.Err()
	if err != nil && context.Cause(c.Context) == context.DeadlineExceeded {
		return context.DeadlineExceeded
	}
	return err
}
