package coderules

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestNoLongFunctions fails on every function declaration of the
// repository, tests and examples included, longer than MaxFuncLines. The
// repository's root is this package's parent directory.
func TestNoLongFunctions(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	files, err := GoFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no Go files under %s: the test must run in its package's directory, one below the repository's root", root)
	}
	long, err := LongFunctions(root, files, MaxFuncLines)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range long {
		t.Error(f)
	}
}

// TestLongFunctionsReportsOneLineOver checks the rule itself on
// testdata/lengths: the two 81-line declarations, a function and a method,
// are reported, with their lengths and lines, and the 80-line one is not.
func TestLongFunctionsReportsOneLineOver(t *testing.T) {
	root := filepath.Join("testdata", "lengths")
	files, err := GoFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"lengths.go"}; !reflect.DeepEqual(files, want) {
		t.Fatalf("GoFiles(%s) = %v, want %v", root, files, want)
	}
	long, err := LongFunctions(root, files, MaxFuncLines)
	if err != nil {
		t.Fatal(err)
	}
	want := []LongFunction{
		{File: "lengths.go", Line: 89, Name: "eightyOne", Lines: 81},
		{File: "lengths.go", Line: 175, Name: "counter.longMethod", Lines: 81},
	}
	if !reflect.DeepEqual(long, want) {
		t.Errorf("LongFunctions = %v, want %v", long, want)
	}
	wantMsg := "lengths.go:89: eightyOne is 81 lines long, more than 80: split it into steps"
	if len(long) > 0 && long[0].String() != wantMsg {
		t.Errorf("the finding reads %q, want %q", long[0].String(), wantMsg)
	}
}

// TestGoFilesSkips checks which directories the walk leaves out: .git and
// testdata anywhere, store and build only at the root.
func TestGoFilesSkips(t *testing.T) {
	root := t.TempDir()
	for _, rel := range []string{
		"a.go", "notgo.txt", "pkg/b.go", "pkg/testdata/c.go", ".git/d.go",
		"store/e.go", "build/f.go", "pkg/build/g.go", "pkg/store/h.go",
	} {
		writeFile(t, filepath.Join(root, rel))
	}
	files, err := GoFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a.go", "pkg/b.go", "pkg/build/g.go", "pkg/store/h.go"}
	if !reflect.DeepEqual(files, want) {
		t.Errorf("GoFiles = %v, want %v", files, want)
	}
}

// writeFile writes an empty Go package clause to path, making its
// directories.
func writeFile(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("package p\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}
