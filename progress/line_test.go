package progress

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// fakeClock is a clock that moves only when told.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

// newTestLine returns a line drawn on a buffer 80 columns wide, with a
// clock of its own.
func newTestLine() (*Line, *bytes.Buffer, *fakeClock) {
	var buf bytes.Buffer
	clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	return newLine(&buf, clock.now, func() int { return 80 }), &buf, clock
}

// takeOutput returns what was written to buf since the last call.
func takeOutput(buf *bytes.Buffer) string {
	s := buf.String()
	buf.Reset()
	return s
}

// TestLineRedrawsInPlace draws a line several times: each drawing goes
// back to the start of the line and erases what the last left, a drawing
// that would show the same text writes nothing, and Done erases the line
// and ends the drawing.
func TestLineRedrawsInPlace(t *testing.T) {
	l, buf, clock := newTestLine()
	l.draw()
	if got := takeOutput(buf); got != "" {
		t.Fatalf("a line with no status drew %q", got)
	}
	l.Update(Status{Phase: "reading", Count: 10, CountUnit: "ops"})
	l.draw()
	if got, want := takeOutput(buf), "\r   reading  10 ops  0:00 elapsed\x1b[K"; got != want {
		t.Fatalf("first drawing %q, want %q", got, want)
	}
	l.draw()
	if got := takeOutput(buf); got != "" {
		t.Fatalf("the same text drawn again: %q", got)
	}
	clock.advance(2 * time.Second)
	l.Update(Status{Phase: "reading", Count: 1010, CountUnit: "ops"})
	l.draw()
	if got, want := takeOutput(buf), "\r   reading  1,010 ops (500/s)  0:02 elapsed\x1b[K"; got != want {
		t.Fatalf("second drawing %q, want %q", got, want)
	}
	clock.advance(time.Second)
	l.Update(Status{Phase: "deciding", Count: 1010, CountUnit: "ops"})
	l.draw()
	if got, want := takeOutput(buf), "\r  deciding  1,010 ops  0:03 elapsed\x1b[K"; got != want {
		t.Fatalf("a new phase: %q, want %q (its rate measured from its own start)", got, want)
	}
	l.Done()
	if got, want := takeOutput(buf), "\r\x1b[K"; got != want {
		t.Fatalf("Done wrote %q, want %q", got, want)
	}
	l.Update(Status{Phase: "late"})
	l.draw()
	l.Done()
	if got := takeOutput(buf); got != "" {
		t.Fatalf("a line done drew %q", got)
	}
}

// TestLineWriterPrintsAboveTheLine writes messages through Writer while
// the line is drawn: each whole line is printed after the status line is
// erased, the status line is drawn again under it, and a line without its
// newline yet is held back until it has one (or until Done).
func TestLineWriterPrintsAboveTheLine(t *testing.T) {
	l, buf, _ := newTestLine()
	w := l.Writer()
	l.Update(Status{Phase: "gate", Done: 1, Total: 4, Unit: "runs"})
	l.draw()
	drawn := takeOutput(buf)
	if !strings.HasPrefix(drawn, "\r      gate [") {
		t.Fatalf("drew %q", drawn)
	}
	io.WriteString(w, "gate: a seed 2 ...\n")
	if got, want := takeOutput(buf), "\r\x1b[Kgate: a seed 2 ...\n"; got != want {
		t.Fatalf("message written as %q, want %q", got, want)
	}
	l.draw()
	if got := takeOutput(buf); got != drawn {
		t.Fatalf("after the message the line was drawn as %q, want %q again", got, drawn)
	}
	io.WriteString(w, "gate: b")
	l.draw()
	if got := takeOutput(buf); got != "" {
		t.Fatalf("a message without its newline let through %q", got)
	}
	io.WriteString(w, " seed 3 ...\nhalf")
	if got, want := takeOutput(buf), "\r\x1b[Kgate: b seed 3 ...\n"; got != want {
		t.Fatalf("wrote %q, want %q", got, want)
	}
	l.Done()
	if got, want := takeOutput(buf), "half"; got != want {
		t.Fatalf("Done wrote %q, want the part held back, %q", got, want)
	}
	io.WriteString(w, "after\n")
	if got, want := takeOutput(buf), "after\n"; got != want {
		t.Fatalf("after Done the writer wrote %q, want %q", got, want)
	}
}

// TestNothingOnAPipe makes lines on a pipe, quiet or not: they do not
// draw, write nothing of their own, and their Writer writes to the pipe
// unchanged.
func TestNothingOnAPipe(t *testing.T) {
	tests := []struct {
		name string
		opts []Option
	}{
		{"a pipe", nil},
		{"a pipe, quiet", []Option{Quiet(true)}},
		{"a pipe, not quiet", []Option{Quiet(false)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			l := New(w, tc.opts...)
			if l.Live() {
				t.Errorf("a line on a pipe is live")
			}
			if l.Writer() != io.Writer(w) {
				t.Errorf("the Writer of a line on a pipe is not the pipe")
			}
			l.Update(Status{Phase: "reading", Done: 1, Total: 2, Unit: Bytes, Count: 3, CountUnit: "ops"})
			l.draw()
			io.WriteString(l.Writer(), "a message\n")
			l.Done()
			w.Close()
			got, err := io.ReadAll(r)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != "a message\n" {
				t.Fatalf("the pipe got %q, want the message alone", got)
			}
		})
	}
}

// TestLineCountsDownBetweenUnits updates a line of runs: the time left
// is measured from the last time a run finished, so that it counts down
// while the next goes on, however often the same count is told again.
func TestLineCountsDownBetweenUnits(t *testing.T) {
	l, buf, clock := newTestLine()
	l.Update(Status{Phase: "gate", Done: 0, Total: 4, Unit: "runs"})
	clock.advance(10 * time.Second)
	l.Update(Status{Phase: "gate", Done: 1, Total: 4, Unit: "runs"})
	clock.advance(5 * time.Second)
	l.Update(Status{Phase: "gate", Done: 1, Total: 4, Unit: "runs", Note: "seed 2: running"})
	l.draw()
	if got, want := takeOutput(buf), "\r      gate [=>        ]  25%  1/4 runs  0:15 elapsed  ETA 0:25  seed 2: running\x1b[K"; got != want {
		t.Fatalf("drew %q, want %q", got, want)
	}
}

// TestLineBarOnlyNarrowsInAPhase draws a line whose note grows, then
// shrinks: the bar narrows to make room for the longer note and stays that
// narrow, until a new phase.
func TestLineBarOnlyNarrowsInAPhase(t *testing.T) {
	l, buf, _ := newTestLine()
	steps := []struct {
		phase, note, want string
	}{
		{"gate", "a", "\r      gate [=========>               ]  40%  2/5 runs  0:00 elapsed  a\x1b[K"},
		{"gate", "a longer note", "\r      gate [=======>              ]  40%  2/5 runs  0:00 elapsed  a longer note\x1b[K"},
		{"gate", "a", "\r      gate [=======>              ]  40%  2/5 runs  0:00 elapsed  a\x1b[K"},
		{"hunt", "a", "\r      hunt [=========>               ]  40%  2/5 runs  0:00 elapsed  a\x1b[K"},
	}
	for _, st := range steps {
		l.Update(Status{Phase: st.phase, Done: 2, Total: 5, Unit: "runs", Note: st.note})
		l.draw()
		if got := takeOutput(buf); got != st.want {
			t.Fatalf("%s with the note %q: drew %q, want %q", st.phase, st.note, got, st.want)
		}
	}
}
