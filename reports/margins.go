package reports

import (
	"fmt"
	"strings"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
)

// marginLine is the margins of one key as report.html shows them.
type marginLine struct {
	Key   string
	Parts []marginPart
}

// marginPart is one margin of a key as report.html shows it: what it
// measures, its size (in leases too where its lease is known), the ops that
// realise it, whether it is a violation (Bad), and its place among the
// margins of the run (Q: the report's data lists its ops and window).
type marginPart struct {
	What, Size, Ops string
	Bad             bool
	Q               int
	ops             []int
}

// marginLines describes the margins of a run, a line per key, numbering
// their parts in order.
func marginLines(ms []checker.Margin) []marginLine {
	var out []marginLine
	q := 0
	for _, m := range ms {
		line := marginLine{Key: m.Key, Parts: marginParts(m)}
		for i := range line.Parts {
			line.Parts[i].Q = q
			q++
		}
		out = append(out, line)
	}
	return out
}

// marginResult lists the margins of a run as anomalies of a result, one
// per part in the order of marginLines, so that anomalyWindows gives each
// its ops' window and the timeline keeps their ops.
func marginResult(ms []checker.Margin) checker.Result {
	r := checker.Result{Name: "margins"}
	for _, line := range marginLines(ms) {
		for _, p := range line.Parts {
			r.Anomalies = append(r.Anomalies, checker.Anomaly{Kind: p.What + "-margin", Key: line.Key, Ops: p.ops, Message: p.What + " margin " + p.Size})
		}
	}
	return r
}

// namedOps are the ops the anomalies of results name.
func namedOps(results []checker.Result) map[int]bool {
	named := map[int]bool{}
	for _, r := range results {
		for _, a := range r.Anomalies {
			for _, i := range a.Ops {
				named[i] = true
			}
		}
	}
	return named
}

// marginParts describes the margins of one key (docs/history.md §4.8) that
// apply to it, lease, write and token, in that order.
func marginParts(m checker.Margin) []marginPart {
	var out []marginPart
	for _, t := range []struct {
		what string
		m    *checker.TimeMargin
	}{{"lease", m.Lease}, {"write", m.Write}} {
		if t.m == nil {
			continue
		}
		size := signedDuration(t.m.Margin)
		if t.m.Lease > 0 && t.m.Margin != -checker.Forever {
			size += fmt.Sprintf(" (%+.3f of its %v lease)", float64(t.m.Margin)/float64(t.m.Lease), t.m.Lease.Round(time.Millisecond))
		}
		out = append(out, marginPart{What: t.what, Size: size, Ops: opList(t.m.Ops), Bad: t.m.Margin < 0, ops: t.m.Ops})
	}
	if tk := m.Token; tk != nil {
		out = append(out, marginPart{What: "token", Size: fmt.Sprintf("%+d", tk.Margin), Ops: opList(tk.Ops), Bad: tk.Margin <= 0, ops: tk.Ops})
	}
	return out
}

// signedDuration renders a margin to a tenth of a millisecond, with its
// sign ("+20ms", "-988.3ms"), and the margin of a hold that could not end
// as "-∞".
func signedDuration(d time.Duration) string {
	switch {
	case d == -checker.Forever:
		return "-∞"
	case d < 0:
		return d.Round(100 * time.Microsecond).String()
	}
	return "+" + d.Round(100*time.Microsecond).String()
}

// opList renders op indexes as "0, 1, 3".
func opList(ops []int) string {
	s := make([]string, len(ops))
	for i, o := range ops {
		s[i] = fmt.Sprint(o)
	}
	return strings.Join(s, ", ")
}
