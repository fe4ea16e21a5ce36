package lockproto

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jepsen-lite/jepsen-lite/spawn"
)

// DefaultInitTimeout is how long a client may take to answer init.
const DefaultInitTimeout = 20 * time.Second

// DefaultExitGrace is how long a process whose input was closed may take to
// exit before its process group is killed.
const DefaultExitGrace = 2 * time.Second

// maxLine is the longest line a client may write.
const maxLine = 1 << 20

// Config is how to start one client process.
type Config struct {
	Command string   // run with sh -c
	Dir     string   // working directory; "" is the harness's
	Env     []string // added to the harness's environment and Init's (Init.Env)
	Init    Init     // the init message (Type and Protocol are filled in)
	// Stderr receives each line the client writes to its standard error.
	// Nil discards them.
	Stderr func(line string)
	// Lost is called with every lost notice the client sends. Nil ignores
	// them.
	Lost func(key, owner string)
	// InitTimeout bounds the wait for init_ok; zero is DefaultInitTimeout.
	InitTimeout time.Duration
}

// ProtocolError is a client's break of the protocol. It wraps ErrProtocol.
type ProtocolError struct {
	Command string
	Worker  int
	Process int
	Line    int    // the line of the client's standard output; 0 when none
	Text    string // that line
	Reason  string
}

func (e *ProtocolError) Error() string {
	s := fmt.Sprintf("exec client w%d p%d (%s): ", e.Worker, e.Process, e.Command)
	if e.Line > 0 {
		s += fmt.Sprintf("stdout line %d: %s: %s", e.Line, e.Reason, Quote(e.Text))
	} else {
		s += e.Reason
	}
	return s
}

func (e *ProtocolError) Unwrap() error { return ErrProtocol }

// QuoteLimit is how many bytes of a client's line an error quotes.
const QuoteLimit = 200

// Quote quotes what a client wrote for an error message: its first
// QuoteLimit bytes, and, when that cuts it, a mark saying how long it was.
func Quote(text string) string {
	if len(text) <= QuoteLimit {
		return strconv.Quote(text)
	}
	return fmt.Sprintf("%s… (cut at %d of %d bytes)", strconv.Quote(text[:QuoteLimit]), QuoteLimit, len(text))
}

// Process is one running client. Its calls are made by one goroutine at a
// time; Stop, Continue and Kill may be called from any goroutine.
type Process struct {
	cfg    Config
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *os.File
	raw    syscall.RawConn
	// The client's output read so far: rbuf[r:w] is not yet parsed; eof
	// says that the output ended. Read only by the calling goroutine.
	rbuf []byte
	r, w int
	// deadline is the output's read deadline, when deadlineSet.
	deadline    time.Time
	deadlineSet bool
	eof         bool
	lineNo      int
	pending     []item // lines Poll read, for the next call
	// woken cuts short the read in flight (wake); armedFlag says that a
	// pause was armed in the middle of a call.
	woken, armedFlag atomic.Bool
	// exited is closed when the process has exited and its standard error
	// is read.
	exited  chan struct{}
	waitErr error
	// done is closed when the process is ended (Kill, Close).
	done     chan struct{}
	doneOnce sync.Once
	watching bool // a goroutine passes Hooks.Armed on to wake
	hello    Reply
	// The client's zero (when it read init) lies in [lo, hi] on the
	// harness's clock; Time maps from lo.
	clockMu sync.Mutex
	lo, hi  time.Time
	nextID  uint64
	wbuf    []byte // the last request line, its buffer kept for the next
	broken  error  // the first protocol error; every later call returns it
	killed  bool
	mu      sync.Mutex
	stopped bool
}

// Start starts the client, sends init and waits for its init_ok. An error
// that is the client's (it exited, answered badly, did not answer in time)
// wraps ErrProtocol; the process is gone when Start returns an error.
func Start(ctx context.Context, cfg Config) (*Process, error) {
	if strings.TrimSpace(cfg.Command) == "" {
		return nil, errors.New("lockproto: no command")
	}
	if cfg.InitTimeout <= 0 {
		cfg.InitTimeout = DefaultInitTimeout
	}
	cfg.Init.Type, cfg.Init.Protocol = TypeInit, Version
	cmd := exec.Command("sh", "-c", cfg.Command)
	cmd.Dir = cfg.Dir
	cmd.Env = append(append(os.Environ(), cfg.Init.Env()...), cfg.Env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := spawn.Start(cmd); err != nil {
		return nil, fmt.Errorf("lockproto: starting %q: %w", cfg.Command, err)
	}
	out, ok := stdout.(*os.File)
	if !ok {
		return nil, fmt.Errorf("lockproto: the client's output is a %T, not a pipe", stdout)
	}
	p := &Process{cfg: cfg, cmd: cmd, stdin: stdin, stdout: out, rbuf: make([]byte, 4096), exited: make(chan struct{}), done: make(chan struct{})}
	p.raw, _ = out.SyscallConn()
	stderrRead := make(chan struct{})
	go func() { defer close(stderrRead); p.readStderr(stderr) }()
	go func() {
		// The pipes are closed by Kill and Close, not by exec.Cmd.Wait:
		// the calls read the output until then.
		st, err := cmd.Process.Wait()
		<-stderrRead
		switch {
		case err != nil:
			p.waitErr = err
		case !st.Success():
			p.waitErr = &exec.ExitError{ProcessState: st}
		}
		close(p.exited)
	}()
	if err := p.init(ctx); err != nil {
		p.Kill()
		return nil, err
	}
	return p, nil
}

// init sends init and reads init_ok, noting the clock mapping (§3).
func (p *Process) init(ctx context.Context) error {
	line, err := json.Marshal(p.cfg.Init)
	if err != nil {
		return err
	}
	p.lo = time.Now()
	if _, err := p.stdin.Write(append(line, '\n')); err != nil {
		return p.exitError("it exited before it read init")
	}
	// A start-up is bounded by InitTimeout, not by the deadline of the op
	// that needed the process: a process takes the time it takes to start.
	deadline := time.Now().Add(p.cfg.InitTimeout)
	stop := p.wakeOnCancel(ctx)
	defer stop()
	for {
		it, err := p.next(deadline)
		received := time.Now()
		switch {
		case err == io.EOF:
			return p.exitError("it exited before it answered init")
		case errors.Is(err, errWoken):
			if cerr := ctx.Err(); cerr != nil && !errors.Is(cerr, context.DeadlineExceeded) {
				return context.Cause(ctx)
			}
			continue
		case err != nil:
			if partial, ok := p.partialLine(); ok {
				return p.fail(partial, fmt.Sprintf("no init_ok within %v, only part of a line without its newline", p.cfg.InitTimeout))
			}
			return p.fail(item{}, fmt.Sprintf("no init_ok within %v", p.cfg.InitTimeout))
		case it.err != nil:
			return p.fail(it, it.err.Error())
		}
		if err := checkInitOK(it.reply); err != nil {
			return p.fail(it, err.Error())
		}
		p.hello = it.reply
		p.hi = received.Add(-msDuration(*it.reply.NowMS))
		if p.hi.Before(p.lo) {
			p.hi = p.lo
		}
		return nil
	}
}

// wakeOnCancel wakes the read in flight when ctx is cancelled; the caller
// tells a cancellation from its deadline. The function it returns stops
// it.
func (p *Process) wakeOnCancel(ctx context.Context) func() bool {
	if ctx.Done() == nil {
		return func() bool { return true }
	}
	return context.AfterFunc(ctx, func() { p.wake(false) })
}

func (p *Process) readStderr(r io.ReadCloser) {
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), maxLine)
	for sc.Scan() {
		if p.cfg.Stderr != nil {
			p.cfg.Stderr(sc.Text())
		}
	}
	_, _ = io.Copy(io.Discard, r)
}

func (p *Process) hasAbility(a string) bool { return slices.Contains(p.hello.Abilities, a) }

// Client returns the name the client gave itself in init_ok.
func (p *Process) Client() string { return p.hello.Client }

// Has reports whether the client claimed ability a.
func (p *Process) Has(a string) bool { return p.hasAbility(a) }

// Abilities returns the abilities the client claimed.
func (p *Process) Abilities() []string { return slices.Clone(p.hello.Abilities) }

// WallMS returns the wall clock the client reported in init_ok (Unix ms).
func (p *Process) WallMS() float64 { return *p.hello.WallMS }

// ClockBound returns the error bound of Time (docs/lock-protocol.md §3).
func (p *Process) ClockBound() time.Duration {
	p.clockMu.Lock()
	defer p.clockMu.Unlock()
	return max(p.hi.Sub(p.lo), 0)
}

// Time maps a moment the client reported, in its ms since it read init, to
// the harness's clock: never later than the moment the client meant, and
// earlier by at most ClockBound.
func (p *Process) Time(ms float64) time.Time {
	p.clockMu.Lock()
	defer p.clockMu.Unlock()
	return p.lo.Add(msDuration(ms))
}

func msDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

// narrow narrows the interval of the client's zero with an exchange whose
// request was written at sent and whose reply was read at received: the
// client read the request at recvMS (so its zero is at least sent −
// recvMS) and wrote the reply at nowMS (so its zero is at most received −
// nowMS).
func (p *Process) narrow(sent, received time.Time, recvMS, nowMS *float64) {
	p.clockMu.Lock()
	defer p.clockMu.Unlock()
	if recvMS != nil && *recvMS >= 0 {
		if lo := sent.Add(-msDuration(*recvMS)); lo.After(p.lo) {
			p.lo = lo
		}
	}
	if nowMS != nil && *nowMS >= 0 {
		hi := received.Add(-msDuration(*nowMS))
		if hi.Before(p.hi) {
			p.hi = hi
		}
	}
	if p.lo.After(p.hi) {
		// The client's clock ran fast against the harness's, or its
		// times are wrong: keep the mapping conservative.
		p.hi = p.lo
	}
}

// PID returns the process's id (its process group's id too).
func (p *Process) PID() int { return p.cmd.Process.Pid }

// fail records and returns the protocol error of item it.
func (p *Process) fail(it item, reason string) error {
	err := &ProtocolError{Command: p.cfg.Command, Worker: p.cfg.Init.Worker, Process: p.cfg.Init.Process, Line: it.line, Text: it.Text(), Reason: reason}
	if p.broken == nil {
		p.broken = err
	}
	return err
}

// exitError returns the protocol error of a client that exited (or closed
// its output) while it was needed, with its exit status when it has one.
func (p *Process) exitError(when string) error {
	status := "the client closed its output"
	select {
	case <-p.exited:
		status = "the client exited"
		var ee *exec.ExitError
		switch {
		case p.waitErr == nil:
			status += " with status 0"
		case errors.As(p.waitErr, &ee):
			status += ": " + ee.ProcessState.String()
		}
	case <-time.After(time.Second):
	}
	return p.fail(item{}, status+": "+when)
}

// Hooks are the harness's functions that a call runs at its pause points;
// each returns when any pause armed there is over.
type Hooks struct {
	// AfterResponse runs at the client's after-response handshake (or,
	// for a client without it, when its reply has arrived).
	AfterResponse func()
	// InCall runs while the client works on the request: right after the
	// request was written, and again whenever Armed delivers while the
	// reply is awaited (a pause armed in the middle of a call).
	InCall func()
	Armed  <-chan struct{}
}

// ErrNoReply reports a reply that did not come within the call's deadline:
// an unknown outcome, not a protocol error (docs/lock-protocol.md §4).
var ErrNoReply = errors.New("lockproto: no reply within the op's timeout")

// Call sends req (its ID is assigned here) and returns the client's reply.
// ctx's deadline is the op's timeout, moved on by the time the call spent
// in its hooks (a paused client is paused with its caller); a reply that
// does not come by then returns an error wrapping ErrNoReply and
// context.DeadlineExceeded. A cancelled ctx returns its error. An error
// wrapping ErrProtocol ends the process's use: every later call returns it.
func (p *Process) Call(ctx context.Context, req Request, hooks Hooks) (Reply, error) {
	if p.broken != nil {
		return Reply{}, p.broken
	}
	deadline, hasDeadline := ctx.Deadline()
	req, sent, err := p.write(req)
	if err != nil {
		return Reply{}, err
	}
	var paused time.Duration
	pause := func(f func()) {
		if f == nil {
			return
		}
		t := time.Now()
		f()
		paused += time.Since(t)
	}
	pause(hooks.InCall)
	if hooks.InCall != nil && hooks.Armed != nil {
		p.watch(hooks.Armed)
	}
	stop := p.wakeOnCancel(ctx)
	defer stop()
	marked := false // the client sent its after-response handshake
	for {
		if hooks.InCall != nil && p.armedFlag.Swap(false) {
			pause(hooks.InCall)
		}
		var until time.Time // none
		if hasDeadline {
			until = deadline.Add(paused)
		}
		it, err := p.next(until)
		switch {
		case err == io.EOF:
			return Reply{}, p.exitError(fmt.Sprintf("it was answering %s id %d", req.Type, req.ID))
		case errors.Is(err, errWoken):
			// A pause armed mid-call (the loop runs it), or ctx ended:
			// its deadline is the call's own, moved by its pauses.
			if cerr := ctx.Err(); cerr != nil && !errors.Is(cerr, context.DeadlineExceeded) {
				return Reply{}, context.Cause(ctx)
			}
			continue
		case err != nil:
			return Reply{}, p.noReply(req)
		case it.err != nil:
			return Reply{}, p.fail(it, it.err.Error())
		}
		if it.reply.Type == TypeAfterResponse {
			if err := p.handshake(req, it, marked); err != nil {
				return Reply{}, err
			}
			marked = true
			pause(hooks.AfterResponse)
			if err := p.send(map[string]any{"type": TypeContinue, "id": req.ID}); err != nil {
				return Reply{}, p.exitError(fmt.Sprintf("it was waiting for continue on %s id %d", req.Type, req.ID))
			}
			continue
		}
		if err := checkReply(req, it.reply); err != nil {
			return Reply{}, p.fail(it, err.Error())
		}
		p.narrow(sent, time.Now(), it.reply.RecvMS, it.reply.NowMS)
		if req.Type == TypeAcquire && !p.hasAbility(AbilityAfterResponse) {
			pause(hooks.AfterResponse)
		}
		it.reply.Unmarked = req.Type == TypeAcquire && it.reply.Type == TypeOK && p.hasAbility(AbilityAfterResponse) && !marked
		return it.reply, nil
	}
}

// write assigns req its id and writes it, returning it and when it was
// written.
func (p *Process) write(req Request) (Request, time.Time, error) {
	p.nextID++
	req.ID = p.nextID
	line, err := encodeRequest(p.wbuf[:0], req)
	if err != nil {
		return req, time.Time{}, err
	}
	p.wbuf = line
	sent := time.Now()
	if _, err := p.stdin.Write(line); err != nil {
		return req, sent, p.exitError(fmt.Sprintf("it could not be sent %s id %d", req.Type, req.ID))
	}
	return req, sent, nil
}

// noReply returns the error of a call to req whose deadline passed: an
// unknown outcome (ErrNoReply), or a protocol error when the client wrote
// part of a line and never its newline (garbage, then a hang).
func (p *Process) noReply(req Request) error {
	if partial, ok := p.partialLine(); ok {
		return p.fail(partial, fmt.Sprintf("no reply to %s id %d within the op's timeout, only part of a line without its newline", req.Type, req.ID))
	}
	return fmt.Errorf("%w: %s id %d: %w", ErrNoReply, req.Type, req.ID, context.DeadlineExceeded)
}

// watch passes every signal of armed on to wake, until the process ends.
func (p *Process) watch(armed <-chan struct{}) {
	if p.watching {
		return
	}
	p.watching = true
	go func() {
		for {
			select {
			case <-armed:
				p.wake(true)
			case <-p.done:
				return
			}
		}
	}()
}

// handshake checks an after-response line against the request in flight;
// marked says that the call already had one.
func (p *Process) handshake(req Request, it item, marked bool) error {
	switch {
	case marked:
		return p.fail(it, fmt.Sprintf(`a second "after-response" handshake for acquire id %d: one per acquire`, req.ID))
	case !p.hasAbility(AbilityAfterResponse):
		return p.fail(it, `an "after-response" handshake from a client that did not claim the ability "after-response"`)
	case req.Type != TypeAcquire:
		return p.fail(it, fmt.Sprintf(`an "after-response" handshake during %s: it belongs to acquire`, req.Type))
	case it.reply.ID == nil || *it.reply.ID != req.ID:
		return p.fail(it, fmt.Sprintf("an after-response handshake whose id is not the acquire's (%d)", req.ID))
	}
	return nil
}

func (p *Process) send(m any) error {
	line, err := json.Marshal(m)
	if err != nil {
		return err
	}
	_, err = p.stdin.Write(append(line, '\n'))
	return err
}

// signal sends sig to the process group.
func (p *Process) signal(sig syscall.Signal) error {
	return syscall.Kill(-p.cmd.Process.Pid, sig)
}

// Stop stops every process of the client's group (SIGSTOP), as a
// stop-the-world pause stops every thread.
func (p *Process) Stop() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.killed {
		return nil
	}
	p.stopped = true
	return p.signal(syscall.SIGSTOP)
}

// Continue continues a stopped client (SIGCONT).
func (p *Process) Continue() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.killed || !p.stopped {
		return nil
	}
	p.stopped = false
	return p.signal(syscall.SIGCONT)
}

// KillWait bounds how long Kill waits for a killed client to be gone.
const KillWait = 5 * time.Second

// Kill kills the client's process group at once (SIGKILL) and waits until
// it is gone (reaped, and its standard error read to its end), for at most
// KillWait: a process the kernel is slow to end (on a machine that swaps)
// or a descendant outside its group that keeps its standard error open
// does not hold the caller up; it is reaped when it ends.
func (p *Process) Kill() {
	p.mu.Lock()
	if !p.killed {
		p.killed = true
		_ = p.signal(syscall.SIGKILL)
	}
	p.mu.Unlock()
	_ = p.stdin.Close()
	t := time.NewTimer(KillWait)
	defer t.Stop()
	select {
	case <-p.exited:
	case <-t.C:
	}
	p.end()
}

// end stops the process's goroutines and closes its output.
func (p *Process) end() {
	p.doneOnce.Do(func() {
		close(p.done)
		_ = p.stdout.Close()
	})
}

// Close ends the client as the end of a run does: its input is closed, and
// its process group is killed when it has not exited within grace. It
// returns an error when the client had to be killed or exited with a
// status other than 0.
func (p *Process) Close(grace time.Duration) error {
	_ = p.stdin.Close()
	_ = p.Continue()
	// What the client writes as it exits is read and dropped, so that a
	// full pipe does not keep it from exiting.
	_ = p.stdout.SetReadDeadline(time.Time{})
	go func() { _, _ = io.Copy(io.Discard, p.stdout) }()
	select {
	case <-p.exited:
	case <-time.After(grace):
		p.Kill()
		return fmt.Errorf("lockproto: w%d p%d did not exit within %v of the end of its input; killed", p.cfg.Init.Worker, p.cfg.Init.Process, grace)
	}
	p.mu.Lock()
	killed := p.killed
	p.killed = true
	p.mu.Unlock()
	// Whatever it left in its group goes with it.
	_ = p.signal(syscall.SIGKILL)
	p.end()
	if p.waitErr != nil && !killed {
		return fmt.Errorf("lockproto: w%d p%d exited at the end of its input: %w", p.cfg.Init.Worker, p.cfg.Init.Process, p.waitErr)
	}
	return nil
}
