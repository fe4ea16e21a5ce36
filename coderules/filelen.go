package coderules

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
)

// MaxFileLines is the most lines a Go file may have, tests included: a file
// that grows past it holds two concerns, and is split by concern.
const MaxFileLines = 1000

// LongFile is a Go file longer than the limit it was checked against.
type LongFile struct {
	File  string // the file's path, relative to the root walked
	Lines int    // its lines
}

// String is the finding as the rule reports it.
func (f LongFile) String() string {
	return fmt.Sprintf("%s is %d lines long, more than %d: split it by concern", f.File, f.Lines, MaxFileLines)
}

// LongFiles reads each of files (paths relative to root) and returns every
// one with more than max lines, in the order given. A last line without a
// newline counts.
func LongFiles(root string, files []string, max int) ([]LongFile, error) {
	var long []LongFile
	for _, rel := range files {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			return nil, err
		}
		n := bytes.Count(b, []byte("\n"))
		if len(b) > 0 && b[len(b)-1] != '\n' {
			n++
		}
		if n > max {
			long = append(long, LongFile{File: rel, Lines: n})
		}
	}
	return long, nil
}
