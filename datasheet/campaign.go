package datasheet

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/jepsen-lite/jepsen-lite/hunt"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// CampaignFile is what `hunt --json` writes and `matrix` reads: one
// campaign's base and settings beside its report, so that a datasheet row
// says what was hunted, how and on what.
type CampaignFile struct {
	// Target is hunt's argument: an algorithm, a scenario or a file.
	Target string `json:"target"`
	// LockCommand is the external lock client hunted with; empty for the
	// scenario's algorithm.
	LockCommand string `json:"lock_command,omitempty"`
	Algorithm   string `json:"algorithm"`
	System      string `json:"system"`
	Topology    string `json:"topology,omitempty"`
	Nodes       int    `json:"nodes"`
	Workers     int    `json:"workers"`
	// Duration is each run's length and TTL the lock's lease.
	Duration time.Duration `json:"duration_ns"`
	TTL      time.Duration `json:"ttl_ns"`
	// RunsPerKind, Seed, Backend and Faults are the campaign's options
	// (Faults empty: every applicable kind).
	RunsPerKind int          `json:"runs_per_kind"`
	Seed        uint64       `json:"seed"`
	Backend     string       `json:"backend"`
	Faults      []string     `json:"faults,omitempty"`
	Report      *hunt.Report `json:"report"`
	// Finished is when the campaign ended (the last part's end, for
	// merged parts).
	Finished time.Time `json:"finished"`
	// Shard is the part of the campaign's runs the file holds (hunt
	// --shard i/n); nil for a whole campaign. A part is not laid out as a
	// datasheet row: its parts are merged first (MergeParts).
	Shard *hunt.Shard `json:"shard,omitempty"`
	// MergedParts is the number of parts merged into the file (hunt
	// --merge), whose Report.Elapsed is then the sum of theirs; 0 for a
	// campaign made in one piece.
	MergedParts int `json:"merged_parts,omitempty"`
	// EndedEarly says why the campaign ended before its last run (an
	// interruption, an error); empty when it ran to its end or its budget.
	EndedEarly string `json:"ended_early,omitempty"`
}

// NewCampaignFile returns the campaign file of a hunt of target (with
// lockCommand, when set) from base with opts, which reported rep; it
// finished now. A campaign of one part of several (opts.Shard) is marked
// with its part.
func NewCampaignFile(target, lockCommand string, base *scenarios.Scenario, opts hunt.Options, rep *hunt.Report) *CampaignFile {
	c := &CampaignFile{
		Target: target, LockCommand: lockCommand, Algorithm: base.Lock.Algorithm,
		System: base.System.Name, Topology: base.System.Topology, Nodes: base.System.Nodes,
		Workers: base.Workers, Duration: base.Duration, TTL: base.Lock.TTL,
		RunsPerKind: opts.Runs, Seed: opts.Seed, Backend: opts.Backend, Faults: opts.Faults,
		Report: rep, Finished: time.Now(),
	}
	if opts.Shard.Count > 1 {
		sh := opts.Shard
		c.Shard = &sh
	}
	return c
}

// Write writes c to path as indented JSON.
func (c *CampaignFile) Write(path string) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// ReadCampaignFile reads a campaign file; an error names the file.
func ReadCampaignFile(path string) (*CampaignFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c CampaignFile
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s: not a campaign file: %v", path, err)
	}
	if c.Report == nil || c.Target == "" {
		return nil, fmt.Errorf("%s: not a campaign file: no target or report", path)
	}
	return &c, nil
}
