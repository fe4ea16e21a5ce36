package history

import (
	"errors"
	"fmt"
	"time"
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
	var v Validator
	for i := range h {
		if err := v.Add(&h[i]); err != nil {
			return err
		}
	}
	return nil
}

// Validator applies Validate's rules to a history fed to it op by op, in
// order, so that a history read as a stream (Scanner) is checked without
// being held: it keeps, for each worker process, only its outstanding
// invoke (index, f, key and time) and whether it crashed, and the previous
// op's time. The zero Validator is ready for the history's first op.
type Validator struct {
	n     int
	last  time.Duration
	procs map[int]*validProc
}

// validProc is what a Validator keeps of one worker process.
type validProc struct {
	pending int // index of the outstanding invoke, -1 for none
	f, key  string
	at      time.Duration
	crashed bool
}

// Add checks the next op of the history: it returns the *OpError that
// Validate returns for the whole history when op is the first op that is
// not well-formed, and nil otherwise. After an error the Validator's state
// is undefined.
func (v *Validator) Add(op *Op) error {
	i := v.n
	v.n++
	fail := func(format string, args ...any) error {
		return &OpError{Index: i, Line: i + 1, Err: fmt.Errorf(format, args...)}
	}
	if op.Index != i {
		return fail("index is %d, want %d (indexes must be dense from 0)", op.Index, i)
	}
	if op.Time < 0 {
		return fail("time %d is negative", op.Time)
	}
	if i > 0 && op.Time < v.last {
		return fail("time %d is before the previous op's time %d", op.Time, v.last)
	}
	v.last = op.Time
	switch op.Type {
	case Invoke, OK, Fail, Info:
	default:
		return fail("unknown type %q", op.Type)
	}
	if err := validateQueueOp(op); err != nil {
		return fail("%v", err)
	}
	if _, _, err := HostEventOf(*op); err != nil {
		return fail("%v", err)
	}
	if op.Process == NemesisProcess {
		return nil
	}
	if op.Process < 0 {
		return fail("process %d is negative (only the nemesis, -1, is)", op.Process)
	}
	if op.F == "" {
		return fail("process %d's op has no f", op.Process)
	}
	if v.procs == nil {
		v.procs = map[int]*validProc{}
	}
	p := v.procs[op.Process]
	if p == nil {
		p = &validProc{pending: -1}
		v.procs[op.Process] = p
	}
	if op.Type == Invoke {
		if p.crashed {
			return fail("process %d invokes %s after it crashed (info)", op.Process, op.F)
		}
		if p.pending >= 0 {
			return fail("process %d invokes %s while its %s (op %d) is outstanding", op.Process, op.F, p.f, p.pending)
		}
		p.pending, p.f, p.key, p.at = i, op.F, op.Key, op.Time
		return nil
	}
	if p.pending < 0 {
		return fail("process %d completes %s (%s) without an outstanding invoke", op.Process, op.F, op.Type)
	}
	if p.f != op.F {
		return fail("process %d completes %s but its outstanding invoke (op %d) is %s", op.Process, op.F, p.pending, p.f)
	} else if p.key != op.Key {
		return fail("process %d completes %s of key %q but its outstanding invoke (op %d) is of key %q", op.Process, op.F, op.Key, p.pending, p.key)
	}
	if op.Applied != 0 && (op.Applied < p.at || op.Applied > op.Time) {
		return fail("process %d's %s was applied at %d, outside its own window from its invoke (op %d) at %d to its completion at %d", op.Process, op.F, op.Applied, p.pending, p.at, op.Time)
	}
	p.pending, p.f, p.key = -1, "", ""
	if op.Type == Info {
		p.crashed = true
	}
	return nil
}
