package clients

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/jepsen-lite/jepsen-lite/lockproto"
)

// ExecAlgorithm is the name of the algorithm that runs a lock client of
// its own as a program speaking the lock-client protocol
// (docs/lock-protocol.md).
const ExecAlgorithm = "exec"

// ExecCommandOption is the exec algorithm's option that holds the command
// (run with sh -c). Every other option of the scenario's lock is handed to
// the client as it is (init's options, JEPSEN_LITE_OPTIONS), for the client
// to read.
const ExecCommandOption = "command"

// ErrProtocol reports an external lock client that broke the protocol. The
// run that meets it ends with the verdict unknown and the error
// (docs/lock-protocol.md §4).
var ErrProtocol = lockproto.ErrProtocol

// ProcessEnv is a Clock that reaches a client's own process: Env returns
// the environment that makes the process's wall clock read it (the
// clock-skew library and its clock file), or an error saying why that
// cannot be done.
type ProcessEnv interface {
	Env() ([]string, error)
}

// ProcessPauser is a Locker whose client runs as a process of its own: a
// client pause stops the whole process (Stop) and continues it (Continue),
// background threads included, as a stop-the-world pause does.
type ProcessPauser interface {
	Stop() error
	Continue() error
}

// InCallHooker is a Locker that lets the workload run a function while a
// call is in flight: the `in-call` pause point, where a pause stops a
// client that is working on a request (waiting for its lock, say). The
// function runs right after each request is sent, and again whenever armed
// delivers while a reply is awaited.
type InCallHooker interface {
	SetInCall(run func(), armed <-chan struct{})
}

// Abilities is a Locker whose abilities are known only once it runs (an
// external client says which parts of the protocol it speaks). Can reports
// whether it has one (a Capability the protocol names: CapRenew, CapWait,
// CapAfterResponse, CapLost). A Locker that is not an
// Abilities has the abilities its type has (Renewer, Waiter).
type Abilities interface {
	Can(ability string) bool
}

// UnmarkedGranter is a Locker whose client claimed the after-response
// handshake (docs/lock-protocol.md §2) and may still grant a lock without
// it: SetUnmarkedGrant sets the function run on each such grant (nil
// removes it), so that a pause armed at after-response, which could not
// stop the client, is said to have failed.
type UnmarkedGranter interface {
	SetUnmarkedGrant(run func())
}

// Exec is a lock client running as a program of its own, one process per
// history process, spoken to through the lock-client protocol.
type Exec struct {
	afterResponse
	unmarked func()
	inCall   func()
	armed    <-chan struct{}
	proc     *lockproto.Process
	command  string
	log      io.Writer
	name     string // "w3 p11"

	mu   sync.Mutex
	lost map[string]chan struct{} // by key and owner
}

var (
	_ Locker        = (*Exec)(nil)
	_ Renewer       = (*Exec)(nil)
	_ Waiter        = (*Exec)(nil)
	_ LeaseWatcher  = (*Exec)(nil)
	_ InCallHooker  = (*Exec)(nil)
	_ ProcessPauser = (*Exec)(nil)
	_ Abilities     = (*Exec)(nil)

	_ UnmarkedGranter = (*Exec)(nil)
)

// NewExec starts the command of t.Options["command"] as worker t.Worker's
// process t.Process and waits for its init_ok. Its standard error goes to
// t.Log, line by line.
func NewExec(ctx context.Context, t Target) (Locker, error) {
	e := &Exec{lost: map[string]chan struct{}{}, log: t.Log, name: fmt.Sprintf("w%d p%d", t.Worker, t.Process)}
	p, err := startExec(ctx, t, e.markLost)
	if err != nil {
		return nil, err
	}
	e.proc, e.command = p, t.Options[ExecCommandOption]
	return e, nil
}

// startExec starts the exec algorithm's client for t: the command, its
// environment and its init (docs/lock-protocol.md §1, §2).
func startExec(ctx context.Context, t Target, lost func(key, owner string)) (*lockproto.Process, error) {
	opts, err := readOptions(ExecAlgorithm, t.Options, execOptions, true)
	if err != nil {
		return nil, err
	}
	command := strings.TrimSpace(opts.text(optExecCommand))
	if len(t.Endpoints) == 0 {
		return nil, fmt.Errorf("clients: %s: no endpoints", ExecAlgorithm)
	}
	init := lockproto.Init{Worker: t.Worker, Process: t.Process, System: t.System, Options: map[string]string{}}
	for _, e := range t.Endpoints {
		init.Endpoints = append(init.Endpoints, lockproto.Endpoint{Name: e.Name, Role: e.Role, Addr: e.Addr})
	}
	for k, v := range t.Options {
		if k != ExecCommandOption {
			init.Options[k] = v
		}
	}
	if t.Rand != nil {
		init.Seed = t.Rand.Uint64()
	}
	var env []string
	if pe, ok := t.Clock.(ProcessEnv); ok {
		ce, err := pe.Env()
		if err != nil {
			return nil, fmt.Errorf("clients: %s: the client's clock: %w", ExecAlgorithm, err)
		}
		env = append(env, ce...)
	}
	prefix := fmt.Sprintf("w%d p%d stderr: ", t.Worker, t.Process)
	cfg := lockproto.Config{Command: command, Env: env, Init: init, Lost: lost}
	if t.Log != nil {
		var mu sync.Mutex
		cfg.Stderr = func(line string) {
			mu.Lock()
			defer mu.Unlock()
			_, _ = io.WriteString(t.Log, prefix+line+"\n")
		}
	}
	p, err := lockproto.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if t.Log != nil {
		_, _ = fmt.Fprintf(t.Log, "w%d p%d: exec client %q (%s), pid %d, abilities [%s], clock mapped within %v\n",
			t.Worker, t.Process, p.Client(), command, p.PID(), strings.Join(p.Abilities(), " "), p.ClockBound())
	}
	return p, nil
}

// Client returns what the client calls itself (init_ok's client).
func (e *Exec) Client() string { return e.proc.Client() }

// Can reports whether the client claimed ability.
func (e *Exec) Can(ability string) bool { return e.proc.Has(ability) }

// WallClock returns the wall clock the client reported in its init_ok.
func (e *Exec) WallClock() time.Time {
	return time.UnixMilli(int64(e.proc.WallMS()))
}

// SetUnmarkedGrant sets the function run on a grant that came without the
// after-response handshake the client claimed.
func (e *Exec) SetUnmarkedGrant(run func()) { e.unmarked = run }

// SetInCall sets the function run while a call is in flight; nil removes it.
func (e *Exec) SetInCall(run func(), armed <-chan struct{}) { e.inCall, e.armed = run, armed }

// Stop stops the client's process group.
func (e *Exec) Stop() error { return e.proc.Stop() }

// Continue continues it.
func (e *Exec) Continue() error { return e.proc.Continue() }

func lostKey(key, owner string) string { return key + "\x00" + owner }

// markLost closes the Lost channel of key and owner (every owner of key
// when the notice names none).
func (e *Exec) markLost(key, owner string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for k, ch := range e.lost {
		if k == lostKey(key, owner) || (owner == "" && strings.HasPrefix(k, key+"\x00")) {
			select {
			case <-ch:
			default:
				close(ch)
			}
		}
	}
	if owner != "" {
		if _, ok := e.lost[lostKey(key, owner)]; !ok {
			ch := make(chan struct{})
			close(ch)
			e.lost[lostKey(key, owner)] = ch
		}
	}
}

// Lost returns a channel closed when the client said l is lost. It first
// reads the notices the client wrote since its last reply.
func (e *Exec) Lost(l Lease) <-chan struct{} {
	if e.proc != nil {
		e.proc.Poll()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	k := lostKey(l.Key, l.Owner)
	ch, ok := e.lost[k]
	if !ok {
		ch = make(chan struct{})
		e.lost[k] = ch
	}
	return ch
}

func (e *Exec) hooks() lockproto.Hooks {
	return lockproto.Hooks{AfterResponse: e.runAfterResponse, InCall: e.inCall, Armed: e.armed}
}

// call sends req.
func (e *Exec) call(ctx context.Context, req lockproto.Request) (lockproto.Reply, error) {
	return callProcess(ctx, e.proc, req, e.hooks())
}

// callProcess sends req to p; an error of a call whose reply did not come
// kills the process at once (a crash: it is not asked to clean up), and
// says so (ErrClientClosed): not even a scenario that keeps clients after
// errors can keep it.
func callProcess(ctx context.Context, p *lockproto.Process, req lockproto.Request, hooks lockproto.Hooks) (lockproto.Reply, error) {
	rep, err := p.Call(ctx, req, hooks)
	if err != nil && !errors.Is(err, lockproto.ErrProtocol) {
		p.Kill()
		err = fmt.Errorf("%w: %w", ErrClientClosed, err)
	}
	return rep, err
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// lease builds the Lease of an ok to an acquire or renewal of key received
// at called (on the harness's clock, before the request was written).
func (e *Exec) lease(key string, rep lockproto.Reply, called time.Time) Lease {
	l := Lease{Key: key, Session: rep.Session, Never: rep.Never}
	if rep.Owner != nil {
		l.Owner = *rep.Owner
	}
	if rep.Token != nil {
		l.Token = *rep.Token
	}
	if rep.UntilMS != nil {
		l.Until = e.proc.Time(*rep.UntilMS)
	}
	if rep.LeaseMS != nil {
		// Counted from the call, which came before the client received
		// the request: never later than the lease the service granted.
		l.Expires = called.Add(time.Duration(*rep.LeaseMS * float64(time.Millisecond)))
	}
	return l
}

// replyError returns the error of a reply that is not ok: definite for
// refuse (wrapped), indeterminate for error.
func replyError(rep lockproto.Reply, refuse error) error {
	msg := rep.Message
	switch rep.Type {
	case lockproto.TypeError:
		if msg == "" {
			msg = "the client reported an error of unknown outcome"
		}
		return fmt.Errorf("clients: %s: %s", ExecAlgorithm, msg)
	case lockproto.TypeNoOp:
		return ErrReleaseNoOp
	default:
		if msg == "" {
			return refuse
		}
		return fmt.Errorf("%w: %s", refuse, msg)
	}
}

// Acquire asks the client to take the lock once.
func (e *Exec) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	return e.acquire(ctx, key, ttl, 0)
}

// AcquireWait asks the client to wait for the lock up to wait.
func (e *Exec) AcquireWait(ctx context.Context, key string, ttl, wait time.Duration) (Lease, error) {
	if !e.Can(string(CapWait)) {
		return Lease{}, ErrNoWait
	}
	return e.acquire(ctx, key, ttl, wait)
}

func (e *Exec) acquire(ctx context.Context, key string, ttl, wait time.Duration) (Lease, error) {
	called := time.Now()
	rep, err := e.call(ctx, lockproto.Request{Type: lockproto.TypeAcquire, Key: key, TTLMS: ms(ttl), WaitMS: ms(wait)})
	if err != nil {
		return Lease{}, err
	}
	if rep.Type != lockproto.TypeOK {
		return Lease{}, replyError(rep, ErrNotAcquired)
	}
	if rep.Unmarked && e.unmarked != nil {
		e.unmarked()
	}
	return e.lease(key, rep, called), nil
}

// Release asks the client to release l.
func (e *Exec) Release(ctx context.Context, l Lease) error {
	rep, err := e.call(ctx, lockproto.Request{Type: lockproto.TypeRelease, Key: l.Key, Owner: l.Owner, Token: l.Token})
	if err != nil {
		return err
	}
	if rep.Type != lockproto.TypeOK {
		return replyError(rep, ErrNotHeld)
	}
	return nil
}

// Renew asks the client to extend l by ttl.
func (e *Exec) Renew(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	if !e.Can(string(CapRenew)) {
		return Lease{}, ErrNoRenewal
	}
	called := time.Now()
	rep, err := e.call(ctx, lockproto.Request{Type: lockproto.TypeRenew, Key: l.Key, Owner: l.Owner, Token: l.Token, TTLMS: ms(ttl)})
	if err != nil {
		return Lease{}, err
	}
	if rep.Type != lockproto.TypeOK {
		return Lease{}, replyError(rep, ErrNotHeld)
	}
	nl := e.lease(l.Key, rep, called)
	if nl.Owner == "" {
		nl.Owner = l.Owner
	}
	if rep.Token == nil {
		nl.Token = l.Token
	}
	nl.Session = l.Session
	return nl, nil
}

// Close ends the client as the end of a run does: its input is closed, and
// it is killed when it has not exited within lockproto.DefaultExitGrace.
func (e *Exec) Close() error {
	err := e.proc.Close(lockproto.DefaultExitGrace)
	if e.log != nil {
		_, _ = fmt.Fprintf(e.log, "%s: exec client ended, clock mapped within %v\n", e.name, e.proc.ClockBound())
	}
	return err
}
