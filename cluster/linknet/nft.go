package linknet

// nft.go holds the nftables side of a Network: its table, the long-lived
// nft shell that applies its rules, the marks of its links, and the
// deletion of the tables dead harnesses left behind.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// TablePrefix begins the name of the nftables table of every Network; the
// rest is the harness's pid and a sequence number, so that a later run can
// tell the tables of dead harnesses and delete them.
const TablePrefix = "jepsen_lite_"

// markBase is or-ed with a link's port to make the conntrack mark of its
// connections. Ports are unique on the host while their link lives, so marks
// are unique across concurrent harnesses.
const markBase = 0x4a4c0000

// markValue returns the conntrack mark of the link's connections.
func (l *link) markValue() uint32 { return uint32(markBase | l.port) }

// mark returns the conntrack mark of the link's connections as nft writes it.
func (l *link) mark() string { return fmt.Sprintf("0x%08x", markBase|l.port) }

// tableScript returns the nft script that creates the table of a Network:
// the maps that translate (DNAT) and mark the links' connections, by address
// or by group id and address, and the sets of marks that the cuts drop and
// the resets answer with a RST, in each direction. A connection translated
// to another host (WithLinkAddress) sends its original direction out of
// the harness, never through its input hook: the cut of that direction is
// dropped in the output hook, where TCP takes a dropped segment as lost and
// retransmits it (a SYN too: the dial waits, it is not refused). The
// resets of such a link (its mark in reset_away_forward, reset_away_back)
// answer its original direction in the output hook and its replies in the
// input hook, and record each connection they answer, its far end first
// (reset_out: the node's end, left on its host; reset_in: the local end,
// left on the harness), for the reset watcher to destroy that end.
func tableScript(table string) string {
	return fmt.Sprintf(`table ip %[1]s {
	map links { type ipv4_addr . inet_service : ipv4_addr . inet_service; }
	map marks { type ipv4_addr . inet_service : mark; }
	map gid_links { type gid . ipv4_addr . inet_service : ipv4_addr . inet_service; }
	map gid_marks { type gid . ipv4_addr . inet_service : mark; }
	set cut_forward { type mark; }
	set cut_back { type mark; }
	set sync { type mark; }
	set reset_forward { type mark; }
	set reset_back { type mark; }
	set reset_away_forward { type mark; }
	set reset_away_back { type mark; }
	set reset_out { type ipv4_addr . inet_service . ipv4_addr . inet_service; flags dynamic; size 65535; }
	set reset_in { type ipv4_addr . inet_service . ipv4_addr . inet_service; flags dynamic; size 65535; }
	chain nat_out {
		type nat hook output priority -100; policy accept;
		ct state new ct mark set ip daddr . tcp dport map @marks
		ct state new ct mark set meta skgid . ip daddr . tcp dport map @gid_marks
		dnat ip to meta skgid . ip daddr . tcp dport map @gid_links
		dnat ip to ip daddr . tcp dport map @links
	}
	chain filter_in {
		type filter hook input priority 0; policy accept;
		ct direction original ct mark @reset_forward tcp flags & rst == 0 reject with tcp reset
		ct direction reply ct mark @reset_back tcp flags & rst == 0 reject with tcp reset
		ct direction reply ct mark @reset_away_back tcp flags & rst == 0 add @reset_in { ip daddr . tcp dport . ip saddr . tcp sport } reject with tcp reset
		ct direction original ct mark @cut_forward drop
		ct direction reply ct mark @cut_back drop
	}
	chain filter_out {
		type filter hook output priority 0; policy accept;
		ct direction original ct mark @reset_away_forward tcp flags & rst == 0 add @reset_out { ip daddr . tcp dport . ip saddr . tcp sport } reject with tcp reset
		ip daddr != 127.0.0.0/8 ct direction original ct mark @cut_forward drop
	}
}
`, table)
}

// nftShell is a long-lived `nft -i` of a Network: a fault takes one
// transaction of about a millisecond instead of starting nft (tens to
// hundreds of milliseconds on a loaded machine), so faults take effect when
// they are scheduled.
type nftShell struct {
	mu    sync.Mutex
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Reader
	table string
}

// startNftShell starts `nft -i` in its own process group (an interrupt of
// the harness's terminal must not end it before the teardown) that dies
// with the harness.
func startNftShell(table string) (*nftShell, error) {
	cmd := exec.Command("nft", "-i")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("start nft -i: %w", err)
	}
	w.Close()
	sh := &nftShell{cmd: cmd, in: in, out: bufio.NewReader(r), table: table}
	if err := sh.run(""); err != nil {
		sh.close()
		return nil, err
	}
	return sh, nil
}

// run runs the script's commands as one transaction and waits until nft
// has done it: the listing of the empty set sync that follows marks the
// end of its output, and any line before it is an error.
func (sh *nftShell) run(script string) error {
	var cmds []string
	for _, line := range strings.Split(script, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			cmds = append(cmds, line)
		}
	}
	var b strings.Builder
	if len(cmds) > 0 {
		b.WriteString(strings.Join(cmds, "; ") + "\n")
	}
	_, err := sh.listings(b.String(), 0)
	return err
}

// list returns the listings of the named sets of the table, one after
// the other.
func (sh *nftShell) list(sets ...string) (string, error) {
	var b strings.Builder
	for _, set := range sets {
		b.WriteString("list set ip " + sh.table + " " + set + "\n")
	}
	return sh.listings(b.String(), len(sets))
}

// listings writes the commands, then the listing of the empty set sync,
// and reads nft's output up to the end of that listing: it returns the
// first count listings (of the commands' own lists), and an error for
// any line outside a listing.
func (sh *nftShell) listings(cmds string, count int) (string, error) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if _, err := io.WriteString(sh.in, cmds+"list set ip "+sh.table+" sync\n"); err != nil {
		return "", fmt.Errorf("nft -i: %w", err)
	}
	var errs []string
	var out strings.Builder
	listing, seen := false, 0
	for {
		line, err := sh.out.ReadString('\n')
		if err != nil {
			return "", fmt.Errorf("nft -i: %w (%s)", err, strings.Join(errs, " "))
		}
		switch {
		case strings.HasPrefix(line, "table ip "+sh.table+" {"):
			listing = true
		case listing && strings.TrimRight(line, "\n") == "}":
			listing = false
			if seen++; seen <= count {
				continue
			}
			if len(errs) > 0 {
				return "", fmt.Errorf("nft: %s", strings.Join(errs, " "))
			}
			return out.String(), nil
		case !listing && seen > 0 && strings.TrimSpace(line) == "":
			// nft separates listings with an empty line.
		case !listing:
			errs = append(errs, strings.TrimSpace(line))
		case seen < count:
			out.WriteString(line)
		}
	}
}

// close ends the shell.
func (sh *nftShell) close() {
	sh.in.Close()
	_ = sh.cmd.Wait()
}

// DeleteStaleTables deletes the nftables tables of harnesses whose process
// is gone (a harness killed with SIGKILL cannot delete its own).
func DeleteStaleTables() error {
	out, err := exec.Command("nft", "list", "tables", "ip").CombinedOutput()
	if err != nil {
		return fmt.Errorf("linknet: nft list tables: %v: %s", err, bytes.TrimSpace(out))
	}
	var errs []error
	for _, line := range strings.Split(string(out), "\n") {
		name, ok := strings.CutPrefix(strings.TrimSpace(line), "table ip "+TablePrefix)
		if !ok {
			continue
		}
		pidText, _, _ := strings.Cut(name, "_")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || processAlive(pid) {
			continue
		}
		if err := nft("delete table ip " + TablePrefix + name + "\n"); err != nil && !strings.Contains(err.Error(), "No such file") {
			errs = append(errs, fmt.Errorf("linknet: delete stale table %s%s: %w", TablePrefix, name, err))
		}
	}
	return errors.Join(errs...)
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// nft runs an nft script.
func nft(script string) error {
	cmd := exec.Command("nft", "-f", "-")
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("nft: %v: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

// ipv4 resolves addr ("host:port") to an IPv4 address and port for nft.
func ipv4(addr string) (string, error) {
	a, err := net.ResolveTCPAddr("tcp4", addr)
	if err != nil {
		return "", fmt.Errorf("linknet: upstream %q: %w", addr, err)
	}
	if a.IP.To4() == nil {
		return "", fmt.Errorf("linknet: upstream %q is not IPv4", addr)
	}
	return fmt.Sprintf("%s . %d", a.IP.To4(), a.Port), nil
}
