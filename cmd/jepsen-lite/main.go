// Command jepsen-lite runs fault-injection scenarios against real lock
// services and checks the recorded histories for mutual-exclusion and
// fencing violations.
//
// Exit codes: 0 when what was asked held (check: the history is valid; run,
// gate: every expectation was met), 1 when it did not, 2 when the answer is
// unknown (an interrupted command too: Ctrl-C, SIGTERM, or a second one,
// which quits at once), 254 for bad usage or input, 255 for an internal
// error.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/jepsen-lite/jepsen-lite/clients"
)

// The exit codes of docs/design.md §8.
const (
	exitHeld     = 0
	exitViolated = 1
	exitUnknown  = 2
	exitUsage    = 254
	exitInternal = 255
)

// errInterrupted reports a command cut short by Ctrl-C (or SIGTERM): its
// exit code is exitUnknown.
var errInterrupted = errors.New("interrupted")

// unlessInterrupted runs work, which does not itself watch ctx, and
// returns its error, or errInterrupted as soon as ctx ends: work is then
// left to the process's exit, so it must hold nothing that needs undoing
// (it reads, or writes only what is renamed into place at its end).
func unlessInterrupted(ctx context.Context, work func() error) error {
	done := make(chan error, 1)
	go func() { done <- work() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return errInterrupted
	}
}

// usageError is bad usage or bad input: exit 254 with its one-line message.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error)
}

func commands() []command {
	return []command{
		{"run", "run a scenario against real servers and check it", runCmd},
		{"check", "check a stored history offline", checkCmd},
		{"list", "list scenarios, algorithms or faults", listCmd},
		{"gate", "run scenarios over seeds as a CI regression gate", gateCmd},
		{"hunt", "hunt with random faults of every kind the lock's system can take", huntCmd},
		{"shrink", "search a failing run for a smaller scenario that still fails", shrinkCmd},
		{"matrix", "render the safety datasheet of hunt campaigns (hunt --json)", matrixCmd},
		{"report", "regenerate a run's report.html offline", reportCmd},
		{"serve", "browse the stored runs in a web page", serveCmd},
		{"protocol-test", "check that an external lock client speaks the protocol", protocolTestCmd},
		{"hosts", "make hosts of network namespaces with sshd for the ssh backend, until Ctrl-C", hostsCmd},
	}
}

const topUsage = `jepsen-lite: fault-injection tests and safety checks for distributed locks.

Usage: jepsen-lite <command> [arguments]

Commands:
%s
Examples:
  jepsen-lite run redis-single-gc-pause       # Kleppmann's GC pause on real Redis
  jepsen-lite check store/latest              # re-check the newest run offline
  jepsen-lite list --algorithms

Run 'jepsen-lite <command> --help' for a command's flags and examples.
`

func main() {
	// go-redis prints every failed dial; during a partition that is noise,
	// and what matters is in the history.
	clients.SilenceRedisLogs()
	ctx, stop := interruptible(os.Stderr, os.Exit)
	code := dispatch(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// interruptible returns the context of a command: the first SIGINT
// (Ctrl-C) or SIGTERM cancels it, and every phase of every command ends
// within a second of that, keeps what was recorded and tears down what it
// started; the command then says "interrupted" and exits 2 (exitUnknown).
// A second signal ends the process at once with exitUnknown too, through
// exit, even while the teardown runs: what it leaves behind (servers,
// kernel rules, namespaces, temp dirs) the next run of the harness removes.
// stop ends the handling of signals.
func interruptible(stderr io.Writer, exit func(code int)) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-signals:
		case <-done:
			return
		}
		fmt.Fprintln(stderr, "jepsen-lite: interrupted: stopping; interrupt again to quit at once")
		cancel()
		select {
		case <-signals:
		case <-done:
			return
		}
		fmt.Fprintln(stderr, "jepsen-lite: interrupted again: quitting now; the next run removes what is left")
		exit(exitUnknown)
	}()
	return ctx, func() {
		signal.Stop(signals)
		close(done)
		cancel()
	}
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmds := commands()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		printTopUsage(stderr, cmds)
		if len(args) == 0 {
			return exitUsage
		}
		return exitHeld
	}
	for _, c := range cmds {
		if c.name == args[0] {
			code, err := c.run(ctx, args[1:], stdout, stderr)
			if err != nil {
				var ue usageError
				switch {
				case errors.As(err, &ue):
					fmt.Fprintf(stderr, "jepsen-lite %s: %v\n", c.name, err)
					return exitUsage
				default:
					fmt.Fprintf(stderr, "jepsen-lite %s: %v\n", c.name, err)
					if code == exitHeld {
						code = exitInternal
					}
				}
			}
			return code
		}
	}
	fmt.Fprintf(stderr, "jepsen-lite: unknown command %q\n", args[0])
	printTopUsage(stderr, cmds)
	return exitUsage
}

func printTopUsage(w io.Writer, cmds []command) {
	var list string
	for _, c := range cmds {
		list += fmt.Sprintf("  %-13s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, topUsage, list)
}
