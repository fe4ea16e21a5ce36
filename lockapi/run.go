package lockapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// BinaryEnv names the environment variable that gives the path of the
// jepsen-lite command that Run, Replay, Shrink and ProtocolTest run.
const BinaryEnv = "JEPSEN_LITE_BIN"

// ErrNoBinary is the error of Run, Replay, Shrink and ProtocolTest when no
// jepsen-lite command can be found.
var ErrNoBinary = errors.New("lockapi: no jepsen-lite command: run `make build` in the jepsen-lite checkout (it writes bin/jepsen-lite), or set " + BinaryEnv + "=/path/to/jepsen-lite")

// Option sets how Run, Replay, Shrink, Hunt, Datasheet and ProtocolTest run the
// harness.
type Option func(*options)

// options is what the Options set.
type options struct {
	binary    string
	store     string
	seed      *uint64
	timeLimit time.Duration
	output    io.Writer
	shrink    []string // shrink's budget flags
	// faults, runs, steer and huntShrink are Hunt's (WithFaults, WithRuns,
	// WithSteer, WithHuntShrink).
	faults     string
	runs       int
	steer      bool
	huntShrink bool
	// campaignFile is where Hunt keeps its campaign file
	// (WithCampaignFile); empty removes it.
	campaignFile string
}

// WithBinary runs the jepsen-lite command at path.
func WithBinary(path string) Option { return func(o *options) { o.binary = path } }

// WithStore stores the run under dir (the command's --store; its default
// is "store" in the working directory).
func WithStore(dir string) Option { return func(o *options) { o.store = dir } }

// WithSeed gives the run its seed (--seed).
func WithSeed(seed uint64) Option { return func(o *options) { o.seed = &seed } }

// WithTimeLimit overrides the scenario's duration (--time-limit).
func WithTimeLimit(d time.Duration) Option { return func(o *options) { o.timeLimit = d } }

// WithOutput copies what the command prints, standard output and error,
// to w as well.
func WithOutput(w io.Writer) Option { return func(o *options) { o.output = w } }

// WithShrinkBudget gives Shrink its budget: each candidate's runs at most
// (--tries), how many of them must fail (--need), the runs that measure how
// often the shrunk scenario fails (--confirm) and the search's runs at most
// (--max-runs).
func WithShrinkBudget(tries, need, confirm, maxRuns int) Option {
	return func(o *options) {
		o.shrink = []string{"--tries", strconv.Itoa(tries), "--need", strconv.Itoa(need), "--confirm", strconv.Itoa(confirm), "--max-runs", strconv.Itoa(maxRuns)}
	}
}

// Binary returns the jepsen-lite command the Options run: WithBinary's
// path; else BinaryEnv's; else bin/jepsen-lite of the checkout this package
// was compiled from (a replace of this module by the checkout's lockapi
// directory finds the checkout's build); else jepsen-lite on PATH; else
// ErrNoBinary.
func Binary(opts ...Option) (string, error) {
	o := collect(opts)
	if o.binary != "" {
		return o.binary, nil
	}
	if p := os.Getenv(BinaryEnv); p != "" {
		return p, nil
	}
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		p := filepath.Join(filepath.Dir(file), "..", "bin", "jepsen-lite")
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return filepath.Clean(p), nil
		}
	}
	if p, err := exec.LookPath("jepsen-lite"); err == nil {
		return p, nil
	}
	return "", ErrNoBinary
}

// collect applies opts.
func collect(opts []Option) options {
	var o options
	for _, f := range opts {
		f(&o)
	}
	return o
}

// Run runs scenario (a catalog name or a scenario file) against lock with
// `jepsen-lite run <scenario> --lock-command <lock's command>`, and returns
// what its results.json says. The program must serve the lock when started
// again (Main, first thing in main or TestMain). A run that ended (valid,
// invalid or unknown, whether its expectation was met or not) returns its
// Result and nil; a run that could not be made (bad input, a client that
// broke the protocol, setup failed) returns an error with the command's
// own line, and the Result when the command stored a run.
func Run(ctx context.Context, scenario string, lock Lock, opts ...Option) (*Result, error) {
	return runCLI(ctx, lock, []string{"run", scenario}, opts)
}

// Replay runs the stored run in dir again, its scenario, seed and fault
// schedule, against lock (`jepsen-lite run --replay <dir> --lock-command
// <lock's command>`), as Run does.
func Replay(ctx context.Context, dir string, lock Lock, opts ...Option) (*Result, error) {
	return runCLI(ctx, lock, []string{"run", "--replay", dir}, opts)
}

// runCLI runs the command with args, the lock's command and the options'
// flags, and reads the run it stored.
func runCLI(ctx context.Context, lock Lock, args []string, opts []Option) (*Result, error) {
	o := collect(opts)
	cmdline, err := lock.Command()
	if err != nil {
		return nil, err
	}
	args = append(args, "--quiet", "--lock-command", cmdline)
	if o.store != "" {
		args = append(args, "--store", o.store)
	}
	if o.seed != nil {
		args = append(args, "--seed", strconv.FormatUint(*o.seed, 10))
	}
	if o.timeLimit > 0 {
		args = append(args, "--time-limit", o.timeLimit.String())
	}
	stdout, stderr, code, err := command(ctx, o, args)
	if err != nil {
		return nil, err
	}
	res, readErr := readRun(stdout)
	if res != nil {
		res.ExitCode = code
	}
	if code > 2 {
		return res, fmt.Errorf("lockapi: jepsen-lite %s: exit %d: %s", args[0], code, lastLine(stderr))
	}
	return res, readErr
}

// command runs the jepsen-lite command with args and returns what it
// printed and its exit code; the error is for a command that could not be
// run at all.
func command(ctx context.Context, o options, args []string) (stdout, stderr string, code int, err error) {
	bin, err := Binary(func(x *options) { *x = o })
	if err != nil {
		return "", "", 0, err
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	// An ended ctx is the command's Ctrl-C: it heals, keeps what was
	// recorded and tears down within a second; a kill would leave the run's
	// network rules behind.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = interruptWait
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if o.output != nil {
		cmd.Stdout, cmd.Stderr = io.MultiWriter(&out, o.output), io.MultiWriter(&errOut, o.output)
	}
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return out.String(), errOut.String(), exit.ExitCode(), nil
	case err != nil:
		return "", "", 0, fmt.Errorf("lockapi: running %s: %w", bin, err)
	}
	return out.String(), errOut.String(), 0, nil
}

// interruptWait is how long the command has to end after its interrupt
// before it is killed.
const interruptWait = 30 * time.Second

// Shrink searches, from the stored run in dir that failed (its verdict
// invalid), for a smaller scenario that still fails against lock
// (`jepsen-lite shrink <dir> --lock-command <lock's command>`, docs/shrink.md),
// and returns the path of the shrunk.yaml it wrote into dir. The error
// says why none was written (the run did not fail again, the failure was
// too rare) with the command's own line.
func Shrink(ctx context.Context, dir string, lock Lock, opts ...Option) (string, error) {
	cmdline, err := lock.Command()
	if err != nil {
		return "", err
	}
	o := collect(opts)
	args := append([]string{"shrink", dir, "--lock-command", cmdline}, o.shrink...)
	_, stderr, code, err := command(ctx, o, args)
	if err != nil {
		return "", err
	}
	if code != 0 {
		return "", fmt.Errorf("lockapi: jepsen-lite shrink: exit %d: %s", code, lastLine(stderr))
	}
	return filepath.Join(dir, "shrunk.yaml"), nil
}

// lastLine is the last line of s that is not blank.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// ProtocolTest checks that lock speaks the lock-client protocol against a
// real server of system (`jepsen-lite protocol-test --system <system>
// --lock-command <lock's command>`), and returns what the command printed:
// the error is nil only when every check held.
func ProtocolTest(ctx context.Context, system string, lock Lock, opts ...Option) (string, error) {
	cmdline, err := lock.Command()
	if err != nil {
		return "", err
	}
	args := []string{"protocol-test", "--system", system, "--lock-command", cmdline}
	if o := collect(opts); o.seed != nil {
		args = append(args, "--seed", strconv.FormatUint(*o.seed, 10))
	}
	stdout, stderr, code, err := command(ctx, collect(opts), args)
	if err != nil {
		return "", err
	}
	if code != 0 {
		return stdout + stderr, fmt.Errorf("lockapi: jepsen-lite protocol-test: exit %d: %s", code, lastLine(stdout+stderr))
	}
	return stdout + stderr, nil
}

// readRun finds the run directory in the command's summary (its "store:"
// line) and reads the run's results.json; nil when the command stored none.
func readRun(stdout string) (*Result, error) {
	dir := ""
	for line := range strings.Lines(stdout) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "store:"); ok {
			dir = strings.TrimSpace(rest)
		}
	}
	if dir == "" {
		return nil, errors.New("lockapi: the command's summary names no run directory (no \"store:\" line)")
	}
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		return &Result{Dir: dir}, fmt.Errorf("lockapi: the run's results: %w", err)
	}
	return decodeResults(dir, b)
}
