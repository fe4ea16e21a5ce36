package ssh

// leftovers.go holds what a run leaves on its hosts while it lasts, a dir
// named with the harness's host name and pid, and its removal: by Close,
// and by the next run from the same harness when the one that made it died
// before it could (SIGKILL, a second Ctrl-C during the teardown).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// runDirPrefix begins the name of every run's dir on a host:
// "jepsen-lite-ssh-<harness>-<pid>-<seq>".
const runDirPrefix = "jepsen-lite-ssh-"

// runDirName returns the name of a run's dir on its hosts.
func runDirName(harness string, pid int, seq int64) string {
	return fmt.Sprintf("%s%s-%d-%d", runDirPrefix, harness, pid, seq)
}

// harnessName returns the harness's host name as a run's dir names it:
// letters, digits, dots and underscores only.
func harnessName() string {
	name, err := os.Hostname()
	if err != nil || name == "" {
		name = "harness"
	}
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' {
			return r
		}
		return '_'
	}, name)
}

// runDirPid returns the pid in the name of a run's dir that this harness's
// host made; ok is false for any other name.
func runDirPid(name, harness string) (pid int, ok bool) {
	rest, ok := strings.CutPrefix(name, runDirPrefix+harness+"-")
	if !ok {
		return 0, false
	}
	return pidAndSeq(rest, "-")
}

// tablePid returns the pid in the name of a run's nftables table that
// this harness's host made (tableName); ok is false for any other name.
func tablePid(name, harness string) (pid int, ok bool) {
	prefix := tableName(runDirName(harness, 0, 0))
	prefix = strings.TrimSuffix(prefix, "0_0")
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0, false
	}
	return pidAndSeq(rest, "_")
}

// killRunScript kills, with SIGKILL, every server of the run dir dir whose
// working dir is its node's dir or below it, with its process group (that
// of the shell that started it, in the file group), and removes the run
// dir.
func killRunScript(dir string) string {
	return ownedFunc + `for f in ` + quote(dir) + `/*/pid; do
  [ -f "$f" ] || continue
  p=$(cat "$f")
  g=$(cat "$(dirname "$f")/group" 2>/dev/null)
  (cd "$(dirname "$f")" && owned "$p" && kill -KILL "$p")
  [ -n "$g" ] && (cd "$(dirname "$f")" && owned "$g" && kill -KILL -"$g")
done
rm -rf ` + quote(dir) + "\n"
}

// sweep removes, on the connection's host, the run dirs, servers and
// nftables tables that harnesses of this host left there and whose process
// is gone.
func sweep(ctx context.Context, c *conn) error {
	harness := harnessName()
	out, err := c.run(ctx, "cd "+quote(c.host.dir())+" && ls -d "+runDirPrefix+harness+"-* 2>/dev/null; nft list tables 2>/dev/null; true", nil)
	if err != nil {
		return fmt.Errorf("ssh: leftovers: %w", err)
	}
	var script strings.Builder
	for _, name := range strings.Fields(out) {
		pid, ok := runDirPid(name, harness)
		if ok && pid != os.Getpid() && !processAlive(pid) {
			script.WriteString(killRunScript(c.host.dir() + "/" + name))
		}
		if pid, ok := tablePid(name, harness); ok && pid != os.Getpid() && !processAlive(pid) {
			script.WriteString("nft delete table ip " + name + "\n")
		}
	}
	if script.Len() == 0 {
		return nil
	}
	if _, err := c.run(ctx, script.String(), nil); err != nil {
		return fmt.Errorf("ssh: delete leftovers: %w", err)
	}
	return nil
}

// DeleteLeftovers removes from every host of the inventory what harnesses
// of this host that are gone left there: their run dirs and their servers.
// Start does it on the hosts it uses before it starts anything.
func DeleteLeftovers(ctx context.Context, inv Inventory) error {
	var errs []error
	for _, h := range inv.Hosts {
		c, err := dial(ctx, h)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, sweep(ctx, c))
		c.close()
	}
	return errors.Join(errs...)
}

// Remains returns a check to call after Close: what of the cluster is
// left on its hosts (its run dir, a server that runs from it, its nftables
// table), nothing
// when all is gone. It looks on the hosts over SSH connections of its own.
func (c *Cluster) Remains() func() []string {
	inv, run := c.inv, c.run
	return func() []string {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var out []string
		for _, h := range inv.Hosts {
			conn, err := dial(ctx, h)
			if err != nil {
				out = append(out, fmt.Sprintf("%s: cannot look: %v", h.Name, err))
				continue
			}
			dir := h.dir() + "/" + run
			script := `[ -e ` + quote(dir) + ` ] && echo "dir ` + dir + `"
nft list tables 2>/dev/null | grep -x "table ip ` + tableName(run) + `"
ls -l /proc/[0-9]*/cwd 2>/dev/null | grep -F -- ` + quote(run) + ` | sed 's|.* /proc/\([0-9]*\)/cwd .*|process \1 in ` + dir + `|'
true`
			got, err := conn.run(ctx, script, nil)
			conn.close()
			if err != nil {
				out = append(out, fmt.Sprintf("%s: cannot look: %v", h.Name, err))
			}
			for _, line := range strings.Split(strings.TrimSpace(got), "\n") {
				if line != "" {
					out = append(out, h.Name+": "+line)
				}
			}
		}
		return out
	}
}

// processAlive reports whether a process of this host has the pid.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// pidAndSeq returns the pid of "<pid><sep><seq>", the end of a run's dir
// or table name; ok is false unless both are numbers and the pid positive.
func pidAndSeq(rest, sep string) (pid int, ok bool) {
	pidText, seqText, ok := strings.Cut(rest, sep)
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(pidText)
	if _, serr := strconv.Atoi(seqText); err != nil || serr != nil || pid <= 0 {
		return 0, false
	}
	return pid, true
}
