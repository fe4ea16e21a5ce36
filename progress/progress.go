// Package progress owns the status line that the long commands (run,
// check, gate, hunt) draw while they work: one line at the bottom of the
// terminal, in the style of cargo, pv and docker build, saying the phase,
// a bar when the total is known, the counts with their rate, the time
// elapsed and the time left when it can be estimated. The line is redrawn
// in place (a carriage return, then the erase-line sequence) at most ten
// times a second and cleared when the work is done, so that nothing of it
// stays among the command's own output.
//
// It is drawn only on a terminal: a Line whose writer is not one (a pipe,
// a file, a buffer), whose TERM is "dumb", or that was made Quiet, draws
// nothing at all, and what is written through its Writer passes through
// unchanged.
package progress

import (
	"bytes"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"
)

// Unit says what a Status's Done and Total count.
type Unit string

// The units drawn otherwise than as plain counts; any other Unit is a count
// named by it ("runs": "3/24 runs").
const (
	// Bytes are drawn as sizes: "112.3/273.9 MiB".
	Bytes Unit = "bytes"
	// Time counts nanoseconds (a time.Duration), drawn as "12.3s/31.0s".
	Time Unit = "time"
)

// Status is what the line shows: the work's phase, how far the phase has
// come, and a count of the items handled with their rate.
type Status struct {
	// Phase names what is being done: "reading", "running", "checking".
	// The rates and the time left are measured from the moment the phase
	// began.
	Phase string
	// Done of Total is how far the phase has come, in Unit; with a Total
	// of 0 (not known) there is no bar and no time left.
	Done, Total int64
	Unit        Unit
	// Count is a number of items handled (ops read or recorded), drawn
	// with its rate when CountUnit names them ("ops"); when CountUnit is
	// empty it is not drawn.
	Count     int64
	CountUnit string
	// Note is free text drawn last ("faults: kill n1"), cut to the width
	// of the terminal.
	Note string
}

// redrawEvery is the time between two drawings of a line: at most ten a
// second.
const redrawEvery = 100 * time.Millisecond

// defaultWidth is the width assumed when the terminal's cannot be read.
const defaultWidth = 80

// Line is a status line on a terminal. Its methods may be called from any
// goroutine. The zero value is not usable: make one with New.
type Line struct {
	w     io.Writer
	live  bool
	now   func() time.Time
	width func() int

	mu    sync.Mutex
	start time.Time
	have  bool
	cur   Status
	phase phaseStart
	// shown is the text on the terminal now, "" when the line is clear.
	shown string
	// pending is the part of a line written through Writer that has no
	// newline yet: it is held back so that the status line is never drawn
	// after it.
	pending []byte
	done    bool

	stopOnce sync.Once
	stop     chan struct{}
	stopped  chan struct{}
}

// phaseStart is where the current phase began: its time and its Done and
// Count then, from which the rates are measured; doneAt is when Done last
// changed, and bar the cells of the bar last drawn in the phase: the bar
// only narrows within a phase (as the counts and the note grow), so that
// it does not jump back and forth.
type phaseStart struct {
	at, doneAt  time.Time
	done, count int64
	bar         int
}

// Option configures New.
type Option func(*options)

type options struct{ quiet bool }

// Quiet turns the line off when q is true (a command's --quiet): it draws
// nothing, as on a pipe.
func Quiet(q bool) Option { return func(o *options) { o.quiet = q } }

// New returns the status line drawn on w. It draws only when w is a
// terminal (an *os.File for which term.IsTerminal holds), TERM is not
// "dumb" and Quiet is not set; otherwise it never writes anything to w.
// A line that draws redraws itself every tenth of a second, until Done.
func New(w io.Writer, opts ...Option) *Line {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	f, isFile := w.(*os.File)
	if o.quiet || !isFile || !term.IsTerminal(int(f.Fd())) || os.Getenv("TERM") == "dumb" {
		return &Line{w: w, now: time.Now}
	}
	width := func() int {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
			return cols
		}
		return defaultWidth
	}
	l := newLine(w, time.Now, width)
	l.stop, l.stopped = make(chan struct{}), make(chan struct{})
	go l.tick()
	return l
}

// newLine returns a line that draws on w, with the clock and the width
// given, and no ticker: draw draws it.
func newLine(w io.Writer, now func() time.Time, width func() int) *Line {
	return &Line{w: w, live: true, now: now, width: width, start: now()}
}

// Live reports whether the line draws: whether w is a terminal and the
// line is not quiet.
func (l *Line) Live() bool { return l.live }

func (l *Line) tick() {
	t := time.NewTicker(redrawEvery)
	defer t.Stop()
	defer close(l.stopped)
	for {
		select {
		case <-t.C:
			l.draw()
		case <-l.stop:
			return
		}
	}
}

// Update sets what the line shows; it is drawn at the next tick. It only
// records s, so that it may be called as often as the work likes.
func (l *Line) Update(s Status) {
	if !l.live {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return
	}
	now := l.now()
	switch {
	case !l.have || s.Phase != l.cur.Phase:
		l.phase = phaseStart{at: now, doneAt: now, done: s.Done, count: s.Count}
	case s.Done != l.cur.Done:
		l.phase.doneAt = now
	}
	l.cur, l.have = s, true
}

// draw draws the line if what it shows changed since the last drawing.
func (l *Line) draw() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.have || l.done || len(l.pending) > 0 {
		return
	}
	now := l.now()
	f := frame{s: l.cur, elapsed: now.Sub(l.start), inPhase: now.Sub(l.phase.at), sinceDone: now.Sub(l.phase.doneAt), doneBase: l.phase.done, countBase: l.phase.count, barLimit: l.phase.bar}
	text, bw := layout(f, l.width())
	if bw > 0 {
		l.phase.bar = bw
	}
	if text == l.shown {
		return
	}
	io.WriteString(l.w, "\r"+text+eraseLine)
	l.shown = text
}

// eraseLine erases from the cursor to the end of the line (ANSI EL).
const eraseLine = "\x1b[K"

// clear erases the line from the terminal; l.mu is held.
func (l *Line) clear() {
	if l.shown != "" {
		io.WriteString(l.w, "\r"+eraseLine)
		l.shown = ""
	}
}

// Done clears the line and stops drawing it; later Updates show nothing.
// Call it before the command prints its own output. It may be called more
// than once.
func (l *Line) Done() {
	if !l.live {
		return
	}
	l.stopOnce.Do(func() {
		if l.stop != nil {
			close(l.stop)
			<-l.stopped
		}
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	l.clear()
	if len(l.pending) > 0 {
		l.w.Write(l.pending)
		l.pending = nil
	}
	l.done = true
}

// Writer returns a writer to the line's own writer for the command's
// messages while the line is drawn ("gate: redlock-gc-pause seed 2 ..."):
// each whole line written through it is printed above the status line,
// which is drawn again under it at the next tick. When the line does not
// draw, it is the line's writer itself.
func (l *Line) Writer() io.Writer {
	if !l.live {
		return l.w
	}
	return lineWriter{l}
}

// lineWriter writes whole lines above a status line.
type lineWriter struct{ l *Line }

func (w lineWriter) Write(p []byte) (int, error) {
	l := w.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return l.w.Write(p)
	}
	l.pending = append(l.pending, p...)
	end := bytes.LastIndexByte(l.pending, '\n')
	if end < 0 {
		return len(p), nil
	}
	l.clear()
	_, err := l.w.Write(l.pending[:end+1])
	l.pending = append(l.pending[:0], l.pending[end+1:]...)
	if len(l.pending) == 0 {
		l.pending = nil
	}
	return len(p), err
}
