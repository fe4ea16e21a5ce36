package datasheet

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/jepsen-lite/jepsen-lite/hunt"
)

// ReadParts reads the campaign files of the parts of one campaign at paths
// and merges them (MergeParts); an error names the files.
func ReadParts(paths []string) (*CampaignFile, error) {
	var files []*CampaignFile
	for _, p := range paths {
		c, err := ReadCampaignFile(p)
		if err != nil {
			return nil, err
		}
		files = append(files, c)
	}
	return MergeParts(files, paths)
}

// MergeParts returns the campaign file of the whole campaign whose parts
// (hunt --shard i/n) are files, named names in errors, in any order: its
// settings are theirs, its report their reports merged (hunt.MergeParts:
// the first failing run of a kind is the lowest seed's of any part, and
// Elapsed is the sum of the parts'), MergedParts says how many parts it
// holds, and it finished when the last part did. It refuses, naming the
// files, a file that is not a part, parts of different campaigns (another
// target, lock, system, topology, workload, runs per kind, seed, fault
// kinds, backend, steering or number of parts), a part given twice, a
// set of parts with one missing, and a part that ended early (interrupted,
// or ended by its Stop): a merge is never part of a campaign.
func MergeParts(files []*CampaignFile, names []string) (*CampaignFile, error) {
	if len(files) == 0 {
		return nil, fmt.Errorf("merge: no campaign files")
	}
	for i, c := range files {
		switch {
		case c.Shard == nil:
			return nil, fmt.Errorf("merge: %s is a whole campaign, not a part of one (hunt --shard i/n --json FILE)", names[i])
		case c.Shard.Count < 2 || c.Shard.Index < 1 || c.Shard.Index > c.Shard.Count:
			return nil, fmt.Errorf("merge: %s says it is part %d/%d: not a part", names[i], c.Shard.Index, c.Shard.Count)
		case c.EndedEarly != "":
			return nil, fmt.Errorf("merge: %s, part %d/%d, ended early (%s): make the part again", names[i], c.Shard.Index, c.Shard.Count, c.EndedEarly)
		case c.Report.Stopped != "":
			return nil, fmt.Errorf("merge: %s, part %d/%d, stopped after its run %s: the whole campaign would have stopped elsewhere", names[i], c.Shard.Index, c.Shard.Count, c.Report.Stopped)
		}
		if what, a, b := differ(files[0], c); what != "" {
			return nil, fmt.Errorf("merge: %s and %s are parts of different campaigns: %s %s and %s", names[0], names[i], what, a, b)
		}
	}
	order := make([]int, len(files))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(files[a].Shard.Index, files[b].Shard.Index) })
	n := files[0].Shard.Count
	var have []string
	for k, i := range order {
		if k > 0 && files[order[k-1]].Shard.Index == files[i].Shard.Index {
			return nil, fmt.Errorf("merge: %s and %s are both part %d/%d", names[order[k-1]], names[i], files[i].Shard.Index, n)
		}
		have = append(have, fmt.Sprint(files[i].Shard.Index))
	}
	if len(order) != n {
		return nil, fmt.Errorf("merge: %s hold parts %s of %d: %s missing", strings.Join(names, ", "), strings.Join(have, ", "), n, missing(files, n))
	}
	var reports []*hunt.Report
	for _, i := range order {
		reports = append(reports, files[i].Report)
	}
	rep, err := hunt.MergeParts(reports)
	if err != nil {
		return nil, fmt.Errorf("merge: %s: %v", strings.Join(names, ", "), err)
	}
	whole := *files[order[0]]
	whole.Report, whole.Shard, whole.MergedParts = rep, nil, n
	for _, c := range files {
		if c.Finished.After(whole.Finished) {
			whole.Finished = c.Finished
		}
	}
	return &whole, nil
}

// differ returns the first setting in which campaign files a and b differ,
// with a's and b's values; "" when they are of one campaign.
func differ(a, b *CampaignFile) (what, av, bv string) {
	settings := func(c *CampaignFile) [][2]string {
		return [][2]string{
			{"target", c.Target}, {"lock command", c.LockCommand}, {"algorithm", c.Algorithm},
			{"system", c.System}, {"topology", c.Topology}, {"nodes", fmt.Sprint(c.Nodes)},
			{"workers", fmt.Sprint(c.Workers)}, {"duration", c.Duration.String()}, {"ttl", c.TTL.String()},
			{"runs per kind", fmt.Sprint(c.RunsPerKind)}, {"seed", fmt.Sprint(c.Seed)},
			{"backend", c.Backend}, {"faults", fmt.Sprintf("%q", c.Faults)},
			{"scenario", c.Report.Scenario}, {"steer", fmt.Sprint(c.Report.Steer)},
			{"parts", fmt.Sprint(c.Shard.Count)},
		}
	}
	sa, sb := settings(a), settings(b)
	for k := range sa {
		if sa[k][1] != sb[k][1] {
			return sa[k][0], fmt.Sprintf("%q", sa[k][1]), fmt.Sprintf("%q", sb[k][1])
		}
	}
	return "", "", ""
}

// missing says which of parts 1..n files lack: "part 3 is", "parts 2, 4
// are".
func missing(files []*CampaignFile, n int) string {
	var gone []string
	for i := 1; i <= n; i++ {
		if !slices.ContainsFunc(files, func(c *CampaignFile) bool { return c.Shard.Index == i }) {
			gone = append(gone, fmt.Sprint(i))
		}
	}
	if len(gone) == 1 {
		return "part " + gone[0] + " is"
	}
	return "parts " + strings.Join(gone, ", ") + " are"
}
