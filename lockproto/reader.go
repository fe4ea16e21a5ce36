package lockproto

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"
)

// The client's standard output is read by the goroutine that calls, not
// by a goroutine of its own: a reply then reaches its call without a hand-
// off between goroutines, which cost more than all of the harness's other
// work per call (BenchmarkCall, docs/performance.md). Lines that arrive
// between calls wait in the pipe; Poll reads them without blocking, and
// the next call reads the rest in order.

// errWoken reports a read cut short by wake: a pause armed in the middle
// of a call, or the call's context cancelled.
var errWoken = errors.New("lockproto: read woken")

// item is one line of the client's output, parsed, or the error it gave.
// raw is the line in the read buffer, valid until the next read; an item
// kept longer (Poll's) holds its text.
type item struct {
	reply Reply
	line  int
	raw   []byte
	text  string
	err   error
}

// Text returns the line's text.
func (it item) Text() string {
	if it.raw != nil {
		return string(it.raw)
	}
	return it.text
}

// wake cuts short a read in flight, or the next one: armed says that a
// pause was armed in the middle of a call. It may be called from any
// goroutine.
func (p *Process) wake(armed bool) {
	if armed {
		p.armedFlag.Store(true)
	}
	p.woken.Store(true)
	_ = p.stdout.SetReadDeadline(time.Now())
}

// readLine returns the next line of the client's output (without its
// newline), reading until deadline. At the end of the output it returns a
// last line without a newline, then io.EOF; a read cut short returns
// os.ErrDeadlineExceeded or errWoken, and what was read of a line is kept.
func (p *Process) readLine(deadline time.Time) ([]byte, error) {
	for {
		if i := bytes.IndexByte(p.rbuf[p.r:p.w], '\n'); i >= 0 {
			line := p.rbuf[p.r : p.r+i]
			p.r += i + 1
			return line, nil
		}
		if p.eof {
			if p.w > p.r {
				line := p.rbuf[p.r:p.w]
				p.r = p.w
				return line, nil
			}
			return nil, io.EOF
		}
		if p.w-p.r > maxLine {
			p.eof, p.r, p.w = true, 0, 0
			return nil, fmt.Errorf("a line longer than %d bytes", maxLine)
		}
		p.makeRoom()
		// The deadline is set only when it changed: wake sets its own,
		// and a woken read forgets the one it had.
		if !p.deadlineSet || !deadline.Equal(p.deadline) {
			if err := p.stdout.SetReadDeadline(deadline); err != nil {
				p.eof = true
				continue
			}
			p.deadline, p.deadlineSet = deadline, true
		}
		if p.woken.Swap(false) {
			p.deadlineSet = false
			return nil, errWoken
		}
		n, err := p.stdout.Read(p.rbuf[p.w:])
		p.w += n
		switch {
		case err == nil:
		case errors.Is(err, os.ErrDeadlineExceeded):
			p.deadlineSet = false
			if p.woken.Swap(false) {
				return nil, errWoken
			}
			return nil, err
		default: // io.EOF, or the pipe was closed by Kill
			p.eof = true
		}
	}
}

// makeRoom moves the unread bytes to the front of the buffer and grows it
// when it is full.
func (p *Process) makeRoom() {
	if p.r > 0 {
		p.w = copy(p.rbuf, p.rbuf[p.r:p.w])
		p.r = 0
	}
	if p.w == len(p.rbuf) {
		p.rbuf = append(p.rbuf, make([]byte, max(len(p.rbuf), 4096))...)
	}
}

// parse parses one line into an item, handling a lost notice (§5) on the
// spot: it reports false for a notice it handled.
func (p *Process) parse(line []byte) (item, bool) {
	p.lineNo++
	rep, err := parseLine(line)
	if err == nil && rep.Type == TypeLost {
		switch {
		case !p.hasAbility(AbilityLost):
			err = errors.New(`a "lost" notice from a client that did not claim the ability "lost"`)
		case rep.Key == "":
			err = errors.New(`a "lost" notice without "key"`)
		default:
			if p.cfg.Lost != nil {
				owner := ""
				if rep.Owner != nil {
					owner = *rep.Owner
				}
				p.cfg.Lost(rep.Key, owner)
			}
			return item{}, false
		}
	}
	return item{reply: rep, line: p.lineNo, raw: line, err: err}, true
}

// next returns the client's next line that is not a lost notice: one that
// Poll read first, or one read until deadline. io.EOF says that the output
// ended.
func (p *Process) next(deadline time.Time) (item, error) {
	for {
		if len(p.pending) > 0 {
			it := p.pending[0]
			p.pending = p.pending[1:]
			return it, nil
		}
		line, err := p.readLine(deadline)
		switch {
		case err == io.EOF, errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, errWoken):
			return item{}, err
		case err != nil:
			return item{line: p.lineNo + 1, err: fmt.Errorf("unreadable output: %w", err)}, nil
		}
		if it, ok := p.parse(line); ok {
			return it, nil
		}
	}
}

// Poll reads, without blocking, what the client wrote since the last call:
// its lost notices take effect now, and any other line waits for the next
// call. It is called by the goroutine that makes the calls.
func (p *Process) Poll() {
	if p.raw == nil {
		return
	}
	// A read deadline that passed would stop the read before it starts.
	if !p.deadlineSet || !p.deadline.IsZero() {
		_ = p.stdout.SetReadDeadline(time.Time{})
		p.deadline, p.deadlineSet = time.Time{}, true
	}
	for !p.eof {
		p.makeRoom()
		var n int
		var rerr error
		err := p.raw.Read(func(fd uintptr) bool {
			n, rerr = syscall.Read(int(fd), p.rbuf[p.w:])
			return true
		})
		if err != nil || rerr == syscall.EAGAIN || rerr == syscall.EINTR {
			break
		}
		if rerr != nil || n <= 0 {
			p.eof = true
			break
		}
		p.w += n
	}
	for {
		i := bytes.IndexByte(p.rbuf[p.r:p.w], '\n')
		if i < 0 {
			return
		}
		line := p.rbuf[p.r : p.r+i]
		p.r += i + 1
		if it, ok := p.parse(line); ok {
			it.text, it.raw = string(it.raw), nil
			p.pending = append(p.pending, it)
		}
	}
}

// partialLine returns, as an item of the line it would have been, what the
// client wrote after its last newline, when it wrote anything: a read
// whose deadline passed on it met a line that the client began and never
// ended (garbage without a newline, then a hang).
func (p *Process) partialLine() (item, bool) {
	if p.w <= p.r {
		return item{}, false
	}
	return item{line: p.lineNo + 1, text: string(p.rbuf[p.r:p.w])}, true
}
