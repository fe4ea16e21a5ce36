package history

import (
	"errors"
	"fmt"
)

// ErrMalformed is matched (with errors.Is) by every error Validate returns.
var ErrMalformed = errors.New("history: malformed history")

// OpError reports the op at which a history stops being well-formed.
type OpError struct {
	Index int // the op's position in the history
	Line  int // its line in a history file written one op per line (Index+1)
	Err   error
}

func (e *OpError) Error() string {
	return fmt.Sprintf("history: line %d (op %d): %v", e.Line, e.Index, e.Err)
}

func (e *OpError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrMalformed) true for every OpError.
func (e *OpError) Is(target error) bool { return target == ErrMalformed }

// Validate checks that h is well-formed (docs/history.md §2) and returns an *OpError
// for the first op that is not:
//   - indexes are dense from 0 (op i has Index i);
//   - times are non-negative and never go backwards;
//   - the type is one of invoke, ok, fail, info; a worker op has an f and a
//     process number of at least 0 (the nemesis is -1, nothing else is
//     negative);
//   - a worker process has at most one outstanding op: it invokes only when
//     it has none, and every completion follows an outstanding invoke of the
//     same process, the same f and the same key;
//   - a process that got info has crashed and never invokes again;
//   - a queue op's value can be read: a capture invoke's limit is a
//     positive integer, a capture ok's value a list of tasks each with an
//     id, a reap ok's a list of task ids, a set-status invoke names its task
//     and its status, and a task table record lists tasks each with an id
//     and no negative budget;
//   - a completion that carries an applied time (a write's) has it within
//     its own invoke–completion window: no earlier than its invoke's time
//     and no later than its own.
//
// Nemesis ops are exempt from pairing: they may be lone info ops or
// invoke/completion pairs.
func Validate(h History) error {
	type proc struct {
		pending int // index of the outstanding invoke, -1 for none
		crashed bool
	}
	procs := map[int]*proc{}
	fail := func(i int, format string, args ...any) error {
		return &OpError{Index: i, Line: i + 1, Err: fmt.Errorf(format, args...)}
	}
	for i := range h {
		op := &h[i]
		if op.Index != i {
			return fail(i, "index is %d, want %d (indexes must be dense from 0)", op.Index, i)
		}
		if op.Time < 0 {
			return fail(i, "time %d is negative", op.Time)
		}
		if i > 0 && op.Time < h[i-1].Time {
			return fail(i, "time %d is before the previous op's time %d", op.Time, h[i-1].Time)
		}
		switch op.Type {
		case Invoke, OK, Fail, Info:
		default:
			return fail(i, "unknown type %q", op.Type)
		}
		if err := validateQueueOp(*op); err != nil {
			return fail(i, "%v", err)
		}
		if op.Process == NemesisProcess {
			continue
		}
		if op.Process < 0 {
			return fail(i, "process %d is negative (only the nemesis, -1, is)", op.Process)
		}
		if op.F == "" {
			return fail(i, "process %d's op has no f", op.Process)
		}
		p := procs[op.Process]
		if p == nil {
			p = &proc{pending: -1}
			procs[op.Process] = p
		}
		if op.Type == Invoke {
			if p.crashed {
				return fail(i, "process %d invokes %s after it crashed (info)", op.Process, op.F)
			}
			if p.pending >= 0 {
				return fail(i, "process %d invokes %s while its %s (op %d) is outstanding", op.Process, op.F, h[p.pending].F, p.pending)
			}
			p.pending = i
			continue
		}
		if p.pending < 0 {
			return fail(i, "process %d completes %s (%s) without an outstanding invoke", op.Process, op.F, op.Type)
		}
		if inv := &h[p.pending]; inv.F != op.F {
			return fail(i, "process %d completes %s but its outstanding invoke (op %d) is %s", op.Process, op.F, p.pending, inv.F)
		} else if inv.Key != op.Key {
			return fail(i, "process %d completes %s of key %q but its outstanding invoke (op %d) is of key %q", op.Process, op.F, op.Key, p.pending, inv.Key)
		}
		if inv := &h[p.pending]; op.Applied != 0 && (op.Applied < inv.Time || op.Applied > op.Time) {
			return fail(i, "process %d's %s was applied at %d, outside its own window from its invoke (op %d) at %d to its completion at %d", op.Process, op.F, op.Applied, p.pending, inv.Time, op.Time)
		}
		p.pending = -1
		if op.Type == Info {
			p.crashed = true
		}
	}
	return nil
}
