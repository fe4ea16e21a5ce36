package checker

// Expectation is what a scenario expects of its run: a verdict and, for an
// invalid verdict, the anomaly kinds that must all be found.
type Expectation struct {
	Verdict   Verdict  `json:"verdict" yaml:"verdict"`
	Anomalies []string `json:"anomalies,omitempty" yaml:"anomalies,omitempty"`
}

// Met reports whether results satisfy e: the overall verdict equals e.Verdict
// and every kind in e.Anomalies was found by some checker. A zero Expectation
// expects a valid verdict.
func (e Expectation) Met(verdict Verdict, results []Result) bool {
	want := e.Verdict
	if want == "" {
		want = Valid
	}
	if verdict != want {
		return false
	}
	found := map[string]bool{}
	for _, r := range results {
		for _, a := range r.Anomalies {
			found[a.Kind] = true
		}
	}
	for _, k := range e.Anomalies {
		if !found[k] {
			return false
		}
	}
	return true
}

// Overall returns the worst verdict among results; no results is Unknown.
func Overall(results []Result) Verdict {
	if len(results) == 0 {
		return Unknown
	}
	v := Valid
	for _, r := range results {
		v = Worse(v, r.Verdict)
	}
	return v
}
