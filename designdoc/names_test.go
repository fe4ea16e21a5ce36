package designdoc

import (
	"go/ast"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// names indexes the declarations of the module's non-test files.
type names struct {
	pkgs  map[string][]string        // package name → module-relative paths
	decls map[string]map[string]bool // path → "Name" and "Type.Member"
	types map[string]bool            // every type name
	any   map[string]bool            // every declared name and member
}

// index parses every package of the module, its tests included, and
// indexes its declarations.
func index(t *testing.T) *names {
	t.Helper()
	n := &names{pkgs: map[string][]string{}, decls: map[string]map[string]bool{},
		types: map[string]bool{}, any: map[string]bool{}}
	pkgs := packages(t)
	for _, p := range pkgs {
		n.pkgs[p.Name] = append(n.pkgs[p.Name], p.rel())
		n.decls[p.rel()] = map[string]bool{}
	}
	for _, f := range filesWithTests(t, pkgs) {
		for _, d := range f.file.Decls {
			n.declare(f.pkg.rel(), d)
		}
	}
	return n
}

// add records a declared name of the package at path.
func (n *names) add(path, name string) {
	n.decls[path][name] = true
	n.any[name[strings.LastIndex(name, ".")+1:]] = true
}

// declare records one top-level declaration: a function or method, or
// the names of a type, var or const spec with a type's fields and methods.
func (n *names) declare(path string, d ast.Decl) {
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Recv == nil || len(d.Recv.List) == 0 {
			n.add(path, d.Name.Name)
			return
		}
		n.add(path, receiver(d.Recv.List[0].Type)+"."+d.Name.Name)
	case *ast.GenDecl:
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				n.types[s.Name.Name] = true
				n.add(path, s.Name.Name)
				for _, m := range members(s.Type) {
					n.add(path, s.Name.Name+"."+m)
				}
			case *ast.ValueSpec:
				for _, id := range s.Names {
					n.add(path, id.Name)
				}
			}
		}
	}
}

// receiver is the name of a method's receiver type.
func receiver(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return receiver(e.X)
	case *ast.IndexExpr:
		return receiver(e.X)
	case *ast.IndexListExpr:
		return receiver(e.X)
	case *ast.Ident:
		return e.Name
	}
	return ""
}

// members is the named fields of a struct or the methods of an interface.
func members(e ast.Expr) []string {
	var list *ast.FieldList
	switch e := e.(type) {
	case *ast.StructType:
		list = e.Fields
	case *ast.InterfaceType:
		list = e.Methods
	default:
		return nil
	}
	var out []string
	for _, f := range list.List {
		for _, id := range f.Names {
			out = append(out, id.Name)
		}
	}
	return out
}

var goNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*){0,2}(\(\))?$`)

// fileExts are the endings that make a quoted name a file's, not Go's.
var fileExts = map[string]bool{"go": true, "json": true, "jsonl": true, "yaml": true,
	"html": true, "log": true, "css": true, "txt": true, "md": true, "xml": true}

// goName reports whether quoted text is a Go name (pkg.Name, Type.Member,
// pkg.Type.Member, Name, each perhaps with "()"), and not a file name.
func goName(s string) bool {
	if !goNameRE.MatchString(s) {
		return false
	}
	return !fileExts[s[strings.LastIndex(s, ".")+1:]]
}

// ours reports whether a Go name is qualified by one of our packages or
// by one of our types, so that it must resolve in the module.
func (n *names) ours(s string) bool {
	parts := strings.Split(strings.TrimSuffix(s, "()"), ".")
	return len(parts) > 1 && (len(n.pkgs[parts[0]]) > 0 || n.types[parts[0]])
}

// resolves reports whether a Go name names a package or a declaration of
// the module: Name, pkg.Name, Type.Member or pkg.Type.Member.
func (n *names) resolves(s string) bool {
	parts := strings.Split(strings.TrimSuffix(s, "()"), ".")
	switch len(parts) {
	case 1:
		return len(n.pkgs[parts[0]]) > 0 || n.any[parts[0]]
	case 2:
		if n.inPackage(parts[0], parts[1]) {
			return true
		}
		for _, d := range n.decls {
			if d[parts[0]+"."+parts[1]] {
				return true
			}
		}
		return false
	default:
		return n.inPackage(parts[0], parts[1]+"."+parts[2])
	}
}

// inPackage reports whether a package named pkg declares name.
func (n *names) inPackage(pkg, name string) bool {
	for _, path := range n.pkgs[pkg] {
		if n.decls[path][name] {
			return true
		}
	}
	return false
}

// pathExists reports whether a module-relative path quoted in the doc
// exists; "<...>" stands for any name and "*" is a glob.
func pathExists(p string) bool {
	glob := regexp.MustCompile(`<[^>]+>`).ReplaceAllString(p, "*")
	matches, err := filepath.Glob(filepath.Join(root, strings.TrimSuffix(glob, "/")))
	if err != nil || len(matches) == 0 {
		return false
	}
	_, err = os.Stat(matches[0])
	return err == nil
}
