package designdoc

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// snippet is one ```go block of a Markdown file: its text and the line of
// the file where the text starts.
type snippet struct {
	doc  string
	line int
	text string
}

// goSnippets is every ```go block of README.md and docs/*.md, in order.
func goSnippets(t *testing.T) []snippet {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []snippet
	for _, doc := range append([]string{filepath.Join(root, "README.md")}, docs...) {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, doc)
		out = append(out, fencedGo(rel, string(b))...)
	}
	return out
}

// fencedGo is the ```go blocks of text, a Markdown file named doc.
func fencedGo(doc, text string) []snippet {
	var out []snippet
	var cur *snippet
	for i, line := range strings.Split(text, "\n") {
		switch {
		case cur == nil && strings.TrimSpace(line) == "```go":
			cur = &snippet{doc: doc, line: i + 2}
		case cur != nil && strings.TrimSpace(line) == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		}
	}
	return out
}

// snippetImports are the packages a snippet may name without importing
// them, as a reader of the docs would: the standard library's few and the
// harness's public ones. A name not here is undefined, and the test says so.
var snippetImports = map[string]string{
	"context":   "context",
	"errors":    "errors",
	"fmt":       "fmt",
	"os":        "os",
	"filepath":  "path/filepath",
	"testing":   "testing",
	"time":      "time",
	"redis":     "github.com/redis/go-redis/v9",
	"clients":   "github.com/jepsen-lite/jepsen-lite/clients",
	"lockapi":   "github.com/jepsen-lite/jepsen-lite/lockapi",
	"cluster":   "github.com/jepsen-lite/jepsen-lite/cluster",
	"runner":    "github.com/jepsen-lite/jepsen-lite/runner",
	"scenarios": "github.com/jepsen-lite/jepsen-lite/scenarios",
	"hunt":      "github.com/jepsen-lite/jepsen-lite/hunt",
	"shrink":    "github.com/jepsen-lite/jepsen-lite/shrink",
	"reports":   "github.com/jepsen-lite/jepsen-lite/reports",
}

// snippetReadersCode declares the names the snippets leave to the reader's
// own code: their lock type, its constructor and its factory.
const snippetReadersCode = `
type myLock struct {
	rdb   *redis.Client
	owner string
}

func newMyLock(addr string) *myLock { return &myLock{rdb: redis.NewClient(&redis.Options{Addr: addr})} }

func (l *myLock) Acquire(ctx context.Context, key string, ttl time.Duration) (clients.Lease, error) {
	return clients.Lease{}, clients.ErrNotAcquired
}

func (l *myLock) Release(ctx context.Context, lease clients.Lease) error { return clients.ErrNotHeld }

func (l *myLock) Close() error { return l.rdb.Close() }

var _ clients.Locker = (*myLock)(nil)

var factory clients.Factory = func(ctx context.Context, t clients.Target) (clients.Locker, error) {
	return newMyLock(t.Endpoints[0].Addr), nil
}
`

// snippetSource is one Go file that holds every snippet: a block of
// declarations as it is, a block of statements as the body of a function
// given ctx and a clients.Target t, with each name it declares used once
// more (a reader's next line would use them). Line directives point the
// compiler's messages at the doc's own lines.
func snippetSource(t *testing.T, snippets []snippet) string {
	t.Helper()
	var body strings.Builder
	body.WriteString(snippetReadersCode)
	for i, s := range snippets {
		directive := fmt.Sprintf("//line %s:%d\n", s.doc, s.line)
		if _, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+s.text, 0); err == nil {
			body.WriteString("\n" + directive + s.text)
			continue
		}
		fn := fmt.Sprintf("func snippet%d(ctx context.Context, t clients.Target) {\n", i)
		f, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+fn+s.text+"}\n", 0)
		if err != nil {
			t.Errorf("%s:%d: the ```go block is neither declarations nor statements: %v", s.doc, s.line, err)
			continue
		}
		fmt.Fprintf(&body, "\n%s%s%s", fn, directive, s.text)
		for _, name := range declaredNames(f) {
			fmt.Fprintf(&body, "\t_ = %s\n", name)
		}
		body.WriteString("}\n")
	}
	return "package docsnippets\n\n" + importsFor(t, body.String()) + body.String()
}

// declaredNames is every name the statements at the top of f's one
// function declare, with := or var, sorted.
func declaredNames(f *ast.File) []string {
	seen := map[string]bool{}
	for _, st := range f.Decls[0].(*ast.FuncDecl).Body.List {
		switch st := st.(type) {
		case *ast.AssignStmt:
			if st.Tok == token.DEFINE {
				for _, e := range st.Lhs {
					if id, ok := e.(*ast.Ident); ok && id.Name != "_" {
						seen[id.Name] = true
					}
				}
			}
		case *ast.DeclStmt:
			if gd, ok := st.Decl.(*ast.GenDecl); ok && gd.Tok == token.VAR {
				for _, sp := range gd.Specs {
					for _, id := range sp.(*ast.ValueSpec).Names {
						if id.Name != "_" {
							seen[id.Name] = true
						}
					}
				}
			}
		}
	}
	var out []string
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// importsFor is the import declaration of the packages of snippetImports
// that code names without declaring them.
func importsFor(t *testing.T, code string) string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+code, 0)
	if err != nil {
		t.Fatalf("the snippets' file does not parse: %v", err)
	}
	used := map[string]bool{}
	for _, id := range f.Unresolved {
		if path, ok := snippetImports[id.Name]; ok {
			used[path] = true
		}
	}
	var paths []string
	for p := range used {
		paths = append(paths, fmt.Sprintf("\t%q\n", p))
	}
	sort.Strings(paths)
	return "import (\n" + strings.Join(paths, "") + ")\n"
}

// TestDocSnippetsBuild builds every ```go block of README.md and docs/*.md
// against the module as it is, so a renamed function or a changed
// signature fails here with the doc's file and line.
func TestDocSnippetsBuild(t *testing.T) {
	snippets := goSnippets(t)
	if len(snippets) == 0 {
		t.Fatal("no ```go block in README.md or docs/*.md: the test would hold nothing")
	}
	if out, err := buildSnippets(t, snippets); err != nil {
		t.Errorf("the docs' Go snippets do not build (%d blocks): %v\n%s", len(snippets), err, out)
	}
}

// TestDocSnippetsBuildCatchesAStaleName builds a snippet that names a
// function the module does not have, and wants the build to fail at the
// snippet's line of its doc.
func TestDocSnippetsBuildCatchesAStaleName(t *testing.T) {
	stale := snippet{doc: "docs/own-lock.md", line: 42, text: "dsn := cluster.NoSuchDSN(t.Endpoints[0].Addr)\n"}
	out, err := buildSnippets(t, []snippet{stale})
	if err == nil {
		t.Fatal("a snippet naming cluster.NoSuchDSN built")
	}
	if !strings.Contains(string(out), "docs/own-lock.md:42") || !strings.Contains(string(out), "NoSuchDSN") {
		t.Errorf("the build's message does not name the doc's line and the name:\n%s", out)
	}
}

// buildSnippets builds snippets against the module as it is, in a package
// that exists only for the build (go build -overlay), and returns the go
// command's output.
func buildSnippets(t *testing.T, snippets []snippet) ([]byte, error) {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "snippets.go")
	write(t, src, snippetSource(t, snippets))
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	pkgDir := filepath.Join(abs, "designdoc", "docsnippets")
	overlay, err := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(pkgDir, "snippets.go"): src}})
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "overlay.json"), string(overlay))
	cmd := exec.Command(goBinary(), "build", "-overlay", filepath.Join(dir, "overlay.json"), "./designdoc/docsnippets")
	cmd.Dir = root
	return cmd.CombinedOutput()
}

// write writes text to path.
func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
