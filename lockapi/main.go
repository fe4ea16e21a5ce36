package lockapi

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
)

// LockEnv names the environment variable by which a lock's command (Lock's
// Command) tells the program it starts which Lock to serve: Main serves the
// Lock of that name.
const LockEnv = "JEPSEN_LITE_LOCKAPI"

// Lock is a lock of one's own as a program of the user's serves it to the
// harness: its name, which selects it (LockEnv) and which the run's report
// shows, the factory of its Lockers, and what it declares of itself.
type Lock struct {
	Name    string
	Factory Factory
	// Client is what the run's report and run.log name the client by
	// (init_ok's client); empty gives the name, "Go lockapi" and the Go
	// version.
	Client string
	// System is the system the lock locks with: redis, postgres,
	// zookeeper, etcd or mariadb. Hunt requires it: it hunts on the
	// system's plain baseline (`jepsen-lite hunt --system`).
	System string
	// Tokens declares that the lock's leases carry fencing tokens
	// (Lease.Token). Only then may Hunt draw a fenced register; without it
	// every run's register is unfenced.
	Tokens bool
	// SelfRenewing declares that the lock renews its leases by itself (a
	// watchdog of its own, no Renewer). Only then may Hunt draw a hold
	// longer than the lease in a run that drew no renewal.
	SelfRenewing bool
}

// client is the name the Lock gives itself in init_ok.
func (l Lock) client() string {
	if l.Client != "" {
		return l.Client
	}
	return fmt.Sprintf("%s (Go lockapi, %s)", l.Name, runtime.Version())
}

// Main serves, on standard input and output, the Lock that LockEnv names,
// when it names one of locks, and returns the process's exit code and true:
// the caller then exits with that code (the harness started this program as
// the lock's command). When LockEnv is empty it returns 0 and false, and the
// program goes on. A program or test calls it first, before anything writes
// to standard output:
//
//	func TestMain(m *testing.M) {
//		if code, served := lockapi.Main(myLock); served {
//			os.Exit(code)
//		}
//		os.Exit(m.Run())
//	}
//
// The exit code is 0 after the harness closed the input, 1 when serving
// failed, and 2 when LockEnv names no Lock of locks; the reason is on
// standard error, which the harness writes into run.log.
func Main(locks ...Lock) (code int, served bool) {
	name := os.Getenv(LockEnv)
	if name == "" {
		return 0, false
	}
	for _, l := range locks {
		if l.Name != name {
			continue
		}
		if err := Serve(context.Background(), os.Stdin, os.Stdout, l.client(), l.Factory); err != nil {
			fmt.Fprintf(os.Stderr, "%v\n", err)
			return 1, true
		}
		return 0, true
	}
	fmt.Fprintf(os.Stderr, "lockapi: %s=%s names no lock this program serves (it serves %s)\n", LockEnv, name, names(locks))
	return 2, true
}

// names lists the locks' names, quoted and separated by commas.
func names(locks []Lock) string {
	var out []string
	for _, l := range locks {
		out = append(out, fmt.Sprintf("%q", l.Name))
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// Command is the shell command (the harness runs it with sh -c) that starts
// this program again as the lock's client: LockEnv set to the lock's name,
// then the running executable (os.Executable), with -test.run=^$ added when
// it is a test binary, so that no test runs in it. The program must call
// Main first (in main or TestMain) for the command to serve the lock.
func (l Lock) Command() (string, error) {
	if l.Name == "" || l.Factory == nil {
		return "", errors.New("lockapi: a Lock needs a Name and a Factory")
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("lockapi: the lock's command: %w", err)
	}
	cmd := LockEnv + "=" + shellQuote(l.Name) + " " + shellQuote(exe)
	if flag.Lookup("test.run") != nil {
		cmd += " " + shellQuote("-test.run=^$")
	}
	return cmd, nil
}

// shellQuote is s as one word of sh: in single quotes, each single quote
// of s ending the quoted part, escaped with a backslash, and reopening it.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
