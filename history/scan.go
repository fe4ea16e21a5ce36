package history

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
)

// Scanner reads a history op by op, in recording order, holding one line
// at a time: its memory does not grow with the history's length (only with
// its longest line). It reads the same language as Read and reports the
// same errors: blank lines are skipped, a line that is not a valid op is a
// *LineError, except a last line without a trailing newline that does not
// parse, which is left out (Info().Truncated).
//
// An op's Value may share memory with the values of the ops decoded before
// and after it; it is never overwritten, so an op may be kept for as long as
// the caller likes.
type Scanner struct {
	br   *bufio.Reader
	name string
	d    decoder
	op   Op
	err  error
	info ReadInfo
	long []byte
	done bool
}

// NewScanner returns a Scanner that reads from r; name is used in errors.
func NewScanner(r io.Reader, name string) *Scanner {
	return &Scanner{br: bufio.NewReaderSize(r, 256*1024), name: name}
}

// ScanFile opens the history at path and returns a Scanner over it and the
// function that closes the file.
func ScanFile(path string) (*Scanner, func() error, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("history: %w", err)
	}
	return NewScanner(f, path), f.Close, nil
}

// Scan advances to the next op, which Op then returns. It returns false at
// the end of the history or at the first error (see Err).
func (s *Scanner) Scan() bool {
	for !s.done {
		line, err := s.br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			s.long = append(s.long[:0], line...)
			for err == bufio.ErrBufferFull {
				line, err = s.br.ReadSlice('\n')
				s.long = append(s.long, line...)
			}
			line = s.long
		}
		if err != nil && err != io.EOF {
			s.err, s.done = fmt.Errorf("history: %s: %w", s.name, err), true
			return false
		}
		if err == io.EOF {
			s.done = true
			if len(line) == 0 {
				return false
			}
		}
		s.info.Lines++
		complete := line[len(line)-1] == '\n'
		body := bytes.TrimRight(line, "\r\n")
		if len(bytes.TrimSpace(body)) == 0 {
			continue
		}
		op, derr := s.d.decode(body)
		if derr != nil {
			s.done = true
			if !complete {
				s.info.Truncated = true
				return false
			}
			s.err = &LineError{File: s.name, Line: s.info.Lines, Err: derr}
			return false
		}
		s.op = op
		return true
	}
	return false
}

// Op returns the op the last successful Scan read.
func (s *Scanner) Op() Op { return s.op }

// Err returns the first error met, nil at a clean end of the history.
func (s *Scanner) Err() error { return s.err }

// Info returns what the Scanner found besides the ops so far; once Scan has
// returned false without an error, it is what Read returns for the same
// input.
func (s *Scanner) Info() ReadInfo { return s.info }
