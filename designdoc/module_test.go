package designdoc

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// modulePath is the module's path, the prefix of every package of ours.
const modulePath = "github.com/jepsen-lite/jepsen-lite"

// root is the module's root, relative to this package's directory.
const root = ".."

// pkg is one package of the module as `go list -json` gives it.
type pkg struct {
	ImportPath string
	Name       string
	Dir        string
	GoFiles    []string
	CgoFiles   []string
	// TestGoFiles and XTestGoFiles are the package's test files, whose
	// tests the docs may name.
	TestGoFiles  []string
	XTestGoFiles []string
	Imports      []string
	Deps         []string
}

// rel is the package's path inside the module ("checker/anomaly").
func (p pkg) rel() string {
	return strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, modulePath), "/")
}

// ours is the module-relative paths of the package's non-test imports of
// our own module.
func (p pkg) ours() []string {
	var out []string
	for _, imp := range p.Imports {
		if strings.HasPrefix(imp, modulePath+"/") {
			out = append(out, strings.TrimPrefix(imp, modulePath+"/"))
		}
	}
	return out
}

var (
	loadOnce sync.Once
	loaded   []pkg
	loadErr  error
)

// packages lists the module's packages with `go list -json ./...`, once.
func packages(t *testing.T) []pkg {
	t.Helper()
	loadOnce.Do(func() { loaded, loadErr = goList() })
	if loadErr != nil {
		t.Fatal(loadErr)
	}
	return loaded
}

// goBinary is the go command: the one on PATH, else the toolchain's own.
func goBinary() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

// nestedModules are the modules of ours in directories of the main module
// (each with its go.mod), whose packages §1's table lists too: lockapi,
// which a user's module requires in place of the harness.
var nestedModules = []string{"lockapi"}

// goList runs `go list -json` of the module's packages and of the nested
// modules' at the module's root and decodes its stream of packages.
func goList() ([]pkg, error) {
	args := []string{"list", "-json", "./..."}
	for _, m := range nestedModules {
		args = append(args, modulePath+"/"+m+"/...")
	}
	cmd := exec.Command(goBinary(), args...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, errors.New("go list: " + err.Error() + ": " + stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			return pkgs, nil
		} else if err != nil {
			return nil, err
		}
		pkgs = append(pkgs, p)
	}
}

// parsed is one non-test file of a package, parsed.
type parsed struct {
	pkg  pkg
	path string
	file *ast.File
}

// files parses every non-test Go file of the given packages.
func files(t *testing.T, pkgs []pkg) []parsed {
	t.Helper()
	return parse(t, pkgs, func(p pkg) []string { return append(append([]string{}, p.GoFiles...), p.CgoFiles...) })
}

// filesWithTests parses every Go file of the given packages, their test
// files included.
func filesWithTests(t *testing.T, pkgs []pkg) []parsed {
	t.Helper()
	return parse(t, pkgs, func(p pkg) []string {
		return append(append(append(append([]string{}, p.GoFiles...), p.CgoFiles...), p.TestGoFiles...), p.XTestGoFiles...)
	})
}

// parse parses the files of each package that names gives.
func parse(t *testing.T, pkgs []pkg, names func(pkg) []string) []parsed {
	t.Helper()
	fset := token.NewFileSet()
	var out []parsed
	for _, p := range pkgs {
		for _, name := range names(p) {
			path := filepath.Join(p.Dir, name)
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, parsed{pkg: p, path: path, file: f})
		}
	}
	return out
}

// design reads docs/design.md.
func design(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docs", "design.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
