package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/checker/anomaly"
	"github.com/jepsen-lite/jepsen-lite/clients"
)

// TestListPrintsTheDeclarations checks that `list --algorithms` and `list
// --anomalies` print what clients and checker/anomaly declare: a line per
// algorithm with its lease and capabilities, one per option with its
// default and one per acquire step; a line per queue; a line per anomaly
// kind with its checker.
func TestListPrintsTheDeclarations(t *testing.T) {
	var algs, anomalies []*regexp.Regexp
	line := func(fields ...string) *regexp.Regexp {
		for i, f := range fields {
			fields[i] = regexp.QuoteMeta(f)
		}
		return regexp.MustCompile(`(?m)^` + strings.Join(fields, `\s+`) + `(\s|$)`)
	}
	for _, a := range clients.Algorithms() {
		algs = append(algs, line(a.Name, a.System, a.Lease.TokenText()))
		algs = append(algs, regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(a.Name)+`\s.*`+regexp.QuoteMeta(a.Capabilities.Text())+`$`))
		for _, o := range a.Options {
			def := o.Default
			if o.Required() {
				def = "(required)"
			}
			algs = append(algs, line(a.Name, o.Name, def, o.Doc))
		}
		for _, s := range a.Steps {
			algs = append(algs, line(a.Name, s.Name))
		}
	}
	for _, q := range clients.QueueAlgorithms() {
		algs = append(algs, line(q.Name, q.System))
	}
	for _, k := range anomaly.Kinds {
		anomalies = append(anomalies, line(k.Name, k.Checker))
	}
	tests := []struct {
		name  string
		flag  string
		lines []*regexp.Regexp
	}{
		{"algorithms", "--algorithms", algs},
		{"anomalies", "--anomalies", anomalies},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "list", tt.flag)
			if code != exitHeld {
				t.Fatalf("exit %d, stderr %s", code, stderr)
			}
			for _, re := range tt.lines {
				if !re.MatchString(stdout) {
					t.Errorf("no line matches %s in:\n%s", re, stdout)
				}
			}
		})
	}
}
