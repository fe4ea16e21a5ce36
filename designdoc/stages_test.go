package designdoc

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// mentioned is every identifier a Go file declares or uses.
func mentioned(t *testing.T, path string) map[string]bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			out[id.Name] = true
		}
		return true
	})
	return out
}

// TestStageTable holds §8's table of stages to package runner: each
// stage's file exists there, every Go name its row quotes names a
// declaration of the module, and the file names each one the row quotes
// qualified (checker.CheckFile, Scenario.CheckBounds) or declared in
// runner itself (plan): that is what the stage does, in its own file.
func TestStageTable(t *testing.T) {
	rows := table(section(t, design(t), "8"))
	if len(rows) == 0 {
		t.Fatal("design.md §8 has no table of stages")
	}
	n := index(t)
	for _, r := range rows {
		if len(r) != 3 {
			t.Fatalf("design.md §8: row %q has %d cells, want 3 (stage, file, takes → gives)", r, len(r))
		}
		t.Run(r[0], func(t *testing.T) {
			file := filepath.Join(root, "runner", unquote(r[1]))
			if !pathExists(filepath.Join("runner", unquote(r[1]))) {
				t.Fatalf("design.md §8: stage %s's file %s does not exist", r[0], file)
			}
			in := mentioned(t, file)
			for _, name := range backticked(r[2]) {
				if !goName(name) {
					continue
				}
				if !n.resolves(name) {
					t.Errorf("design.md §8: stage %s quotes %s, which the module does not declare", r[0], name)
					continue
				}
				last := strings.TrimSuffix(name[strings.LastIndex(name, ".")+1:], "()")
				if (n.ours(name) || n.decls["runner"][name]) && !in[last] {
					t.Errorf("design.md §8: stage %s quotes %s, which %s never names", r[0], name, r[1])
				}
			}
		})
	}
}

// TestRecipesNameRealThings holds §10's recipes to the tree: every file
// or directory a recipe quotes exists, and every Go name it quotes names a
// package or a declaration of the module.
func TestRecipesNameRealThings(t *testing.T) {
	text := section(t, design(t), "10")
	n := index(t)
	quoted := backticked(text)
	if len(quoted) == 0 {
		t.Fatal("design.md §10 quotes nothing")
	}
	for _, q := range quoted {
		switch {
		case goName(q) && !strings.Contains(q, "/"):
			if !n.resolves(q) && !pathExists(q) {
				t.Errorf("design.md §10 quotes %s, which names no package or declaration of the module", q)
			}
		case !pathExists(q):
			t.Errorf("design.md §10 quotes %s, which does not exist", q)
		}
	}
}

// TestQuotedNamesExist holds every name design.md quotes that is qualified
// by one of our packages or types (checker.Analyze, Anomaly.Host) to a
// declaration of the module, and every quoted path of the tree to a file
// or directory.
func TestQuotedNamesExist(t *testing.T) {
	n := index(t)
	for _, q := range backticked(design(t)) {
		switch {
		case goName(q) && n.ours(q):
			if !n.resolves(q) {
				t.Errorf("design.md quotes %s, which the module does not declare", q)
			}
		case strings.Contains(q, "/") && !strings.ContainsAny(q, " :%") && treePath(q):
			if !pathExists(q) {
				t.Errorf("design.md quotes %s, which does not exist", q)
			}
		}
	}
}

// treePath reports whether a quoted path starts at a top-level directory
// of the module (and so names the tree, not a run's store or an import).
func treePath(q string) bool {
	top := q[:strings.Index(q, "/")]
	return top != "store" && pathExists(top)
}
