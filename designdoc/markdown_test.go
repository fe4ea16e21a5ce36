package designdoc

import (
	"regexp"
	"strings"
	"testing"
)

// section is the text of design.md's section n, from its heading
// ("## n. ...") to the next heading of its level.
func section(t *testing.T, doc string, n string) string {
	t.Helper()
	head := "\n## " + n + ". "
	i := strings.Index(doc, head)
	if i < 0 {
		t.Fatalf("design.md has no section %q", strings.TrimSpace(head))
	}
	rest := doc[i+len(head):]
	if j := strings.Index(rest, "\n## "); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// table is the rows of the first Markdown table in text, each a list of
// its cells trimmed, without the header and the separator.
func table(text string) [][]string {
	var rows [][]string
	in := false
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "|") {
			if in {
				break
			}
			continue
		}
		in = true
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		rows = append(rows, cells)
	}
	if len(rows) < 2 {
		return nil
	}
	return rows[2:]
}

var backtickRE = regexp.MustCompile("`([^`\n]+)`")

// backticked is every span of text between backticks in s, in order.
func backticked(s string) []string {
	var out []string
	for _, m := range backtickRE.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// unquote is a cell's name without its backticks and trailing slash:
// "`checker/`" → "checker".
func unquote(cell string) string {
	return strings.TrimSuffix(strings.Trim(cell, "`"), "/")
}

var parenRE = regexp.MustCompile(`\([^)]*\)`)

// importList reads a cell of §1's "imports of ours" column: names separated
// by commas, remarks in parentheses left out, "none" for none.
func importList(cell string) []string {
	cell = strings.TrimSpace(parenRE.ReplaceAllString(cell, ""))
	if cell == "none" {
		return nil
	}
	var out []string
	for _, name := range strings.Split(cell, ",") {
		if name = unquote(strings.TrimSpace(name)); name != "" {
			out = append(out, name)
		}
	}
	return out
}

func TestTable(t *testing.T) {
	text := "intro\n\n| a | b |\n|---|---|\n| `x/` | 1 |\n| y | 2 |\n\nafter\n| z | 3 |\n"
	got := table(text)
	if len(got) != 2 || unquote(got[0][0]) != "x" || got[1][1] != "2" {
		t.Errorf("table = %q", got)
	}
}

func TestImportList(t *testing.T) {
	for _, tc := range []struct {
		name, cell string
		want       []string
	}{
		{"none", "none", nil},
		{"one", "history", []string{"history"}},
		{"remark", "history (+ porcupine)", []string{"history"}},
		{"several", "cluster, spawn, checker/anomaly", []string{"cluster", "spawn", "checker/anomaly"}},
		{"remark inside", "nemesis, clients (declarations only)", []string{"nemesis", "clients"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := importList(tc.cell); strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("importList(%q) = %q, want %q", tc.cell, got, tc.want)
			}
		})
	}
}
