package hunt

import (
	"cmp"
	"fmt"
	"slices"
)

// MergeParts returns the report of a whole campaign from the reports of
// its n parts (Options.Shard 1/n to n/n), given in the order of their
// indexes; the caller checks that they are the parts of one campaign, each
// once. Each row sums the parts' rows of its kind (runs, invalid, unknown
// and why: setup, faults or check out of budget; steered, host trouble, off script), joins their anomalies, and
// lists their failing runs in the order of their seeds, so that its first
// failing run is the lowest seed's, as in the campaign made whole; its
// margin is the smallest of the parts' (the lowest part's on a tie), and
// why it is not applicable, or why its runs stopped after failed setups
// (Row.SetupGaveUp: that part's remaining runs are missing), the lowest
// part's that says. The report's runs
// and Elapsed are the sums of the parts' (Elapsed is not the wall time of
// a fleet that ran them side by side), and it is out of time when a part
// was. Each part's rows are its campaign's kinds in order, up to where it
// stopped (a part out of its budget stops early): an error says when a
// part's kinds are not a prefix of the longest part's, or a row lists
// failing runs without their seeds.
func MergeParts(parts []*Report) (*Report, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("hunt: no parts to merge")
	}
	longest := slices.MaxFunc(parts, func(a, b *Report) int { return cmp.Compare(len(a.Rows), len(b.Rows)) })
	var kinds []string
	for _, r := range longest.Rows {
		kinds = append(kinds, r.Fault)
	}
	out := &Report{Scenario: parts[0].Scenario, Steer: parts[0].Steer}
	for _, kind := range kinds {
		out.Rows = append(out.Rows, &Row{Fault: kind})
	}
	for p, part := range parts {
		for k, r := range part.Rows {
			if k >= len(kinds) || r.Fault != kinds[k] {
				return nil, fmt.Errorf("hunt: part %d's kinds %v are not those of part %d, %v, in order", p+1, faults(part.Rows), slices.Index(parts, longest)+1, kinds)
			}
			if len(r.FailingSeeds) != len(r.Failing) {
				return nil, fmt.Errorf("hunt: part %d's %s row lists %d failing runs and %d seeds (a campaign file of an older version)", p+1, r.Fault, len(r.Failing), len(r.FailingSeeds))
			}
			addRow(out.Rows[k], r)
		}
		out.Runs += part.Runs
		out.Elapsed += part.Elapsed
		out.OutOfTime = out.OutOfTime || part.OutOfTime
	}
	for _, r := range out.Rows {
		sortFailing(r)
		slices.Sort(r.Anomalies)
		r.Anomalies = slices.Compact(r.Anomalies)
	}
	return out, nil
}

// addRow adds part row r of its kind to the merged row m.
func addRow(m, r *Row) {
	m.Runs += r.Runs
	m.Invalid += r.Invalid
	m.Unknown += r.Unknown
	m.SetupFailed += r.SetupFailed
	m.FaultsFailed += r.FaultsFailed
	m.OutOfBudget += r.OutOfBudget
	m.Steered += r.Steered
	m.HostTrouble += r.HostTrouble
	m.OffScript += r.OffScript
	m.Anomalies = append(m.Anomalies, r.Anomalies...)
	m.Failing = append(m.Failing, r.Failing...)
	m.FailingSeeds = append(m.FailingSeeds, r.FailingSeeds...)
	// Findings are aligned with Failing; a row without them has "".
	findings := slices.Clone(r.Findings)
	for len(findings) < len(r.Failing) {
		findings = append(findings, "")
	}
	m.Findings = append(m.Findings, findings[:len(r.Failing)]...)
	if r.Shrunk != "" && (m.Shrunk == "" || seedOf(r, r.Shrunk) < seedOf(m, m.Shrunk)) {
		m.Shrunk = r.Shrunk // the lowest seed's of the parts' shrunk runs
	}
	m.NotApplicable = cmp.Or(m.NotApplicable, r.NotApplicable)
	m.SetupGaveUp = cmp.Or(m.SetupGaveUp, r.SetupGaveUp)
	if r.HasMargin && (!m.HasMargin || r.Margin < m.Margin) {
		m.Margin, m.HasMargin, m.MarginRun = r.Margin, true, r.MarginRun
	}
}

// sortFailing orders row r's failing runs, their seeds and findings by
// seed (stable: the parts' order on equal seeds).
func sortFailing(r *Row) {
	order := make([]int, len(r.Failing))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(r.FailingSeeds[a], r.FailingSeeds[b]) })
	failing, seeds, findings := r.Failing, r.FailingSeeds, r.Findings
	r.Failing, r.FailingSeeds, r.Findings = nil, nil, nil
	for _, i := range order {
		r.Failing = append(r.Failing, failing[i])
		r.FailingSeeds = append(r.FailingSeeds, seeds[i])
		r.Findings = append(r.Findings, findings[i])
	}
}

// faults returns the kinds of rows, in order.
func faults(rows []*Row) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.Fault)
	}
	return out
}

// seedOf returns the seed of row r's failing run dir.
func seedOf(r *Row, dir string) uint64 {
	if i := slices.Index(r.Failing, dir); i >= 0 && i < len(r.FailingSeeds) {
		return r.FailingSeeds[i]
	}
	return 0
}
