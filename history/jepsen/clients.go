package jepsen

import (
	"slices"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// setClients numbers the worker behind every worker op: Client = process mod
// the concurrency that Concurrency infers.
func setClients(h history.History) {
	c := Concurrency(h)
	for i := range h {
		if h[i].Process != history.NemesisProcess {
			h[i].Client = h[i].Process % c
		}
	}
}

// Concurrency infers the number of Jepsen worker threads behind a history's
// processes. Jepsen runs process p on thread p mod concurrency and, when p
// crashes (an :info completion), goes on with process p + concurrency on the
// same thread. The result is the smallest c that is
//   - larger than every process number that appears before the first crash
//     of a worker process (those are all first-generation processes), and
//   - consistent: for each process q, the largest process p < q with
//     p ≡ q (mod c) crashed before q's first op,
//
// so that the processes of one worker follow one another. The number of the
// largest process plus one is always consistent (every process its own
// worker), so there is always a result; it is at least 1.
func Concurrency(h history.History) int {
	type proc struct {
		first int // index of the first op
		crash int // index of the first info completion, -1 for none
	}
	procs := map[int]*proc{}
	firstCrash := len(h)
	for i, op := range h {
		if op.Process == history.NemesisProcess || op.Process < 0 {
			continue
		}
		p := procs[op.Process]
		if p == nil {
			p = &proc{first: i, crash: -1}
			procs[op.Process] = p
		}
		if op.Type == history.Info && p.crash < 0 {
			p.crash = i
			firstCrash = min(firstCrash, i)
		}
	}
	if len(procs) == 0 {
		return 1
	}
	nums := make([]int, 0, len(procs))
	for n := range procs {
		nums = append(nums, n)
	}
	slices.Sort(nums)
	lower := 1
	for _, n := range nums {
		if procs[n].first < firstCrash {
			lower = max(lower, n+1)
		}
	}
	consistent := func(c int) bool {
		last := map[int]int{} // residue → the largest process seen so far
		for _, q := range nums {
			if p, ok := last[q%c]; ok {
				if pp := procs[p]; pp.crash < 0 || pp.crash > procs[q].first {
					return false
				}
			}
			last[q%c] = q
		}
		return true
	}
	top := nums[len(nums)-1] + 1
	for c := lower; c < top; c++ {
		if consistent(c) {
			return c
		}
	}
	return top
}
