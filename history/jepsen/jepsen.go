// Package jepsen reads Jepsen and Knossos EDN histories of a lock workload into a history.History.
//
// A Jepsen history is a sequence of op maps such as
//
//	{:type :invoke, :f :acquire, :value nil, :process 0, :time 12345, :index 0}
//
// either one after another (Jepsen's history.edn, one map per line) or inside
// one top-level vector or list (Knossos, and histories pasted into tests).
// The EDN is read with olympos.io/encoding/edn; this package only frames the
// top-level sequence, so that each op can be named by its position and line.
//
// The conversion rules (process numbers, workers, keys, tokens, times,
// values, errors, the nemesis's fault and heal names) are those of
// docs/history.md §5, "Importing Jepsen histories"; an import is read as
// format version 1.
package jepsen

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	"olympos.io/encoding/edn"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// DefaultKey is the key of the lock ops (acquire, release, renew,
// lease-lost) of an op map that has no :key: Jepsen's lock workloads have a
// single lock.
const DefaultKey = "lock"

// HistoryFile is the name of the history in a Jepsen store directory;
// ReadFile reads it when given a directory.
const HistoryFile = "history.edn"

// Options configure the conversion.
type Options struct {
	// TTL is set as the ttl of every acquire invoke: the lease every grant
	// got (a Jepsen history does not record it). Zero leaves it out, and the
	// checkers then take every grant for a session lock that never expires.
	TTL time.Duration
}

// Error is an EDN history that cannot be read or converted, or whose
// conversion is not a well-formed history (then Err is the
// *history.OpError, and errors.Is(err, history.ErrMalformed) holds).
type Error struct {
	File string // the name given to Read, or the path given to ReadFile
	Op   int    // 1-based position of the op in the file; 0 when no op is to blame
	Line int    // 1-based line where that op starts (or where the file broke off); 0 when unknown
	Err  error
}

func (e *Error) Error() string {
	msg := e.Err.Error()
	var oe *history.OpError
	if errors.As(e.Err, &oe) {
		msg = oe.Err.Error() // its line and index are those of the converted history
	}
	var b strings.Builder
	b.WriteString("jepsen: ")
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Op > 0 {
		fmt.Fprintf(&b, ": op %d", e.Op)
	}
	b.WriteString(": ")
	b.WriteString(msg)
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// ReadFile reads the EDN history at path (a directory stands for its
// history.edn, as in a Jepsen store); see Read. A file that cannot be read
// is an error wrapping the os error.
func ReadFile(path string, opts Options) (history.History, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, HistoryFile)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("jepsen: %w", err)
	}
	return convert(data, path, opts)
}

// Read reads an EDN history from r and converts it; name is used in errors.
// The result is well-formed (history.Validate); every error is an *Error
// naming the op to blame.
func Read(r io.Reader, name string, opts Options) (history.History, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, &Error{File: name, Err: err}
	}
	return convert(data, name, opts)
}

// source frames the top-level sequence of op maps of an EDN text and knows
// the line of every offset in it.
type source struct {
	data  []byte
	src   *bytes.Reader
	br    *bufio.Reader
	dec   *edn.Decoder
	off   int // the offset line was last asked about
	lines int // newlines before off
}

func newSource(data []byte) *source {
	s := &source{data: data, src: bytes.NewReader(data)}
	// edn.NewDecoder uses a *bufio.Reader of at least 4 KiB as it is, so
	// the decoder and the framing below read one stream, and the offset the
	// decoder has reached is known.
	s.br = bufio.NewReaderSize(s.src, 64*1024)
	s.dec = edn.NewDecoder(s.br)
	return s
}

// offset is how many bytes of the text have been consumed.
func (s *source) offset() int { return len(s.data) - s.src.Len() - s.br.Buffered() }

// line returns the 1-based line of offset off (offsets are asked for in
// increasing order, mostly).
func (s *source) line(off int) int {
	off = min(max(off, 0), len(s.data))
	if off < s.off {
		s.off, s.lines = 0, 0
	}
	s.lines += bytes.Count(s.data[s.off:off], []byte{'\n'})
	s.off = off
	return s.lines + 1
}

// skip consumes whitespace, commas and ; comments, and returns the next
// rune without consuming it; io.EOF at the end of the text.
func (s *source) skip() (rune, error) {
	for {
		r, _, err := s.br.ReadRune()
		if err != nil {
			return 0, err
		}
		switch {
		case unicode.IsSpace(r) || r == ',':
		case r == ';':
			if _, err := s.br.ReadString('\n'); err != nil {
				return 0, err
			}
		default:
			return r, s.br.UnreadRune()
		}
	}
}

// opText is one op map as read: its fields' values by key, its EDN text as
// written, and the line where it starts.
type opText struct {
	fields map[any]any
	text   []byte
	line   int
	raw    map[any]edn.RawMessage // the fields' EDN text, read from text when first asked for
}

// keys are the keys a field called name may be written with: a keyword, or
// leniently a string or a symbol.
func keys(name string) [3]any { return [3]any{edn.Keyword(name), name, edn.Symbol(name)} }

// field returns the value of the field called name.
func (o *opText) field(name string) (any, bool) {
	for _, k := range keys(name) {
		if v, ok := o.fields[k]; ok {
			return v, true
		}
	}
	return nil, false
}

// rawField returns the EDN text of the field called name as written, on one
// line.
func (o *opText) rawField(name string) string {
	if o.raw == nil {
		o.raw = map[any]edn.RawMessage{}
		text := bytes.TrimSpace(o.text)
		if len(text) > 0 && text[0] == '#' { // a record: its map follows the tag
			if i := bytes.IndexByte(text, '{'); i > 0 {
				text = text[i:]
			}
		}
		_ = edn.Unmarshal(text, &o.raw) // it has been read once already
	}
	for _, k := range keys(name) {
		if v, ok := o.raw[k]; ok {
			return oneLine(v)
		}
	}
	return ""
}

// oneLine returns an EDN text with its runs of white space made one space.
func oneLine(text []byte) string {
	return strings.Join(strings.Fields(string(text)), " ")
}

// read hands the op maps of the text to each, in order, and stops at the
// first error, of the text or of each.
func (s *source) read(name string, each func(*opText) error) error {
	r, err := s.skip()
	if err == io.EOF {
		return nil
	}
	if err != nil {
		return &Error{File: name, Err: err}
	}
	opener, closer := r, rune(0)
	switch r {
	case '[':
		closer = ']'
	case '(':
		closer = ')'
	}
	if closer != 0 {
		_, _, _ = s.br.ReadRune()
	}
	for n := 1; ; n++ {
		r, err := s.skip()
		if err == io.EOF {
			if closer != 0 {
				return &Error{File: name, Op: n, Line: s.line(len(s.data)),
					Err: fmt.Errorf("the history's top-level %c is never closed with %c", opener, closer)}
			}
			return nil
		}
		if err != nil {
			return &Error{File: name, Err: err}
		}
		if closer != 0 && r == closer {
			_, _, _ = s.br.ReadRune()
			if _, err := s.skip(); err != io.EOF {
				return &Error{File: name, Line: s.line(s.offset()),
					Err: fmt.Errorf("more text after the history's closing %c", closer)}
			}
			return nil
		}
		if b, err := s.br.Peek(2); err == nil && string(b) == "#_" {
			// a discarded op: the decoder reads it, and it is no op
			_, _ = s.br.Discard(2)
			line := s.line(s.offset())
			var skipped any
			if err := s.dec.Decode(&skipped); err != nil {
				return &Error{File: name, Op: n, Line: line, Err: fmt.Errorf("not valid EDN after #_: %w", err)}
			}
			n--
			continue
		}
		start := s.offset()
		line := s.line(start)
		var v any
		if err := s.dec.Decode(&v); err != nil {
			if at := s.line(s.offset()); at != line {
				err = fmt.Errorf("%w (at line %d)", err, at)
			}
			return &Error{File: name, Op: n, Line: line, Err: fmt.Errorf("not valid EDN: %w", err)}
		}
		o := &opText{text: s.data[start:s.offset()], line: line}
		switch v := v.(type) {
		case map[any]any:
			o.fields = v
		case edn.Tag: // a Clojure record printed with pr, such as #jepsen.history.Op{...}
			o.fields, _ = v.Value.(map[any]any)
		}
		if o.fields == nil {
			return &Error{File: name, Op: n, Line: line, Err: fmt.Errorf("not an op map: %s", abbrev(o.text))}
		}
		if err := each(o); err != nil {
			var e *Error
			if !errors.As(err, &e) {
				e = &Error{File: name, Err: err}
			}
			e.Op, e.Line = n, line
			return e
		}
	}
}

// abbrev returns an EDN text shortened for a message.
func abbrev(raw []byte) string {
	s := []rune(oneLine(raw))
	if len(s) > 60 {
		return string(s[:57]) + "..."
	}
	return string(s)
}
