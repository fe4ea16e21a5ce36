package reference

import "github.com/jepsen-lite/jepsen-lite/history"

// Culprits counts the culprits §4.1 finds in h (over all keys).
func Culprits(h history.History, d float64) int { return len(leaseModel(parse(h), d)) }
