package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster/ssh"
	"github.com/jepsen-lite/jepsen-lite/cluster/ssh/nshosts"
)

const hostsUsage = `Usage: jepsen-lite hosts up --inventory FILE [--count N]

Makes N hosts of network namespaces on this machine for the ssh backend to
run on (root; ip and Debian's sshd): a private bridge in a namespace of its
own, N namespaces on it, each with an address of a free /24 of
10.231.0.0/16 and an sshd of its own listening only there, and one address
of the harness's on the bridge. It writes their inventory to FILE, prints
one line per host, and stays up until Ctrl-C or SIGTERM; then it removes
everything it made (the namespaces, the bridge and its veth pairs, the sshd
processes, the keys and FILE) and exits 0. Nothing reaches the machine's
other networks.

There is no "hosts down": stopping "hosts up" is the only way down, so
hosts never outlive the command that made them. An sshd dies with it even
under SIGKILL; what a killed "hosts up" left (namespaces, its dir, FILE) the
next "hosts up" removes, or overwrites.

Examples:
  sudo jepsen-lite hosts up --count 6 --inventory /tmp/hosts.yaml
  # in another terminal, while it is up:
  sudo jepsen-lite gate --tags quick --backend ssh --inventory /tmp/hosts.yaml`

// inventoryMark begins the first line of an inventory that "hosts up"
// writes; its pid follows.
const inventoryMark = "written by jepsen-lite hosts up, pid "

// hostsCmd runs "hosts up".
func hostsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprintln(stderr, hostsUsage)
		return exitHeld, nil
	}
	if len(args) == 0 || args[0] != "up" {
		return exitUsage, usagef(`want "hosts up --inventory FILE [--count N]"`)
	}
	fs := newFlagSet("hosts up", hostsUsage, stderr)
	count := fs.Int("count", 5, "how many hosts")
	inventory := fs.String("inventory", "", "write the hosts' inventory to this file (removed when the hosts are)")
	pos, err := parseArgs(fs, args[1:])
	if errors.Is(err, errHelp) {
		return exitHeld, nil
	}
	if err != nil {
		return exitUsage, err
	}
	if len(pos) > 0 {
		return exitUsage, usagef("hosts up takes no argument, got %q", pos[0])
	}
	if err := checkCount("count", *count, 1, nshosts.MaxCount); err != nil {
		return exitUsage, err
	}
	if err := checkInventoryOut(*inventory); err != nil {
		return exitUsage, err
	}
	if err := nshosts.Check(); err != nil {
		return exitUsage, usageError{oneLine(err)}
	}
	return hostsUp(ctx, *count, *inventory, stdout, stderr)
}

// checkInventoryOut returns a usage error naming file when "hosts up"
// cannot write its inventory there: no file given, its dir missing, or a
// file there that a live "hosts up", or anything else, wrote.
func checkInventoryOut(file string) error {
	if file == "" {
		return usagef("--inventory FILE is required: the file to write the hosts' inventory to")
	}
	if st, err := os.Stat(filepath.Dir(file)); err != nil || !st.IsDir() {
		return usagef("--inventory %s: its dir %s does not exist", file, filepath.Dir(file))
	}
	f, err := os.Open(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return usagef("--inventory %s: %v", file, err)
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	pidText, ok := strings.CutPrefix(strings.TrimSpace(line), "# "+inventoryMark)
	pid, err := strconv.Atoi(pidText)
	switch {
	case !ok || err != nil:
		return usagef("--inventory %s: the file exists and is not one that hosts up wrote; give another", file)
	case syscall.Kill(pid, 0) == nil:
		return usagef("--inventory %s: the hosts of a hosts up still running (pid %d) are there; stop it first", file, pid)
	}
	return nil
}

// hostsUp creates the hosts, writes their inventory and waits for ctx to
// end, then removes both.
func hostsUp(ctx context.Context, count int, file string, stdout, stderr io.Writer) (int, error) {
	fmt.Fprintf(stderr, "jepsen-lite hosts up: making %d hosts\n", count)
	hosts, err := nshosts.Create(ctx, nshosts.Options{Count: count})
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "jepsen-lite hosts up: interrupted while making the hosts; nothing is left")
			return exitUnknown, nil
		}
		return exitInternal, err
	}
	inv := ssh.NamespaceInventory(hosts)
	header := inventoryMark + strconv.Itoa(os.Getpid()) + "\nhosts made of network namespaces; removed with them when hosts up stops"
	if err := inv.Write(file, header); err != nil {
		return exitInternal, errors.Join(err, hosts.Close())
	}
	for _, h := range inv.Hosts {
		fmt.Fprintf(stdout, "%s %s  ssh -i %s -o UserKnownHostsFile=%s %s@%s\n", h.Name, h.Address, h.Key, h.KnownHosts, h.User, h.Address)
	}
	fmt.Fprintf(stderr, "jepsen-lite hosts up: %d hosts up, the harness at %s; inventory %s (--backend ssh --inventory %s); Ctrl-C removes them\n", count, inv.Harness, file, file)
	<-ctx.Done()
	began := time.Now()
	err = hosts.Close()
	if rerr := os.Remove(file); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		err = errors.Join(err, rerr)
	}
	if err != nil {
		return exitInternal, err
	}
	fmt.Fprintf(stderr, "jepsen-lite hosts up: removed the hosts and %s in %v\n", file, time.Since(began).Round(time.Millisecond))
	return exitHeld, nil
}

// oneLine returns err with its lines joined by "; ", for a message of one
// line.
func oneLine(err error) error {
	return errors.New(strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; "))
}
