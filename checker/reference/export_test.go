package reference

import "github.com/jepsen-lite/jepsen-lite/history"

// Culprits counts the culprits §4.1 finds in h (over all keys).
func Culprits(h history.History, d float64) int { return len(leaseModel(parse(h), d, false)) }

// CheckCuttingEvery is Check with each key's lease model cut at every
// quiescent point, not only after a culprit (see leaseModel).
func CheckCuttingEvery(h history.History, d float64) (Result, error) { return check(h, d, true) }
