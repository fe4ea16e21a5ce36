package coderules

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestNoLongFiles fails on every Go file of the repository, tests and
// examples included, longer than MaxFileLines.
func TestNoLongFiles(t *testing.T) {
	root, files := repositoryFiles(t)
	long, err := LongFiles(root, files, MaxFileLines)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range long {
		t.Error(f)
	}
}

// TestLongFilesReportsOneLineOver checks the rule itself: of files of
// MaxFileLines lines, one more, and one more without its last newline, the
// last two are reported with their lengths.
func TestLongFilesReportsOneLineOver(t *testing.T) {
	root := t.TempDir()
	write := func(name string, lines int, lastNewline bool) {
		text := strings.Repeat("//\n", lines)
		if !lastNewline {
			text = strings.TrimSuffix(text, "\n")
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("at.go", MaxFileLines, true)
	write("over.go", MaxFileLines+1, true)
	write("unterminated.go", MaxFileLines+1, false)
	long, err := LongFiles(root, []string{"at.go", "over.go", "unterminated.go"}, MaxFileLines)
	if err != nil {
		t.Fatal(err)
	}
	want := []LongFile{{File: "over.go", Lines: MaxFileLines + 1}, {File: "unterminated.go", Lines: MaxFileLines + 1}}
	if !reflect.DeepEqual(long, want) {
		t.Errorf("LongFiles = %v, want %v", long, want)
	}
	if msg := "over.go is 1001 lines long, more than 1000: split it by concern"; len(long) > 0 && long[0].String() != msg {
		t.Errorf("the finding reads %q, want %q", long[0].String(), msg)
	}
}
