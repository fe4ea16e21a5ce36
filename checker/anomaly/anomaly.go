// Package anomaly owns the names of the checkers and of the anomaly kinds
// they report, declared once (docs/history.md §4): the checkers of package
// checker name their results and their anomalies from it, and the
// synthesizer (checker/synth), the reference (checker/reference),
// `jepsen-lite list --anomalies` and the gate's documents read it. It
// imports nothing, so that every one of them can import it.
package anomaly

// The names of the checkers, as their results carry them (Result.Name).
const (
	CheckerWellFormed      = "well-formed"
	CheckerDoubleHold      = "double-hold"
	CheckerLinearizability = "linearizability"
	CheckerResource        = "resource"
	CheckerFencingTokens   = "fencing-tokens"
	CheckerQueue           = "queue"
	// CheckerLiveness is the liveness report, judged apart from the
	// verdict (docs/history.md §4.5, §4.6).
	CheckerLiveness = "liveness"
)

// Checkers lists the checkers of the verdict in the order of their results
// (checker.Check); the liveness report comes after them, apart.
var Checkers = []string{CheckerWellFormed, CheckerDoubleHold, CheckerLinearizability, CheckerResource, CheckerFencingTokens, CheckerQueue}

// The anomaly kinds (Anomaly.Kind).
const (
	DoubleHold      = "double-hold"
	EarlyGrant      = "early-grant"
	ForeignRelease  = "foreign-release"
	StaleWrite      = "stale-write"
	LostUpdate      = "lost-update"
	TokenReuse      = "token-reuse"
	TokenRegression = "token-regression"
	Stuck           = "stuck"
	Unavailable     = "unavailable"
	DoubleCapture   = "double-capture"
	BudgetOverspent = "budget-overspent"
	CrossQueue      = "cross-queue"
	StaleStatus     = "stale-status"
	LostTask        = "lost-task"
	// Malformed is the well-formed checker's one anomaly: the history
	// breaks docs/history.md §2, and no verdict about the lock is given.
	Malformed = "malformed-history"
)

// Kind is one anomaly kind: its name, the checker that reports it and what
// it means, in one sentence of docs/history.md §4's table.
type Kind struct {
	Name    string
	Checker string
	Meaning string
	// Task is set when the anomaly's Key is a task of the queue workload
	// rather than a lock key.
	Task bool
}

// Liveness reports whether the kind is judged apart from the verdict.
func (k Kind) Liveness() bool { return k.Checker == CheckerLiveness }

// Kinds lists every anomaly kind but Malformed (which says that no other was
// looked for), in the order of docs/history.md §4's table.
var Kinds = []Kind{
	{Name: DoubleHold, Checker: CheckerDoubleHold, Meaning: "two beliefs of different processes in the same key overlap"},
	{Name: EarlyGrant, Checker: CheckerLinearizability, Meaning: "a grant that no order of the lock ops allows (§4.1)"},
	{Name: ForeignRelease, Checker: CheckerLinearizability, Meaning: "a successful release that no order of the lock ops allows"},
	{Name: StaleWrite, Checker: CheckerResource, Meaning: "the resource provably applied a write of an older grant after a write of a newer one"},
	{Name: LostUpdate, Checker: CheckerResource, Meaning: "the register provably ended below the number of acknowledged increments"},
	{Name: TokenReuse, Checker: CheckerFencingTokens, Meaning: "two grants of one key carry the same nonzero token"},
	{Name: TokenRegression, Checker: CheckerFencingTokens, Meaning: "a grant invoked after another grant of the key had returned got a lower token"},
	{Name: Stuck, Checker: CheckerLiveness, Meaning: "nobody took the key again, to the end, although nothing stood in the way (§4.5)"},
	{Name: Unavailable, Checker: CheckerLiveness, Meaning: "nobody could take the key for a while although a majority of the server nodes was up and nothing stood in the way (§4.6)"},
	{Name: DoubleCapture, Checker: CheckerQueue, Task: true, Meaning: "two holds of one task by different processes overlap (§4.7)"},
	{Name: BudgetOverspent, Checker: CheckerQueue, Task: true, Meaning: "a task was captured more times than its budget allows (§4.7)"},
	{Name: CrossQueue, Checker: CheckerQueue, Task: true, Meaning: "a capture returned a task of another queue (§4.7)"},
	{Name: StaleStatus, Checker: CheckerQueue, Task: true, Meaning: "a set-status by a process whose hold the reaper had ended took effect while a newer capture held the task (§4.7)"},
	{Name: LostTask, Checker: CheckerLiveness, Task: true, Meaning: "a task left in progress to the end with nobody to finish or free it, or capturable with budget left and never captured (again) although asked for (§4.7)"},
}

// Names returns the names of the kinds that keep returns true for, in
// Kinds' order.
func Names(keep func(Kind) bool) []string {
	var out []string
	for _, k := range Kinds {
		if keep(k) {
			out = append(out, k.Name)
		}
	}
	return out
}

// Of returns the names of the kinds checker reports, in Kinds' order.
func Of(checker string) []string {
	return Names(func(k Kind) bool { return k.Checker == checker })
}
