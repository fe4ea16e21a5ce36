package anomaly

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// TestHistoryDocTableIsTheDeclaration keeps docs/history.md §4's table of
// anomalies true: one row per kind of Kinds, in order, with its checker
// (the liveness kinds "liveness, apart from the verdict") and its meaning.
func TestHistoryDocTableIsTheDeclaration(t *testing.T) {
	b, err := os.ReadFile("../../docs/history.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "| anomaly | checker | meaning |\n|---|---|---|\n")
	if !ok {
		t.Fatal("docs/history.md has no table of anomalies")
	}
	table, _, _ = strings.Cut(table, "\n\n")
	rows := strings.Split(table, "\n")
	var want []string
	for _, k := range Kinds {
		checker := k.Checker
		if k.Liveness() {
			checker += ", apart from the verdict"
		}
		want = append(want, "| `"+k.Name+"` | "+checker+" | "+k.Meaning+" |")
	}
	if !slices.Equal(rows, want) {
		t.Errorf("docs/history.md §4's table:\n%s\nwant:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
}

// TestEveryKindHasItsFacts fails when a kind lacks a name, a known checker
// or a meaning, or when two kinds share a name.
func TestEveryKindHasItsFacts(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range Kinds {
		known := slices.Contains(Checkers, k.Checker) || k.Checker == CheckerLiveness
		if k.Name == "" || k.Meaning == "" || !known || k.Checker == CheckerWellFormed {
			t.Errorf("kind %+v: want a name, a meaning and a checker of %v or %s", k, Checkers[1:], CheckerLiveness)
		}
		if seen[k.Name] || k.Name == Malformed {
			t.Errorf("kind %s declared twice", k.Name)
		}
		seen[k.Name] = true
	}
}

func TestNames(t *testing.T) {
	tests := []struct {
		name string
		got  []string
		want []string
	}{
		{"the fencing-tokens checker", Of(CheckerFencingTokens), []string{TokenReuse, TokenRegression}},
		{"liveness", Names(Kind.Liveness), []string{Stuck, Unavailable, LostTask}},
		{"tasks", Names(func(k Kind) bool { return k.Task }), []string{DoubleCapture, BudgetOverspent, CrossQueue, StaleStatus, LostTask}},
		{"a checker of no kinds", Of(CheckerWellFormed), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !slices.Equal(tt.got, tt.want) {
				t.Fatalf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
}
