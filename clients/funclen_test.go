package clients

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"testing"
)

// maxFuncLines is the most lines a function of this package may span, from
// its func keyword to its closing brace: an acquire, a declaration or a
// test is a sequence of named steps, each short enough to read at once.
const maxFuncLines = 80

// TestNoLongFunctions fails on any function or method of the package's
// files, tests included, longer than maxFuncLines.
func TestNoLongFunctions(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no Go files found: the test runs in the package's directory")
	}
	fset := token.NewFileSet()
	for _, path := range files {
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			from, to := fset.Position(fd.Pos()), fset.Position(fd.End())
			if n := to.Line - from.Line + 1; n > maxFuncLines {
				t.Errorf("%s:%d: %s is %d lines long, more than %d: split it into steps", path, from.Line, fd.Name.Name, n, maxFuncLines)
			}
		}
	}
}
