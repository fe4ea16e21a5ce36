package linknet

// conntrack.go holds what a Network reads of the kernel's connection
// tracking and the socket table: the marks of tracked connections, and the
// destruction (ss -K) of a link's connections.

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// killConns destroys (ss -K) every TCP socket whose peer is one of the
// links' addresses: the dialling ends of their connections. The kernel
// sends a RST to the other end, so both ends close.
func killConns(ls []*link) error {
	ls = local(ls)
	if len(ls) == 0 {
		return nil
	}
	var terms []string
	for _, l := range ls {
		terms = append(terms, "dst "+l.addr)
	}
	args := []string{"-K", "-t", "-n", "-H", "state", "connected", "( " + strings.Join(terms, " or ") + " )"}
	if out, err := exec.Command("ss", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("linknet: ss -K: %v: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

// conntrackPath is the kernel's listing of the connections it tracks
// (CONFIG_NF_CONNTRACK_PROCFS), the one place that tells which per-source
// link a connection to a shared address belongs to.
const conntrackPath = "/proc/net/nf_conntrack"

// trackedMarks returns the conntrack mark of every tracked TCP connection,
// by the two ends of its original direction ("127.0.0.1:40000
// 127.0.0.1:41000": the dialling address, then the address it dialled,
// before translation).
func trackedMarks() (map[string]uint32, error) {
	f, err := os.Open(conntrackPath)
	if err != nil {
		return nil, fmt.Errorf("linknet: the connections of a per-source link are found in %s: %w", conntrackPath, err)
	}
	defer f.Close()
	out := map[string]uint32{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var src, dst, sport, dport, mark string
		for _, field := range strings.Fields(sc.Text()) {
			k, v, ok := strings.Cut(field, "=")
			if !ok {
				continue
			}
			// The first of each is the original direction's.
			switch {
			case k == "src" && src == "":
				src = v
			case k == "dst" && dst == "":
				dst = v
			case k == "sport" && sport == "":
				sport = v
			case k == "dport" && dport == "":
				dport = v
			case k == "mark":
				mark = v
			}
		}
		m, err := strconv.ParseUint(mark, 0, 32)
		if err != nil || sport == "" || dport == "" {
			continue
		}
		out[net.JoinHostPort(src, sport)+" "+net.JoinHostPort(dst, dport)] = uint32(m)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("linknet: read %s: %w", conntrackPath, err)
	}
	return out, nil
}

// killSourceConns destroys (ss -K) the dialling ends of the per-source
// links' connections, those to each one's shared address with its mark:
// one read of the kernel's connections and one ss for all. The kernel
// sends a RST to the other end, so both ends close.
func killSourceConns(ls []*link) error {
	if len(ls) == 0 {
		return nil
	}
	marks, err := trackedMarks()
	if err != nil {
		return err
	}
	var terms []string
	for _, l := range ls {
		var from []string
		for ends, m := range marks {
			if src, to, _ := strings.Cut(ends, " "); m == l.markValue() && to == l.addr {
				from = append(from, "src "+src)
			}
		}
		if len(from) > 0 {
			terms = append(terms, "( dst "+l.addr+" and ( "+strings.Join(from, " or ")+" ) )")
		}
	}
	if len(terms) == 0 {
		return nil
	}
	args := []string{"-K", "-t", "-n", "-H", "state", "connected", "( " + strings.Join(terms, " or ") + " )"}
	if out, err := exec.Command("ss", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("linknet: ss -K: %v: %s", err, bytes.TrimSpace(out))
	}
	return nil
}
