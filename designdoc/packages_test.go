package designdoc

import (
	"slices"
	"testing"
)

// packageRows is §1's table: each row's package (module-relative, no
// trailing slash) and its "imports of ours" cell.
func packageRows(t *testing.T) map[string]string {
	t.Helper()
	rows := table(section(t, design(t), "1"))
	if len(rows) == 0 {
		t.Fatal("design.md §1 has no table of packages")
	}
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		if len(r) != 3 {
			t.Fatalf("design.md §1: row %q has %d cells, want 3 (package, owns, imports of ours)", r, len(r))
		}
		name := unquote(r[0])
		if _, dup := out[name]; dup {
			t.Errorf("design.md §1: package %s has two rows", name)
		}
		out[name] = r[2]
	}
	return out
}

// TestPackageTableListsEveryPackage requires a row of §1's table for every
// package of the module (`go list ./...`) and a package for every row.
func TestPackageTableListsEveryPackage(t *testing.T) {
	rows := packageRows(t)
	have := map[string]bool{}
	for _, p := range packages(t) {
		have[p.rel()] = true
		if _, ok := rows[p.rel()]; !ok {
			t.Errorf("package %s has no row in design.md §1's table", p.rel())
		}
	}
	for name := range rows {
		if !have[name] {
			t.Errorf("design.md §1's table has a row for %s, which is no package of the module", name)
		}
	}
}

// TestPackageTableImports requires each row's "imports of ours" to be the
// package's non-test imports of the module, no more and no fewer.
func TestPackageTableImports(t *testing.T) {
	rows := packageRows(t)
	for _, p := range packages(t) {
		cell, ok := rows[p.rel()]
		if !ok {
			continue // TestPackageTableListsEveryPackage says so
		}
		want := importList(cell)
		got := p.ours()
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("design.md §1: %s imports of ours %q, but the package imports %q", p.rel(), want, got)
		}
	}
}
