package designdoc

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
)

// rule is the sentence of §1's Rules that starts with prefix, up to its
// first colon or semicolon.
func rule(t *testing.T, prefix string) string {
	t.Helper()
	text := strings.Join(strings.Fields(section(t, design(t), "1")), " ")
	i := strings.Index(text, prefix)
	if i < 0 {
		t.Fatalf("design.md §1 has no rule starting %q", prefix)
	}
	s := text[i:]
	if j := strings.IndexAny(s, ":;"); j >= 0 {
		s = s[:j]
	}
	return s
}

// within reports whether package path is name or inside it.
func within(path, name string) bool {
	return path == name || strings.HasPrefix(path, name+"/")
}

// TestCheckerImportsNoHarness holds the rule "`checker` never imports
// `clients`, `nemesis`, `cluster` or `runner`", read from §1, to the
// checker's dependencies, direct or not: a stored history is re-checked
// with none of them.
func TestCheckerImportsNoHarness(t *testing.T) {
	names := backticked(rule(t, "`checker` never imports"))
	if len(names) < 2 {
		t.Fatalf("the rule names %q; want the checker and what it never imports", names)
	}
	subject, forbidden := names[0], names[1:]
	for _, p := range packages(t) {
		if p.rel() != subject {
			continue
		}
		for _, dep := range append(p.ours(), depsOfOurs(p)...) {
			for _, f := range forbidden {
				if within(dep, f) {
					t.Errorf("%s imports %s, directly or not; design.md §1 says it never imports %s", subject, dep, f)
				}
			}
		}
		return
	}
	t.Fatalf("the rule's subject %q is no package", subject)
}

// depsOfOurs is the module-relative paths of the package's dependencies
// of our module, direct or not.
func depsOfOurs(p pkg) []string {
	var out []string
	for _, d := range p.Deps {
		if strings.HasPrefix(d, modulePath+"/") {
			out = append(out, strings.TrimPrefix(d, modulePath+"/"))
		}
	}
	return out
}

// TestNoLibraryImportsTesting holds "No non-test package imports
// `testing`" and the exceptions the rule names in the same sentence: an
// exception must be a package that does import it.
func TestNoLibraryImportsTesting(t *testing.T) {
	except := map[string]bool{}
	for _, name := range backticked(rule(t, "No non-test package")) {
		if name != "testing" {
			except[unquote(name)] = true
		}
	}
	for _, p := range packages(t) {
		imports := false
		for _, imp := range p.Imports {
			imports = imports || imp == "testing"
		}
		switch {
		case imports && !except[p.rel()]:
			t.Errorf("%s imports testing outside its tests; design.md §1 says no non-test package does", p.rel())
		case !imports && except[p.rel()]:
			t.Errorf("design.md §1 names %s as importing testing, but it does not", p.rel())
		}
		delete(except, p.rel())
	}
	for name := range except {
		t.Errorf("design.md §1 excepts %s from the testing rule, which is no package", name)
	}
}

// TestNoLibraryExits holds "no library code calls `os.Exit` or
// `log.Fatal`" to every non-test file of every package but the commands.
func TestNoLibraryExits(t *testing.T) {
	rule(t, "no library code calls `os.Exit` or `log.Fatal`")
	var library []pkg
	for _, p := range packages(t) {
		if p.Name != "main" {
			library = append(library, p)
		}
	}
	for _, f := range files(t, library) {
		for _, call := range exits(f.file) {
			t.Errorf("%s calls %s; design.md §1 says no library code does", f.path, call)
		}
	}
}

// exits is every call of os.Exit or of log's Fatal functions in the file,
// whatever name the file imports os or log under.
func exits(f *ast.File) []string {
	local := map[string]string{} // local name → "os" or "log"
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if path != "os" && path != "log" {
			continue
		}
		name := path
		if imp.Name != nil {
			name = imp.Name.Name
		}
		local[name] = path
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		x, ok := sel.X.(*ast.Ident)
		if !ok {
			return true
		}
		switch local[x.Name] {
		case "os":
			if sel.Sel.Name == "Exit" {
				out = append(out, "os.Exit")
			}
		case "log":
			if strings.HasPrefix(sel.Sel.Name, "Fatal") {
				out = append(out, "log."+sel.Sel.Name)
			}
		}
		return true
	})
	return out
}

func TestExits(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      int
	}{
		{"os.Exit", "package p\nimport \"os\"\nfunc f() { os.Exit(1) }", 1},
		{"aliased", "package p\nimport sys \"os\"\nfunc f() { sys.Exit(1) }", 1},
		{"log.Fatalf", "package p\nimport \"log\"\nfunc f() { log.Fatalf(\"x\"); log.Fatal(1) }", 2},
		{"a method named Exit", "package p\ntype T struct{}\nfunc (T) Exit() {}\nfunc f(os T) { os.Exit() }", 0},
		{"no call", "package p\nimport \"os\"\nvar x = os.Args", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := parser.ParseFile(token.NewFileSet(), "p.go", tc.src, 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := exits(f); len(got) != tc.want {
				t.Errorf("exits = %q, want %d calls", got, tc.want)
			}
		})
	}
}
