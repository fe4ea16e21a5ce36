package checker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrInterrupted reports a check cut short by its caller's context (Ctrl-C),
// not by its time budget: CheckFile returns it, wrapped, and nothing the
// check found so far is a verdict. The history is untouched and can be
// checked again.
var ErrInterrupted = errors.New("checker: interrupted")

// budgetError is the cause of a check's context ending when the check's
// time budget (Options.Timeout) ran out.
type budgetError struct{ budget time.Duration }

func (e budgetError) Error() string { return budgetNote + e.budget.String() }

// budgetNote begins what a check whose time budget ran out says in its
// result's note ("timed out after 5m0s"), and what OutOfBudget looks for.
const budgetNote = "timed out after "

// OutOfBudget reports whether one of results is unknown because its check
// ran out of its time budget (Options.Timeout): its note says "timed out
// after" the budget, as stopNote writes it. A check its caller interrupted
// or whose caller's deadline passed, and a run that did not do what its
// scenario said, are unknown for other reasons. It reads results read
// back from a stored run's results.json as well.
func OutOfBudget(results []Result) bool {
	for _, r := range results {
		if r.Verdict == Unknown && strings.Contains(r.Note, budgetNote) {
			return true
		}
	}
	return false
}

// withBudget returns ctx bounded by a check's time budget (none when budget
// is not positive). When the budget runs out, the context's cause is a
// budgetError, so that stopNote can tell a budget that ran out from an
// interruption.
func withBudget(ctx context.Context, budget time.Duration) (context.Context, context.CancelFunc) {
	if budget <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeoutCause(ctx, budget, budgetError{budget})
}

// stopNote says why a check's context ended: "timed out after 5m0s" when
// its time budget ran out, "timed out" when a deadline of its caller's
// passed, and "interrupted" when its caller cancelled it.
func stopNote(ctx context.Context) string {
	var b budgetError
	switch {
	case errors.As(context.Cause(ctx), &b):
		return b.Error()
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return "timed out"
	}
	return "interrupted"
}

// interrupted returns the error of a check whose caller's context ctx
// ended before the check did: ErrInterrupted, wrapping ctx's error.
func interrupted(ctx context.Context) error {
	return fmt.Errorf("%w: %w", ErrInterrupted, ctx.Err())
}
