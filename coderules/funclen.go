package coderules

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
)

// MaxFuncLines is the most lines a function declaration may span, from its
// func keyword to its closing brace, tests included: a function is a
// sequence of named steps, each short enough to read at once.
const MaxFuncLines = 80

// skippedDirs are the directories under the repository root that hold no
// code of ours: the store of runs and the build's outputs.
var skippedDirs = map[string]bool{"store": true, "build": true}

// LongFunction is a function declaration longer than the limit it was
// checked against.
type LongFunction struct {
	File  string // the file's path, relative to the root walked
	Line  int    // the line of its func keyword
	Name  string // its name; a method's is Type.Name
	Lines int    // the lines it spans, func keyword to closing brace
}

// String is the finding as the rule reports it.
func (f LongFunction) String() string {
	return fmt.Sprintf("%s:%d: %s is %d lines long, more than %d: split it into steps",
		f.File, f.Line, f.Name, f.Lines, MaxFuncLines)
}

// GoFiles is every .go file under root, as paths relative to it, sorted,
// skipping .git and every testdata directory, and store and build at the
// root.
func GoFiles(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if rel != "." && (name == ".git" || name == "testdata" || (skippedDirs[name] && filepath.Dir(rel) == ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if filepath.Ext(path) == ".go" {
			files = append(files, rel)
		}
		return nil
	})
	sort.Strings(files)
	return files, err
}

// LongFunctions parses each of files (paths relative to root) and returns
// every function declaration in them that spans more than max lines, in
// file and line order. A file that does not parse is an error.
func LongFunctions(root string, files []string, max int) ([]LongFunction, error) {
	var long []LongFunction
	fset := token.NewFileSet()
	for _, rel := range files {
		f, err := parser.ParseFile(fset, filepath.Join(root, rel), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			from, to := fset.Position(fd.Pos()), fset.Position(fd.End())
			if n := to.Line - from.Line + 1; n > max {
				long = append(long, LongFunction{File: rel, Line: from.Line, Name: funcName(fd), Lines: n})
			}
		}
	}
	return long, nil
}

// funcName is a function's name, or a method's as Type.Name.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	for {
		switch e := t.(type) {
		case *ast.StarExpr:
			t = e.X
		case *ast.IndexExpr:
			t = e.X
		case *ast.IndexListExpr:
			t = e.X
		case *ast.Ident:
			return e.Name + "." + fd.Name.Name
		default:
			return fd.Name.Name
		}
	}
}
