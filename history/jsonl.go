package history

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"time"
)

// ErrClosed is returned by Append after the Writer was closed.
var ErrClosed = errors.New("history: writer closed")

// FlushInterval is how often a Writer flushes its buffer while ops arrive.
const FlushInterval = time.Second

// Writer streams ops as JSON Lines, one op per line. It buffers its output,
// flushes it at least every FlushInterval from a background ticker and at
// Close, so a run that dies leaves a history readable up to its last complete
// line. It is a Sink and safe for concurrent use.
type Writer struct {
	mu     sync.Mutex
	w      *bufio.Writer
	closer io.Closer
	buf    []byte
	err    error
	closed bool
	done   chan struct{}
	wg     sync.WaitGroup
}

var _ Sink = (*Writer)(nil)

// NewWriter returns a Writer that writes to w. Close flushes but does not
// close w.
func NewWriter(w io.Writer) *Writer {
	return newWriter(w, nil)
}

// CreateFile creates (or truncates) the file at path and returns a Writer
// that owns it: Close flushes, syncs and closes the file.
func CreateFile(path string) (*Writer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	return newWriter(f, f), nil
}

func newWriter(w io.Writer, c io.Closer) *Writer {
	hw := &Writer{w: bufio.NewWriterSize(w, 256*1024), closer: c, done: make(chan struct{})}
	hw.wg.Add(1)
	go hw.tick()
	return hw
}

func (w *Writer) tick() {
	defer w.wg.Done()
	t := time.NewTicker(FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-w.done:
			return
		case <-t.C:
			w.mu.Lock()
			if !w.closed && w.err == nil {
				if err := w.w.Flush(); err != nil {
					w.err = fmt.Errorf("history: flush: %w", err)
				}
			}
			w.mu.Unlock()
		}
	}
}

// Append writes op as one line. It returns the first error the Writer has
// met, and ErrClosed after Close.
func (w *Writer) Append(op Op) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	if w.err != nil {
		return w.err
	}
	w.buf = append(AppendJSON(w.buf[:0], op), '\n')
	if _, err := w.w.Write(w.buf); err != nil {
		w.err = fmt.Errorf("history: write: %w", err)
	}
	return w.err
}

// Flush writes out everything buffered so far.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return w.err
	}
	if w.err == nil {
		if err := w.w.Flush(); err != nil {
			w.err = fmt.Errorf("history: flush: %w", err)
		}
	}
	return w.err
}

// Close stops the ticker, flushes, and closes the file the Writer owns. It
// returns the first error met by any write, flush or the close itself.
// Closing twice returns the same result.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return w.err
	}
	w.closed = true
	close(w.done)
	if w.err == nil {
		if err := w.w.Flush(); err != nil {
			w.err = fmt.Errorf("history: flush: %w", err)
		}
	}
	if w.closer != nil {
		if f, ok := w.closer.(*os.File); ok && w.err == nil {
			if err := f.Sync(); err != nil {
				w.err = fmt.Errorf("history: sync: %w", err)
			}
		}
		if err := w.closer.Close(); err != nil && w.err == nil {
			w.err = fmt.Errorf("history: close: %w", err)
		}
	}
	err := w.err
	w.mu.Unlock()
	w.wg.Wait()
	return err
}

// LineError reports a line of a history file that is not a valid op. Its
// message is one line: "history: <file>:<line>: <reason>".
type LineError struct {
	File string
	Line int // 1-based
	Err  error
}

func (e *LineError) Error() string {
	return fmt.Sprintf("history: %s:%d: %v", e.File, e.Line, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }

// ReadInfo describes what Read found besides the ops.
type ReadInfo struct {
	// Lines is the number of lines read, including blank lines and a left
	// out last line.
	Lines int
	// Truncated is set when the last line had no newline and did not parse
	// (a run that died mid-write); that line is left out.
	Truncated bool
}

// ReadFile reads the history at path; see Read.
func ReadFile(path string) (History, ReadInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, ReadInfo{}, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, ReadInfo{}, fmt.Errorf("history: %w", err)
	}
	if !st.Mode().IsRegular() {
		return Read(f, path)
	}
	return decodeAt(f, st.Size(), path)
}

// Read decodes a JSON Lines history from r; name is used in errors. Blank
// lines are skipped. A line that is not a valid op is a *LineError, except a
// last line without a trailing newline that does not parse: it is left out
// and ReadInfo.Truncated is set. Read does not check well-formedness; see
// Validate.
func Read(r io.Reader, name string) (History, ReadInfo, error) {
	if f, ok := r.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			if off, err := f.Seek(0, io.SeekCurrent); err == nil {
				return decodeAt(io.NewSectionReader(f, off, st.Size()-off), st.Size()-off, name)
			}
		}
	}
	var buf bytes.Buffer
	if l, ok := r.(interface{ Len() int }); ok {
		buf.Grow(l.Len() + 1)
	}
	if _, err := buf.ReadFrom(r); err != nil {
		return nil, ReadInfo{}, fmt.Errorf("history: %s: %w", name, err)
	}
	return decodeAt(bytes.NewReader(buf.Bytes()), int64(buf.Len()), name)
}

// part is one stretch of whole lines decoded by one goroutine.
type part struct {
	r         *io.SectionReader
	firstLine int // 1-based number of its first line
	slot      int // index in the result of its first op
	lines     int // lines in the stretch
	out       History
	n         int // ops decoded into out
	truncated bool
	err       error
}

// decodeAt decodes the size bytes of ra into one slice of the exact size:
// a first pass counts the lines, a second decodes them, both split over the
// available CPUs at line boundaries. Only the result and small buffers are
// allocated, which matters for million-op histories.
func decodeAt(ra io.ReaderAt, size int64, name string) (History, ReadInfo, error) {
	workers := int64(min(runtime.GOMAXPROCS(0), 8))
	if size < 1<<20 {
		workers = 1
	}
	var parts []*part
	start := int64(0)
	for w := int64(0); w < workers && start < size; w++ {
		end := size
		if w < workers-1 {
			e, err := nextLine(ra, start+(size-start)/(workers-w), size)
			if err != nil {
				return nil, ReadInfo{}, fmt.Errorf("history: %s: %w", name, err)
			}
			end = e
		}
		parts = append(parts, &part{r: io.NewSectionReader(ra, start, end-start)})
		start = end
	}
	var wg sync.WaitGroup
	errs := make([]error, len(parts))
	for i, p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = p.count()
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, ReadInfo{}, fmt.Errorf("history: %s: %w", name, err)
	}
	total := 0
	line := 1
	for _, p := range parts {
		p.firstLine, p.slot = line, total
		line += p.lines
		total += p.lines
	}
	h := make(History, total)
	for i, p := range parts {
		p.out = h[p.slot : p.slot+p.lines]
		last := i == len(parts)-1
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.decode(name, last)
		}()
	}
	wg.Wait()
	var info ReadInfo
	n := 0
	for _, p := range parts {
		info.Lines += p.lines
		if p.err != nil {
			return nil, info, p.err
		}
		if n != p.slot {
			copy(h[n:], p.out[:p.n])
		}
		n += p.n
		info.Truncated = info.Truncated || p.truncated
	}
	clear(h[n:])
	return h[:n:n], info, nil
}

// nextLine returns the offset just after the first newline at or after off,
// or size when there is none.
func nextLine(ra io.ReaderAt, off, size int64) (int64, error) {
	buf := make([]byte, 4096)
	for off < size {
		n, err := ra.ReadAt(buf, off)
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			return off + int64(i) + 1, nil
		}
		off += int64(n)
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	return size, nil
}

// count counts the stretch's lines; a last line without a newline counts.
func (p *part) count() error {
	buf := make([]byte, 256*1024)
	r := io.NewSectionReader(p.r, 0, p.r.Size())
	last := byte('\n')
	for {
		n, err := r.Read(buf)
		if n > 0 {
			p.lines += bytes.Count(buf[:n], []byte{'\n'})
			last = buf[n-1]
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if last != '\n' {
		p.lines++
	}
	return nil
}

func (p *part) decode(name string, last bool) {
	var d decoder
	br := bufio.NewReaderSize(p.r, 256*1024)
	var long []byte
	for lineNo := 0; lineNo < p.lines; lineNo++ {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long[:0], line...)
			for err == bufio.ErrBufferFull {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err != nil && err != io.EOF {
			p.err = fmt.Errorf("history: %s: %w", name, err)
			return
		}
		complete := len(line) > 0 && line[len(line)-1] == '\n'
		body := bytes.TrimRight(line, "\r\n")
		if len(bytes.TrimSpace(body)) == 0 {
			continue
		}
		op, derr := d.decode(body)
		if derr != nil {
			if !complete && last {
				p.truncated = true
				return
			}
			p.err = &LineError{File: name, Line: p.firstLine + lineNo, Err: derr}
			return
		}
		p.out[p.n] = op
		p.n++
	}
}
