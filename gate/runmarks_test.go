package gate

import "testing"

func TestRunMarks(t *testing.T) {
	tests := []struct {
		name                  string
		host, offScript, runs int
		want                  string
	}{
		{"none", 0, 0, 3, ""},
		{"host only", 1, 0, 3, " [host 1/3]"},
		{"steps only", 0, 2, 3, " [steps 2/3]"},
		{"both", 3, 1, 3, " [host 3/3, steps 1/3]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RunMarks(tt.host, tt.offScript, tt.runs); got != tt.want {
				t.Errorf("RunMarks(%d, %d, %d) = %q, want %q", tt.host, tt.offScript, tt.runs, got, tt.want)
			}
		})
	}
}

// TestGateRowMarks: a gate row's observed cell marks its runs with host
// trouble or steps off script.
func TestGateRowMarks(t *testing.T) {
	r := &Row{Observed: map[string]int{"valid": 2, "invalid": 1}, Runs: 3, Host: 1}
	if got := r.ObservedText(); got != "valid×2 invalid×1 [host 1/3]" {
		t.Errorf("observed %q", got)
	}
	if !Marked([]*Row{{}, r}) || Marked([]*Row{{}}) {
		t.Error("Marked does not tell a row with marks")
	}
}
