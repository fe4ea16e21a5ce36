package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jepsen-lite/jepsen-lite/clients"
	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/lockproto"
	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// withLockCommand returns a copy of sc whose lock (or queue) is the
// external client command (the exec algorithm), also for a stored run of
// a Go Locker of the caller's own (lock.own). The scenario's other lock
// options are kept and handed to the client.
func withLockCommand(sc *scenarios.Scenario, command string) (*scenarios.Scenario, error) {
	if strings.TrimSpace(command) == "" {
		return nil, usagef("--lock-command: empty command")
	}
	c := *sc
	c.Lock.Algorithm, c.Lock.Own = clients.ExecAlgorithm, false
	c.Lock.Options = maps.Clone(sc.Lock.Options)
	if c.Lock.Options == nil {
		c.Lock.Options = map[string]string{}
	}
	c.Lock.Options[clients.ExecCommandOption] = command
	return &c, nil
}

// refuseOwnLock refuses, with one line, a stored run (or scenario) whose
// lock is a Go Locker of the caller's own (lock.own, made in-process with
// runner.WithLocker) given without --lock-command: the command line cannot
// build that lock, so it names the lock and says how to do what was asked
// from Go (fromGo: "lockapi.Replay with the lock's lockapi.Lock") or with a
// command that serves it. Nothing has started when it refuses.
func refuseOwnLock(sc *scenarios.Scenario, fromGo string) error {
	if !sc.Lock.Own {
		return nil
	}
	return usagef("the lock %q is a Go Locker of its own, which the command line cannot build: do it from Go with %s, or give --lock-command with a command that serves the lock (lockapi.Lock.Command, docs/own-lock.md)", sc.Lock.Algorithm, fromGo)
}

const protocolTestUsage = `Usage: jepsen-lite protocol-test --system S --lock-command CMD [flags]

Checks that an external lock client speaks the lock-client protocol
(docs/lock-protocol.md) before any run, against a real server of the
system started on 127.0.0.1: init and its fields, an acquire, a second
process refused the held lock, a release, the lock granted to the other
process under an owner of its own (each process gets its own seed),
not-held for a lease that is gone, renewal and waiting where the client
claims them, the after-response handshake where it claims it, every
until_ms within its call's window and every lease_ms in ms, ids and reply
types, a clean exit at the end of input, and no late reply. Prints each
check and exits 0 when every one held, 1 when one did not.

Examples:
  jepsen-lite protocol-test --system redis --lock-command "python3 examples/anylang/redis_py_lock.py"
  jepsen-lite protocol-test --system zookeeper --lock-command examples/anylang/curator_lock.sh`

func protocolTestCmd(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlagSet("protocol-test", protocolTestUsage, stderr)
	system := fs.String("system", "", "the system the client locks with: redis, postgres, zookeeper, etcd")
	command := fs.String("lock-command", "", "the client's command, run with sh -c")
	ttl := fs.Duration("ttl", 5*time.Second, "the lease the checks ask for")
	nodes := fs.Int("nodes", 1, "server nodes (masters, ensemble members)")
	seed := fs.Uint64("seed", 1, "the test's seed; each process's own seed is drawn from it")
	pos, err := parseArgs(fs, args)
	if errors.Is(err, errHelp) {
		return exitHeld, nil
	}
	if err != nil {
		return exitUsage, err
	}
	switch {
	case len(pos) > 0:
		return exitUsage, usagef("no positional arguments (got %q)", pos)
	case strings.TrimSpace(*command) == "":
		return exitUsage, usagef("--lock-command is required")
	case *ttl <= 0 || *nodes < 1 || *seed == 0:
		return exitUsage, usagef("--ttl, --nodes and --seed must be positive")
	}
	names := runner.Names()
	if !slices.Contains(names.Systems, *system) {
		return exitUsage, usagef("--system %q: want one of %s", *system, strings.Join(names.Systems, ", "))
	}
	net, err := cluster.NewNetwork()
	if err != nil {
		return exitInternal, err
	}
	defer net.Close()
	sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	c, err := runner.LocalBackend(sctx, cluster.Spec{System: *system, Nodes: *nodes}, net)
	cancel()
	if err != nil {
		return exitUsage, usagef("starting %s: %v", *system, err)
	}
	defer c.Close()
	init := lockproto.Init{System: *system, Options: map[string]string{}}
	for _, n := range c.Nodes() {
		init.Endpoints = append(init.Endpoints, lockproto.Endpoint{Name: n.Name, Role: n.Role, Addr: n.Addr})
	}
	cfg := lockproto.Config{
		Command: *command, Init: init,
		Stderr: func(line string) { fmt.Fprintf(stderr, "client stderr: %s\n", line) },
	}
	var eps []string
	for _, e := range init.Endpoints {
		eps = append(eps, e.Name+"@"+e.Addr)
	}
	fmt.Fprintf(stdout, "protocol-test: %s against %s (%s)\n", *command, *system, strings.Join(eps, ", "))
	failed := 0
	for _, ch := range lockproto.Conform(ctx, lockproto.ConformConfig{Config: cfg, TTL: *ttl, Seed: *seed}) {
		mark := "ok  "
		if !ch.Passed {
			mark = "FAIL"
			failed++
		}
		if ch.Detail != "" {
			fmt.Fprintf(stdout, "%s %s: %s\n", mark, ch.Name, ch.Detail)
		} else {
			fmt.Fprintf(stdout, "%s %s\n", mark, ch.Name)
		}
	}
	if ctx.Err() != nil {
		return exitUnknown, nil
	}
	if failed > 0 {
		fmt.Fprintf(stdout, "protocol-test: %d check(s) failed\n", failed)
		return exitViolated, nil
	}
	fmt.Fprintln(stdout, "protocol-test: every check held")
	return exitHeld, nil
}
