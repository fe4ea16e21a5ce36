package history

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// scanAll reads every op of a Scanner over in, and checks each against a
// Validator too.
func scanAll(t *testing.T, in, name string) (History, ReadInfo, error, error) {
	t.Helper()
	sc := NewScanner(strings.NewReader(in), name)
	var h History
	var v Validator
	var verr error
	for sc.Scan() {
		op := sc.Op()
		h = append(h, op)
		if verr == nil {
			verr = v.Add(&op)
		}
	}
	return h, sc.Info(), sc.Err(), verr
}

// savedHistories lists every history file (*.jsonl but a fault schedule)
// stored in the repository. The directories that .gitignore leaves out
// (a run's build outputs and stores, which may hold an hour's soak) are
// not the repository's and are not walked.
func savedHistories(t *testing.T) []string {
	t.Helper()
	unsaved := map[string]bool{"../bin": true, "../build": true, "../store": true}
	var files []string
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != ".." || unsaved[filepath.ToSlash(path)]) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".jsonl") && d.Name() != "nemesis.jsonl" {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 100 {
		t.Fatalf("found %d saved histories, want the repository's (over 100)", len(files))
	}
	return files
}

// TestScannerReadsAsRead checks, on every history stored in the
// repository, that a Scanner reads the ops, the line count, the
// truncation and the error that Read does, and that a Validator fed op by
// op returns Validate's error.
func TestScannerReadsAsRead(t *testing.T) {
	for _, path := range savedHistories(t) {
		t.Run(filepath.ToSlash(path), func(t *testing.T) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want, wantInfo, wantErr := ReadFile(path)
			got, gotInfo, gotErr, verr := scanAll(t, string(b), path)
			if (wantErr == nil) != (gotErr == nil) || wantErr != nil && wantErr.Error() != gotErr.Error() {
				t.Fatalf("Scanner's error %v, Read's %v", gotErr, wantErr)
			}
			if wantErr != nil {
				return
			}
			if len(want) != len(got) || len(got) > 0 && !reflect.DeepEqual(want, got) || gotInfo != wantInfo {
				t.Fatalf("Scanner read %d ops (%+v), Read %d (%+v)", len(got), gotInfo, len(want), wantInfo)
			}
			if werr := Validate(want); (werr == nil) != (verr == nil) || werr != nil && werr.Error() != verr.Error() {
				t.Fatalf("Validator says %v, Validate %v", verr, werr)
			}
		})
	}
}

// TestScannerEdges checks the Scanner on the edges of the language: blank
// lines, a line longer than its buffer, a truncated last line, a bad line
// in the middle and a bad complete last line.
func TestScannerEdges(t *testing.T) {
	op := func(i int, e string) string {
		return string(AppendJSON(nil, Op{Index: i, Time: 1, Process: 0, Type: Info, F: FRead, Error: e})) + "\n"
	}
	long := strings.Repeat("x", 600*1024)
	tests := []struct {
		name      string
		in        string
		ops       int
		lines     int
		truncated bool
		badLine   int
	}{
		{"empty", "", 0, 0, false, 0},
		{"blank lines", "\n  \n" + op(0, "") + "\n", 1, 4, false, 0},
		{"a long line", op(0, long) + op(1, ""), 2, 2, false, 0},
		{"a truncated last line", op(0, "") + `{"index":1,"ti`, 1, 2, true, 0},
		{"a last line without newline that parses", op(0, "") + strings.TrimSuffix(op(1, ""), "\n"), 2, 2, false, 0},
		{"a bad line in the middle", op(0, "") + "{\n" + op(1, ""), 0, 0, false, 2},
		{"a bad complete last line", op(0, "") + "nope\n", 0, 0, false, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, info, err, _ := scanAll(t, tc.in, "h.jsonl")
			want, wantInfo, wantErr := Read(strings.NewReader(tc.in), "h.jsonl")
			if tc.badLine > 0 {
				var le *LineError
				if !errors.As(err, &le) || le.Line != tc.badLine || wantErr == nil || err.Error() != wantErr.Error() {
					t.Fatalf("err %v, want a LineError at line %d as Read's %v", err, tc.badLine, wantErr)
				}
				return
			}
			if err != nil || len(h) != tc.ops || info.Lines != tc.lines || info.Truncated != tc.truncated {
				t.Fatalf("%d ops, %+v, %v; want %d ops, %d lines, truncated %v", len(h), info, err, tc.ops, tc.lines, tc.truncated)
			}
			if info != wantInfo || len(want) != len(h) || len(h) > 0 && !reflect.DeepEqual(want, h) {
				t.Fatalf("Scanner %d ops %+v, Read %d ops %+v", len(h), info, len(want), wantInfo)
			}
		})
	}
}

// BenchmarkScanFile1M reads a 1M-line history file op by op, checking
// each op's well-formedness: what a streaming check pays before any
// checker, in memory that does not grow with the file.
func BenchmarkScanFile1M(b *testing.B) {
	var lines []byte
	for i := 0; i < 1_000_000; i++ {
		op := Op{Index: i, Time: time.Duration(i) * time.Microsecond, Process: i / 2 % 16, Client: i / 2 % 16, Type: Invoke, F: FWrite, Key: "k" + strconv.Itoa(i/2%4), Token: uint64(i), Value: IntValue(int64(i))}
		if i%2 == 1 {
			op.Type, op.Applied = OK, op.Time
		}
		lines = append(AppendJSON(lines, op), '\n')
	}
	path := filepath.Join(b.TempDir(), "history.jsonl")
	if err := os.WriteFile(path, lines, 0o644); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		sc, closeFile, err := ScanFile(path)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		var v Validator
		for sc.Scan() {
			op := sc.Op()
			if err := v.Add(&op); err != nil {
				b.Fatal(err)
			}
			n++
		}
		closeFile()
		if sc.Err() != nil || n != 1_000_000 {
			b.Fatal(sc.Err(), n)
		}
	}
}
