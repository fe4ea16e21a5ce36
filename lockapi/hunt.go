package lockapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// WithFaults restricts Hunt to these fault kinds (--faults; "none" is the
// runs without faults); every kind the lock's system can take by default.
func WithFaults(kinds ...string) Option {
	return func(o *options) { o.faults = strings.Join(kinds, ",") }
}

// WithRuns gives Hunt its runs per fault kind (--runs; 10 by default).
func WithRuns(n int) Option { return func(o *options) { o.runs = n } }

// WithSteer steers Hunt's schedules by their safety margins (--steer)
// instead of drawing every one at random.
func WithSteer() Option { return func(o *options) { o.steer = true } }

// WithHuntShrink ends Hunt by shrinking the first failing run of each
// fault kind that found something (--shrink).
func WithHuntShrink() Option { return func(o *options) { o.huntShrink = true } }

// WithCampaignFile keeps Hunt's campaign file (`hunt --json`) at path, so
// that Datasheet can make the lock's row of a safety datasheet from it; the
// row is named by the file, without .json. Without it the file is removed
// once read.
func WithCampaignFile(path string) Option { return func(o *options) { o.campaignFile = path } }

// Campaign is what Hunt found, read from the campaign file that
// `jepsen-lite hunt --json` wrote.
type Campaign struct {
	// Base is the scenario the campaign varied: the baseline of the
	// lock's System (redis-single-baseline for redis).
	Base string
	// Runs counts the campaign's runs, and Elapsed is its wall time.
	Runs    int
	Elapsed time.Duration
	// Kinds are the campaign's rows, one per fault kind ("none" first).
	Kinds []Kind
	// ExitCode is the command's: 0 nothing found, 1 some run invalid, 2
	// interrupted, out of its budget or no run decided.
	ExitCode int
}

// Kind is one fault kind's row of a Campaign.
type Kind struct {
	Fault string
	// Runs counts the kind's runs, Invalid those invalid and Unknown
	// those whose verdict is unknown.
	Runs, Invalid, Unknown int
	// Anomalies are the kinds of anomaly the invalid runs found.
	Anomalies []string
	// Failing are the directories of the invalid runs, first the first
	// (Shrink and Replay take one).
	Failing []string
	// Margin is the smallest safety margin of the kind's runs, in lease
	// lengths, when HasMargin.
	Margin    float64
	HasMargin bool
	// NotApplicable says why the kind could not run; empty when it ran.
	NotApplicable string
	// SetupGaveUp, when not empty, says that the kind's runs stopped
	// after several in a row failed their setup (a server that would not
	// start), and the last one's error: those runs count as unknown, and
	// the kind's other runs were not made. Empty when it made its runs.
	SetupGaveUp string
}

// Found reports whether some run of the campaign was invalid.
func (c *Campaign) Found() bool {
	for _, k := range c.Kinds {
		if k.Invalid > 0 {
			return true
		}
	}
	return false
}

// Hunt hunts for what breaks lock (`jepsen-lite hunt --lock-command <lock's
// command> --system <lock's System> [--lock-tokens] [--lock-self-renewing]`,
// docs/hunt.md): per fault kind, random runs of the system's baseline with
// the workload drawn from each run's seed, waiting and renewal only as the
// lock's Locker can, a fenced register only when lock declares Tokens, and
// a hold longer than the lease without a drawn renewal only when it
// declares SelfRenewing. It returns the
// campaign; a campaign that could not be made (bad input, no System)
// returns an error with the command's own line.
func Hunt(ctx context.Context, lock Lock, opts ...Option) (*Campaign, error) {
	cmdline, err := lock.Command()
	if err != nil {
		return nil, err
	}
	if lock.System == "" {
		return nil, errors.New("lockapi: Hunt needs the Lock's System: redis, postgres, zookeeper, etcd or mariadb")
	}
	o := collect(opts)
	file := o.campaignFile
	if file == "" {
		dir, err := os.MkdirTemp("", "lockapi-hunt-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		file = filepath.Join(dir, "campaign.json")
	}
	args := append([]string{"hunt", "--quiet", "--lock-command", cmdline, "--system", lock.System, "--json", file}, huntFlags(lock, o)...)
	_, stderr, code, err := command(ctx, o, args)
	if err != nil {
		return nil, err
	}
	if code > 2 {
		return nil, fmt.Errorf("lockapi: jepsen-lite hunt: exit %d: %s", code, lastLine(stderr))
	}
	c, err := readCampaign(file)
	if err != nil {
		return nil, fmt.Errorf("lockapi: jepsen-lite hunt: exit %d, %w: %s", code, err, lastLine(stderr))
	}
	c.ExitCode = code
	return c, nil
}

// huntFlags are hunt's flags from the lock's declarations and the options.
func huntFlags(lock Lock, o options) []string {
	var args []string
	if lock.Tokens {
		args = append(args, "--lock-tokens")
	}
	if lock.SelfRenewing {
		args = append(args, "--lock-self-renewing")
	}
	if o.faults != "" {
		args = append(args, "--faults", o.faults)
	}
	if o.runs > 0 {
		args = append(args, "--runs", strconv.Itoa(o.runs))
	}
	if o.timeLimit > 0 {
		args = append(args, "--time-limit", o.timeLimit.String())
	}
	if o.store != "" {
		args = append(args, "--store", o.store)
	}
	if o.seed != nil {
		args = append(args, "--seed", strconv.FormatUint(*o.seed, 10))
	}
	if o.steer {
		args = append(args, "--steer")
	}
	if o.huntShrink {
		args = append(args, "--shrink")
	}
	return args
}

// campaignFile is the part of a campaign file a Campaign reads.
type campaignFile struct {
	Report struct {
		Scenario string        `json:"scenario"`
		Runs     int           `json:"runs"`
		Elapsed  time.Duration `json:"elapsed_ns"`
		Rows     []struct {
			Fault         string   `json:"fault"`
			Runs          int      `json:"runs"`
			Invalid       int      `json:"invalid"`
			Unknown       int      `json:"unknown"`
			Anomalies     []string `json:"anomalies"`
			Failing       []string `json:"failing"`
			Margin        float64  `json:"margin"`
			HasMargin     bool     `json:"has_margin"`
			NotApplicable string   `json:"not_applicable"`
			SetupGaveUp   string   `json:"setup_gave_up"`
		} `json:"rows"`
	} `json:"report"`
}

// readCampaign reads the campaign file at path.
func readCampaign(path string) (*Campaign, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("no campaign file: %w", err)
	}
	var f campaignFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("the campaign file: %w", err)
	}
	r := f.Report
	c := &Campaign{Base: r.Scenario, Runs: r.Runs, Elapsed: r.Elapsed}
	for _, row := range r.Rows {
		c.Kinds = append(c.Kinds, Kind{Fault: row.Fault, Runs: row.Runs, Invalid: row.Invalid, Unknown: row.Unknown,
			Anomalies: row.Anomalies, Failing: row.Failing, Margin: row.Margin, HasMargin: row.HasMargin, NotApplicable: row.NotApplicable,
			SetupGaveUp: row.SetupGaveUp})
	}
	return c, nil
}

// Datasheet writes to out, as Markdown, the safety datasheet of the
// campaign files (`jepsen-lite matrix --out out campaigns...`, docs/matrix.md):
// one row per file, named by the file without .json, one column per fault
// kind, each cell safe, unsafe (with its anomalies), not decided or n/a.
// A lock of one's own gets its row from the file Hunt kept
// (WithCampaignFile); the built-in algorithms' rows are the checkout's
// docs/matrix/campaigns/*.json, and a datasheet of both puts the lock
// beside them. The error has the command's own line.
func Datasheet(ctx context.Context, out string, campaigns []string, opts ...Option) error {
	if len(campaigns) == 0 {
		return errors.New("lockapi: Datasheet needs at least one campaign file")
	}
	args := append([]string{"matrix", "--out", out}, campaigns...)
	_, stderr, code, err := command(ctx, collect(opts), args)
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("lockapi: jepsen-lite matrix: exit %d: %s", code, lastLine(stderr))
	}
	return nil
}
