package main

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// harnessTable matches the name of a harness's nftables table and its pid.
var harnessTable = regexp.MustCompile(`^table ip (jepsen_lite_(\d+)_\d+)`)

// kernelState is what a run may change in the kernel: the nftables ruleset
// (without the tables of other live harnesses, which run concurrently on a
// shared machine), the network namespaces, the addresses and lo's qdiscs.
func kernelState(t *testing.T, ours ...int) string {
	t.Helper()
	var b strings.Builder
	for _, c := range [][]string{{"nft", "-s", "list", "ruleset"}, {"ip", "netns", "list"}, {"ip", "addr"}, {"tc", "qdisc", "show", "dev", "lo"}} {
		out, err := exec.Command(c[0], c[1:]...).CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v: %s", c, err, out)
		}
		b.WriteString("# " + strings.Join(c, " ") + "\n")
		skip := false
		for _, line := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(line, "table ") {
				skip = false
				if m := harnessTable.FindStringSubmatch(line); m != nil {
					pid, _ := strconv.Atoi(m[2])
					mine := false
					for _, p := range ours {
						mine = mine || p == pid
					}
					if !mine && syscall.Kill(pid, 0) == nil {
						skip = true // another live harness's table
						continue
					}
				}
			}
			// Blank lines only separate tables: another harness's table
			// that comes and goes moves them, and they say nothing.
			if !skip && strings.TrimSpace(line) != "" {
				b.WriteString(line + "\n")
			}
		}
	}
	return b.String()
}

// partitionScenario is a short Redis run whose partitions and resets are on
// from 300ms until its end, so that an interrupt finds kernel rules in place.
const partitionScenario = `name: leftovers
description: partitions and resets that are on when the run is interrupted
source: the network's cleanup
tags: [redis, partition]
system:
  name: redis
  nodes: 3
lock:
  algorithm: redlock
  ttl: 1s
resource: unfenced
workers: 3
duration: 2s
quiet: 500ms
nemesis:
  steps:
    - {at: 300ms, fault: partition, targets: [n1], duration: 10s}
    - {at: 300ms, fault: partition, targets: [w1], duration: 10s, options: {nodes: n2, direction: inbound}}
    - {at: 300ms, fault: reset, targets: [w2], duration: 10s, options: {nodes: n3}}
expect:
  verdict: valid
`

// TestNetworkLeavesNothingBehind runs a scenario with partitions to its
// end, a run that fails to start, and ten runs interrupted with SIGINT
// while their faults are on, and requires the kernel's network state to be
// as it was before each.
func TestNetworkLeavesNothingBehind(t *testing.T) {
	dir := t.TempDir()
	scenario := filepath.Join(dir, "leftovers.yaml")
	if err := os.WriteFile(scenario, []byte(partitionScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	check := func(t *testing.T, before string, pid int) {
		t.Helper()
		if after := kernelState(t, pid); after != before {
			t.Errorf("the kernel's network state changed:\n%s", lineDiff(before, after))
		}
		if out, err := exec.Command("pgrep", "-P", strconv.Itoa(pid)).Output(); err == nil {
			t.Errorf("processes of the harness left: %s", out)
		}
	}
	t.Run("a run", func(t *testing.T) {
		before := kernelState(t)
		cmd := exec.Command(binary, "run", scenario, "--store", t.TempDir())
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("run: %v\n%s", err, out)
		}
		check(t, before, cmd.Process.Pid)
	})
	t.Run("a failed run", func(t *testing.T) {
		bad := filepath.Join(dir, "bad.yaml")
		body := strings.Replace(partitionScenario, "algorithm: redlock", "algorithm: redlock\n  options: {no-such-option: 1}", 1)
		if err := os.WriteFile(bad, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		before := kernelState(t)
		cmd := exec.Command(binary, "run", bad, "--store", t.TempDir())
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Fatalf("a run with a bad lock option succeeded:\n%s", out)
		}
		check(t, before, cmd.Process.Pid)
	})
	for i := range 10 {
		t.Run("interrupted "+strconv.Itoa(i), func(t *testing.T) {
			before := kernelState(t)
			cmd := exec.Command(binary, "run", scenario, "--store", t.TempDir(), "-v")
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill() })
			go func() { _, _ = io.Copy(io.Discard, stderr) }()
			// Wait until the run's resets are in its table.
			table := regexp.MustCompile(`table ip (jepsen_lite_` + strconv.Itoa(cmd.Process.Pid) + `_\d+)`)
			deadline := time.Now().Add(60 * time.Second)
			for {
				out, _ := exec.Command("nft", "list", "tables", "ip").Output()
				if m := table.FindSubmatch(out); m != nil {
					set, _ := exec.Command("nft", "list", "set", "ip", string(m[1]), "reset_forward").Output()
					if strings.Contains(string(set), "elements") {
						break
					}
				}
				if time.Now().After(deadline) {
					t.Fatal("the run's faults were not in the kernel within 60 s")
				}
				time.Sleep(20 * time.Millisecond)
			}
			if got := kernelState(t, cmd.Process.Pid); got == before {
				t.Error("no kernel state of the run was seen while its faults were on")
			}
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			check(t, before, cmd.Process.Pid)
		})
	}
}

// lineDiff returns the lines only before has ("-") and only after has ("+").
func lineDiff(before, after string) string {
	count := map[string]int{}
	for _, l := range strings.Split(before, "\n") {
		count[l]++
	}
	for _, l := range strings.Split(after, "\n") {
		count[l]--
	}
	var b strings.Builder
	for l, c := range count {
		for ; c > 0; c-- {
			b.WriteString("- " + l + "\n")
		}
		for ; c < 0; c++ {
			b.WriteString("+ " + l + "\n")
		}
	}
	return b.String()
}
