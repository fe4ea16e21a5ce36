package cluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/rs/zerolog"
)

// ErrNoLink reports that a link name is not known to the Network.
var ErrNoLink = errors.New("cluster: no such link")

// ErrNetworkClosed reports a use of a Network after Close.
var ErrNetworkClosed = errors.New("cluster: network closed")

// LinkSeparator separates the two ends of a link name: "w3->n1" is worker 3's
// link to node n1, "n2->n1" is node n2's link to node n1. When one pair of
// ends needs several links (a ZooKeeper server reaches a peer on a quorum
// port and an election port), the extra ones carry a purpose after
// LinkPurposeSeparator: "n2->n1/election".
const LinkSeparator = "->"

// LinkPurposeSeparator separates a link's "to" end from its purpose.
const LinkPurposeSeparator = "/"

// LinkName returns the conventional name of the link from one end to another,
// for instance LinkName("w3", "n1") == "w3->n1".
func LinkName(from, to string) string { return from + LinkSeparator + to }

// SplitLinkName returns the two ends of a link name, without the purpose
// ("n2->n1/election" gives "n2", "n1"); ok is false when the name does not
// follow the "from->to" convention.
func SplitLinkName(name string) (from, to string, ok bool) {
	from, to, ok = strings.Cut(name, LinkSeparator)
	to, _, _ = strings.Cut(to, LinkPurposeSeparator)
	return from, to, ok
}

// FaultKind names what a Fault does to a link.
type FaultKind string

// The fault kinds a Network can apply.
const (
	// FaultCut drops, in the kernel, every packet of the link's connections
	// (in the fault's Direction), as a cut cable would: connections stay
	// open, the senders' TCP keeps the unacknowledged data and retransmits
	// it, and new connections hang in SYN_SENT. Healing lets the next
	// retransmission through: what waited is delivered and nothing is
	// closed. A connection ends during a cut only when the OS ends it (see
	// docs/network.md: retransmission timeout, keepalive, TCP_USER_TIMEOUT).
	FaultCut FaultKind = "cut"
	// FaultReset resets (TCP RST) each connection of the link as soon as
	// data flows on it, until healed: the kernel answers the packet with a
	// RST, and the connection's other end is reset right after (see
	// resetWatch). A new connection's SYN is answered with a RST (refused).
	// It is the one fault that closes connections.
	FaultReset FaultKind = "reset"
	// FaultLatency delays the data the upstream sends back (replies) by
	// Delay ± Jitter, so a request/reply round trip gains about Delay. It
	// needs a Network made WithProxies.
	FaultLatency FaultKind = "latency"
)

// Direction says which packets of a link a cut drops, or a reset answers
// with a RST.
type Direction string

// The directions of a cut.
const (
	// DirectionBoth drops the packets of both ends (the default).
	DirectionBoth Direction = ""
	// DirectionForward drops only what the link's "from" end sends to its
	// "to" end (requests; a new connection's SYN).
	DirectionForward Direction = "forward"
	// DirectionBack drops only what the "to" end sends back (replies; a
	// new connection's SYN-ACK).
	DirectionBack Direction = "back"
)

// Fault is a network fault applied to a set of links until healed.
type Fault struct {
	Kind      FaultKind
	Direction Direction     // FaultCut, FaultReset: which packets are dropped or reset
	Delay     time.Duration // FaultLatency: the added delay
	Jitter    time.Duration // FaultLatency: the random variation of the delay
}

// check reports an error for a fault the Network cannot apply.
func (f Fault) check(proxied bool) error {
	switch f.Kind {
	case FaultCut, FaultReset:
		switch f.Direction {
		case DirectionBoth, DirectionForward, DirectionBack:
			return nil
		}
		return fmt.Errorf("cluster: unknown %s direction %q (known: forward, back, or empty for both)", f.Kind, f.Direction)
	case FaultLatency:
		if f.Delay < 0 || f.Jitter < 0 {
			return fmt.Errorf("cluster: latency fault with negative delay %v or jitter %v", f.Delay, f.Jitter)
		}
		if !proxied {
			return fmt.Errorf("%w: latency needs a network whose links go through proxies (cluster.WithProxies)", ErrUnavailable)
		}
		return nil
	default:
		return fmt.Errorf("cluster: unknown fault kind %q", f.Kind)
	}
}

// toxicPrefix marks the toxics this package adds, so Heal removes exactly those.
const toxicPrefix = "jepsen-lite-"

// toxicSpec is one toxiproxy toxic in the JSON form toxiproxy parses.
type toxicSpec struct {
	Name       string         `json:"name"`
	Type       string         `json:"type"`
	Stream     string         `json:"stream"`
	Toxicity   float32        `json:"toxicity"`
	Attributes map[string]any `json:"attributes"`
}

// latencyToxic returns the toxiproxy toxic of a latency fault.
func (f Fault) latencyToxic() toxicSpec {
	return toxicSpec{
		Name: toxicPrefix + "latency-downstream", Type: "latency", Stream: "downstream", Toxicity: 1,
		Attributes: map[string]any{"latency": f.Delay.Milliseconds(), "jitter": f.Jitter.Milliseconds()},
	}
}

// TablePrefix begins the name of the nftables table of every Network; the
// rest is the harness's pid and a sequence number, so that a later run can
// tell the tables of dead harnesses and delete them.
const TablePrefix = "jepsen_lite_"

// markBase is or-ed with a link's port to make the conntrack mark of its
// connections. Ports are unique on the host while their link lives, so marks
// are unique across concurrent harnesses.
const markBase = 0x4a4c0000

// NetworkOption configures NewNetwork.
type NetworkOption func(*Network)

// WithProxies makes every link go through a TCP proxy (toxiproxy) embedded
// in the harness, which the latency fault needs. It costs about three times
// a direct round trip; cuts and resets stay in the kernel either way.
func WithProxies() NetworkOption { return func(n *Network) { n.proxied = true } }

// link is one link: a reserved address that the kernel translates (DNAT) to
// the link's target, and the faults on it.
type link struct {
	name     string
	addr     string       // the reserved address clients dial: 127.0.0.1:port
	port     int          // its port, also the low half of the conntrack mark
	reserve  net.Listener // holds the port so no other socket takes it
	upstream string       // what the link reaches
	target   string       // what the kernel translates addr to: upstream, or the proxy
	proxy    *toxiproxy.Proxy

	kernel  map[Fault]int // the cuts and resets on the link (Kind and Direction), counted
	latency bool

	// A per-source link (LinkFrom): addr is the shared address, port the
	// link's own reserved port, which only makes its mark unique.
	shared *sharedAddr
	gid    int // the primary group id of the processes whose connections it carries
}

// sharedAddr is the address the per-source links to one upstream share: a
// port reserved like a link's, which the kernel translates only for the
// processes of a per-source link.
type sharedAddr struct {
	addr    string
	port    int
	reserve net.Listener
	links   int // the per-source links on it
}

// gidKey returns the per-source link's key in the maps gid_links and
// gid_marks: its group id and the shared address.
func (l *link) gidKey() string { return fmt.Sprintf("%d . 127.0.0.1 . %d", l.gid, l.shared.port) }

// markValue returns the conntrack mark of the link's connections.
func (l *link) markValue() uint32 { return uint32(markBase | l.port) }

func (l *link) mark() string { return fmt.Sprintf("0x%08x", markBase|l.port) }

func (l *link) faulty() bool { return l.latency || len(l.kernel) > 0 }

// resetting reports whether a reset is on the link.
func (l *link) resetting() bool {
	for f := range l.kernel {
		if f.Kind == FaultReset {
			return true
		}
	}
	return false
}

// Network is the network of a cluster: every client-to-node and
// node-to-node connection goes through a link, an address of its own on
// 127.0.0.1 that the kernel translates to the link's upstream (nftables
// DNAT in a table of this Network's own), so an unfaulted link costs
// nothing in the data path. Faults are kernel rules on the link's
// connections (identified by a conntrack mark set when they open): cuts
// drop packets, resets answer with RST. With WithProxies every link also
// passes through an embedded toxiproxy proxy, for latency. A per-source
// link (LinkFrom) is told apart by the process that dials: servers that
// must all dial one address still get a link per pair. Its methods are
// safe for concurrent use.
type Network struct {
	mu      sync.Mutex
	table   string
	proxied bool
	server  *toxiproxy.ApiServer
	links   map[string]*link
	shared  map[string]*sharedAddr // upstream -> the address its per-source links share
	closed  bool

	watching  bool          // a resetWatch runs
	stop      chan struct{} // closed by Close: resetWatch ends
	watchDone chan struct{}

	sh *nftShell // the Network's nft -i

	pmu   sync.Mutex      // held while the ends of reset links' connections are looked at
	pairs map[string]bool // the dialling addresses of reset links' connections seen with both ends
}

var tableSeq atomic.Int64

// NewNetwork creates the Network's nftables table (deleting first what dead
// harnesses left behind: DeleteLeftovers) and returns the Network with no
// link. It needs nft and CAP_NET_ADMIN.
func NewNetwork(opts ...NetworkOption) (*Network, error) {
	n := &Network{links: map[string]*link{}, shared: map[string]*sharedAddr{}, stop: make(chan struct{})}
	for _, o := range opts {
		o(n)
	}
	if n.proxied {
		n.server = toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	}
	if err := DeleteLeftovers(); err != nil {
		return nil, err
	}
	n.table = fmt.Sprintf("%s%d_%d", TablePrefix, os.Getpid(), tableSeq.Add(1))
	script := fmt.Sprintf(`table ip %[1]s {
	map links { type ipv4_addr . inet_service : ipv4_addr . inet_service; }
	map marks { type ipv4_addr . inet_service : mark; }
	map gid_links { type gid . ipv4_addr . inet_service : ipv4_addr . inet_service; }
	map gid_marks { type gid . ipv4_addr . inet_service : mark; }
	set cut_forward { type mark; }
	set cut_back { type mark; }
	set sync { type mark; }
	set reset_forward { type mark; }
	set reset_back { type mark; }
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
		ct direction original ct mark @cut_forward drop
		ct direction reply ct mark @cut_back drop
	}
}
`, n.table)
	if err := nft(script); err != nil {
		return nil, fmt.Errorf("cluster: create the network's nftables table (needs nft and CAP_NET_ADMIN): %w", err)
	}
	sh, err := startNftShell(n.table)
	if err != nil {
		_ = nft("delete table ip " + n.table + "\n")
		return nil, fmt.Errorf("cluster: %w", err)
	}
	n.sh = sh
	return n, nil
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
	sh.mu.Lock()
	defer sh.mu.Unlock()
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
	b.WriteString("list set ip " + sh.table + " sync\n")
	if _, err := io.WriteString(sh.in, b.String()); err != nil {
		return fmt.Errorf("nft -i: %w", err)
	}
	var errs []string
	listing := false
	for {
		line, err := sh.out.ReadString('\n')
		if err != nil {
			return fmt.Errorf("nft -i: %w (%s)", err, strings.Join(errs, " "))
		}
		switch {
		case strings.HasPrefix(line, "table ip "+sh.table+" {"):
			listing = true
		case listing && strings.TrimRight(line, "\n") == "}":
			if len(errs) > 0 {
				return fmt.Errorf("nft: %s", strings.Join(errs, " "))
			}
			return nil
		case !listing:
			errs = append(errs, strings.TrimSpace(line))
		}
	}
}

// close ends the shell.
func (sh *nftShell) close() {
	sh.in.Close()
	_ = sh.cmd.Wait()
}

// Table returns the name of the Network's nftables table (family ip).
func (n *Network) Table() string { return n.table }

// DeleteStaleTables deletes the nftables tables of harnesses whose process
// is gone (a harness killed with SIGKILL cannot delete its own).
func DeleteStaleTables() error {
	out, err := exec.Command("nft", "list", "tables", "ip").CombinedOutput()
	if err != nil {
		return fmt.Errorf("cluster: nft list tables: %v: %s", err, bytes.TrimSpace(out))
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
			errs = append(errs, fmt.Errorf("cluster: delete stale table %s%s: %w", TablePrefix, name, err))
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

// killConns destroys (ss -K) every TCP socket whose peer is one of the
// links' addresses: the dialling ends of their connections. The kernel
// sends a RST to the other end, so both ends close.
func killConns(ls []*link) error {
	if len(ls) == 0 {
		return nil
	}
	var terms []string
	for _, l := range ls {
		terms = append(terms, "dst "+l.addr)
	}
	args := []string{"-K", "-t", "-n", "-H", "state", "connected", "( " + strings.Join(terms, " or ") + " )"}
	if out, err := exec.Command("ss", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("cluster: ss -K: %v: %s", err, bytes.TrimSpace(out))
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
		return nil, fmt.Errorf("cluster: the connections of a per-source link are found in %s: %w", conntrackPath, err)
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
		return nil, fmt.Errorf("cluster: read %s: %w", conntrackPath, err)
	}
	return out, nil
}

// killSourceConns destroys (ss -K) the dialling ends of the per-source
// link's connections, those to its shared address with its mark; the
// kernel sends a RST to the other end, so both ends close.
func killSourceConns(l *link) error {
	marks, err := trackedMarks()
	if err != nil {
		return err
	}
	var terms []string
	for ends, m := range marks {
		if from, to, _ := strings.Cut(ends, " "); m == l.markValue() && to == l.addr {
			terms = append(terms, "src "+from)
		}
	}
	if len(terms) == 0 {
		return nil
	}
	args := []string{"-K", "-t", "-n", "-H", "state", "connected", "dst", l.addr, "and", "( " + strings.Join(terms, " or ") + " )"}
	if out, err := exec.Command("ss", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("cluster: ss -K: %v: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

// ipv4 resolves addr ("host:port") to an IPv4 address and port for nft.
func ipv4(addr string) (string, error) {
	a, err := net.ResolveTCPAddr("tcp4", addr)
	if err != nil {
		return "", fmt.Errorf("cluster: upstream %q: %w", addr, err)
	}
	if a.IP.To4() == nil {
		return "", fmt.Errorf("cluster: upstream %q is not IPv4", addr)
	}
	return fmt.Sprintf("%s . %d", a.IP.To4(), a.Port), nil
}

// Link creates the link named name to upstream and returns the address it
// is reached on (127.0.0.1 and a port reserved for it). Names are unique; by
// convention they are LinkName(from, to).
func (n *Network) Link(name, upstream string) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return "", ErrNetworkClosed
	}
	if name == "" || upstream == "" {
		return "", fmt.Errorf("cluster: link needs a name and an upstream (got %q, %q)", name, upstream)
	}
	if _, ok := n.links[name]; ok {
		return "", fmt.Errorf("cluster: link %q already exists", name)
	}
	reserve, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("cluster: reserve an address for link %q: %w", name, err)
	}
	l := &link{name: name, reserve: reserve, upstream: upstream, kernel: map[Fault]int{}}
	l.addr = reserve.Addr().String()
	l.port = reserve.Addr().(*net.TCPAddr).Port
	target := upstream
	if n.proxied {
		p := toxiproxy.NewProxy(n.server, name, "127.0.0.1:0", upstream)
		if err := n.server.Collection.Add(p, true); err != nil {
			reserve.Close()
			return "", fmt.Errorf("cluster: start the proxy of link %q: %w", name, err)
		}
		l.proxy = p
		target = p.Listen
	}
	l.target = target
	to, err := ipv4(target)
	if err == nil {
		err = n.sh.run(fmt.Sprintf("add element ip %[1]s links { 127.0.0.1 . %[2]d : %[3]s }\nadd element ip %[1]s marks { 127.0.0.1 . %[2]d : %[4]s }\n",
			n.table, l.port, to, l.mark()))
	}
	if err != nil {
		reserve.Close()
		if l.proxy != nil {
			_ = n.server.Collection.Remove(name)
		}
		return "", fmt.Errorf("cluster: link %q: %w", name, err)
	}
	n.links[name] = l
	return l.addr, nil
}

// LinkFrom creates the per-source link named name: it carries the
// connections that processes whose primary group id is gid open to the
// address that every per-source link to upstream shares, and it returns
// that address. Servers that must all dial one advertised address of a
// peer (etcd derives member ids from the advertised peer URLs) then still
// get a link per pair, when each runs with a group id of its own: the
// kernel sets the conntrack mark of a new connection from the dialling
// socket's group id (nftables meta skgid) and the address it dials, so a
// cut or reset of the link hits that server's connections only, in both
// directions. The link reserves a port of its own only for the uniqueness
// of its mark. A connection to the shared address from a process of any
// other group id is not translated: it reaches no server (it waits in the
// backlog of the socket that reserves the address). gid must be positive
// (0 is root's group, the harness's own), and one group id has one link
// to an upstream. The shared address is released with its last link.
func (n *Network) LinkFrom(name string, gid int, upstream string) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return "", ErrNetworkClosed
	}
	if name == "" || upstream == "" {
		return "", fmt.Errorf("cluster: link needs a name and an upstream (got %q, %q)", name, upstream)
	}
	if gid <= 0 || gid >= 1<<32-1 {
		return "", fmt.Errorf("cluster: per-source link %q: group id %d is out of range (1 to 4294967294)", name, gid)
	}
	if _, ok := n.links[name]; ok {
		return "", fmt.Errorf("cluster: link %q already exists", name)
	}
	to, err := ipv4(upstream)
	if err != nil {
		return "", err
	}
	s := n.shared[upstream]
	if s == nil {
		reserve, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			return "", fmt.Errorf("cluster: reserve the shared address of %s: %w", upstream, err)
		}
		s = &sharedAddr{addr: reserve.Addr().String(), port: reserve.Addr().(*net.TCPAddr).Port, reserve: reserve}
		n.shared[upstream] = s
	}
	for _, o := range n.links {
		if o.shared == s && o.gid == gid {
			n.releaseShared(upstream, s)
			return "", fmt.Errorf("cluster: per-source link %q: group id %d already has the link %q to %s", name, gid, o.name, upstream)
		}
	}
	reserve, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		n.releaseShared(upstream, s)
		return "", fmt.Errorf("cluster: reserve a mark for link %q: %w", name, err)
	}
	l := &link{name: name, addr: s.addr, reserve: reserve, upstream: upstream, target: upstream, kernel: map[Fault]int{}, shared: s, gid: gid}
	l.port = reserve.Addr().(*net.TCPAddr).Port
	if n.proxied {
		p := toxiproxy.NewProxy(n.server, name, "127.0.0.1:0", upstream)
		if err := n.server.Collection.Add(p, true); err != nil {
			reserve.Close()
			n.releaseShared(upstream, s)
			return "", fmt.Errorf("cluster: start the proxy of link %q: %w", name, err)
		}
		l.proxy = p
		l.target = p.Listen
		if to, err = ipv4(p.Listen); err != nil {
			_ = n.server.Collection.Remove(name)
			reserve.Close()
			n.releaseShared(upstream, s)
			return "", err
		}
	}
	if err := n.sh.run(fmt.Sprintf("add element ip %[1]s gid_links { %[2]s : %[3]s }\nadd element ip %[1]s gid_marks { %[2]s : %[4]s }\n",
		n.table, l.gidKey(), to, l.mark())); err != nil {
		reserve.Close()
		if l.proxy != nil {
			_ = n.server.Collection.Remove(name)
		}
		n.releaseShared(upstream, s)
		return "", fmt.Errorf("cluster: link %q: %w", name, err)
	}
	s.links++
	n.links[name] = l
	return l.addr, nil
}

// releaseShared releases the shared address of upstream when no link is on
// it; the caller holds n.mu.
func (n *Network) releaseShared(upstream string, s *sharedAddr) {
	if s.links > 0 {
		return
	}
	s.reserve.Close()
	if n.shared[upstream] == s {
		delete(n.shared, upstream)
	}
}

// Addr returns the address the link is reached on, or "" for an unknown link.
func (n *Network) Addr(name string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if l, ok := n.links[name]; ok {
		return l.addr
	}
	return ""
}

// Upstream returns the address the link reaches, or "" for an unknown link.
func (n *Network) Upstream(name string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if l, ok := n.links[name]; ok {
		return l.upstream
	}
	return ""
}

// SetUpstream points the link at a new upstream, keeping its address and
// its faults. Existing connections are closed (as a client's connections
// to a moved service address break); new ones go to the new upstream.
func (n *Network) SetUpstream(name, upstream string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	l, err := n.link(name)
	if err != nil {
		return err
	}
	if l.shared != nil {
		return fmt.Errorf("cluster: set upstream of link %q: a per-source link (LinkFrom) keeps its upstream", name)
	}
	if l.proxy != nil {
		l.proxy.Lock()
		listen := l.proxy.Listen
		l.proxy.Unlock()
		in := &toxiproxy.Proxy{Name: name, Listen: listen, Upstream: upstream, Enabled: true}
		if err := l.proxy.Update(in); err != nil {
			return fmt.Errorf("cluster: set upstream of link %q to %s: %w", name, upstream, err)
		}
		l.upstream = upstream
		return nil
	}
	to, err := ipv4(upstream)
	if err != nil {
		return err
	}
	if err := n.sh.run(fmt.Sprintf("delete element ip %[1]s links { 127.0.0.1 . %[2]d }\nadd element ip %[1]s links { 127.0.0.1 . %[2]d : %[3]s }\n", n.table, l.port, to)); err != nil {
		return fmt.Errorf("cluster: set upstream of link %q to %s: %w", name, upstream, err)
	}
	l.upstream, l.target = upstream, upstream
	return killConns([]*link{l})
}

// Remove removes the link, closing its connections.
func (n *Network) Remove(name string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	l, err := n.link(name)
	if err != nil {
		return err
	}
	delete(n.links, name)
	var errs []error
	script := fmt.Sprintf("delete element ip %[1]s links { 127.0.0.1 . %[2]d }\ndelete element ip %[1]s marks { 127.0.0.1 . %[2]d }\n", n.table, l.port)
	if l.shared != nil {
		script = fmt.Sprintf("delete element ip %[1]s gid_links { %[2]s }\ndelete element ip %[1]s gid_marks { %[2]s }\n", n.table, l.gidKey())
	}
	script += n.unfaultScript(l)
	if err := n.sh.run(script); err != nil {
		errs = append(errs, fmt.Errorf("cluster: remove link %q: %w", name, err))
	}
	if l.shared != nil {
		errs = append(errs, killSourceConns(l))
	} else {
		errs = append(errs, killConns([]*link{l}))
	}
	if l.proxy != nil {
		if err := n.server.Collection.Remove(name); err != nil {
			errs = append(errs, fmt.Errorf("cluster: remove link %q: %w", name, err))
		}
	}
	errs = append(errs, l.reserve.Close())
	if l.shared != nil {
		l.shared.links--
		n.releaseShared(l.upstream, l.shared)
	}
	return errors.Join(errs...)
}

// Links returns the names of all links, sorted.
func (n *Network) Links() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]string, 0, len(n.links))
	for name := range n.links {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// LinksFrom returns the sorted names of the links whose "from" end is from
// (LinksFrom("w3") gives "w3->n1", "w3->n2", ...).
func (n *Network) LinksFrom(from string) []string {
	var out []string
	for _, name := range n.Links() {
		if f, _, ok := SplitLinkName(name); ok && f == from {
			out = append(out, name)
		}
	}
	return out
}

// LinksTo returns the sorted names of the links whose "to" end is node
// (LinksTo("n1") gives "n2->n1", "w1->n1", ...).
func (n *Network) LinksTo(node string) []string {
	var out []string
	for _, name := range n.Links() {
		if _, t, ok := SplitLinkName(name); ok && t == node {
			out = append(out, name)
		}
	}
	return out
}

// Apply applies the fault to every named link. A fault of a kind already
// applied to a link replaces it (latency) or adds to it (cut, reset).
// Unknown names are an error and nothing is applied then.
func (n *Network) Apply(f Fault, names ...string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := f.check(n.proxied); err != nil {
		return err
	}
	var ls []*link
	for _, name := range names {
		l, err := n.link(name)
		if err != nil {
			return err
		}
		ls = append(ls, l)
	}
	switch f.Kind {
	case FaultCut, FaultReset:
		if f.Kind == FaultReset && slices.ContainsFunc(ls, func(l *link) bool { return l.shared != nil }) {
			if _, err := trackedMarks(); err != nil {
				return fmt.Errorf("%w: reset of a per-source link: %v", ErrUnavailable, err)
			}
		}
		var b strings.Builder
		var ends []linkEnds
		for _, l := range ls {
			if f.Kind == FaultReset && !l.resetting() {
				ends = append(ends, l.ends())
			}
			for _, set := range f.sets() {
				if !l.inSet(set) {
					fmt.Fprintf(&b, "add element ip %s %s { %s }\n", n.table, set, l.mark())
				}
			}
		}
		if len(ends) > 0 {
			// The connections with both ends before the rule is in place.
			n.pmu.Lock()
			defer n.pmu.Unlock()
			if n.pairs == nil {
				n.pairs = map[string]bool{}
			}
			maps.Copy(n.pairs, completeResets(ends, nil))
		}
		if b.Len() > 0 {
			if err := n.sh.run(b.String()); err != nil {
				return fmt.Errorf("cluster: %s %s: %w", f.Kind, strings.Join(names, ", "), err)
			}
		}
		key := Fault{Kind: f.Kind, Direction: f.Direction}
		for _, l := range ls {
			l.kernel[key]++
		}
		if f.Kind == FaultReset && !n.watching {
			n.watching = true
			n.watchDone = make(chan struct{})
			go n.resetWatch(n.watchDone)
		}
		return nil
	default: // FaultLatency, checked above
		body, err := json.Marshal(f.latencyToxic())
		if err != nil {
			return fmt.Errorf("cluster: encode toxic: %w", err)
		}
		for _, l := range ls {
			if l.proxy.Toxics.GetToxic(f.latencyToxic().Name) != nil {
				if err := l.proxy.Toxics.RemoveToxic(context.Background(), f.latencyToxic().Name); err != nil {
					return fmt.Errorf("cluster: replace latency on link %q: %w", l.name, err)
				}
			}
			if _, err := l.proxy.Toxics.AddToxicJson(bytes.NewReader(body)); err != nil {
				return fmt.Errorf("cluster: apply latency to link %q: %w", l.name, err)
			}
			l.latency = true
		}
		return nil
	}
}

// kernelSets are the nft sets of the kernel faults.
var kernelSets = []string{"cut_forward", "cut_back", "reset_forward", "reset_back"}

// sets returns the nft sets a cut or reset puts its links' marks in.
func (f Fault) sets() []string {
	kind := "cut_"
	if f.Kind == FaultReset {
		kind = "reset_"
	}
	switch f.Direction {
	case DirectionForward:
		return []string{kind + "forward"}
	case DirectionBack:
		return []string{kind + "back"}
	}
	return []string{kind + "forward", kind + "back"}
}

// inSet reports whether the link's mark is in the named set.
func (l *link) inSet(set string) bool {
	for f := range l.kernel {
		if slices.Contains(f.sets(), set) {
			return true
		}
	}
	return false
}

// unfaultScript returns the nft commands that take the link's mark out of
// every set it is in; the caller holds n.mu.
func (n *Network) unfaultScript(l *link) string {
	var b strings.Builder
	for _, set := range kernelSets {
		if l.inSet(set) {
			fmt.Fprintf(&b, "delete element ip %s %s { %s }\n", n.table, set, l.mark())
		}
	}
	return b.String()
}

// Cut partitions the named links in both directions: connections stay
// open, packets are dropped until the heal.
func (n *Network) Cut(names ...string) error { return n.Apply(Fault{Kind: FaultCut}, names...) }

// Reset closes the named links' connections and refuses new ones until healed.
func (n *Network) Reset(names ...string) error { return n.Apply(Fault{Kind: FaultReset}, names...) }

// Latency delays the replies on the named links by delay ± jitter.
func (n *Network) Latency(names []string, delay, jitter time.Duration) error {
	return n.Apply(Fault{Kind: FaultLatency, Delay: delay, Jitter: jitter}, names...)
}

// Heal removes every fault from the named links.
func (n *Network) Heal(names ...string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	var errs []error
	var ls []*link
	var b strings.Builder
	for _, name := range names {
		l, err := n.link(name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ls = append(ls, l)
		b.WriteString(n.unfaultScript(l))
	}
	if b.Len() > 0 {
		if err := n.sh.run(b.String()); err != nil {
			return errors.Join(append(errs, fmt.Errorf("cluster: heal %s: %w", strings.Join(names, ", "), err))...)
		}
	}
	for _, l := range ls {
		errs = append(errs, heal(l))
	}
	return errors.Join(errs...)
}

// HealAll removes every fault from every link.
func (n *Network) HealAll() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil
	}
	var flush strings.Builder
	for _, set := range kernelSets {
		fmt.Fprintf(&flush, "flush set ip %s %s\n", n.table, set)
	}
	if err := n.sh.run(flush.String()); err != nil {
		return fmt.Errorf("cluster: heal all: %w", err)
	}
	var errs []error
	for _, l := range n.links {
		errs = append(errs, heal(l))
	}
	return errors.Join(errs...)
}

// heal forgets the link's kernel faults (already removed) and removes its
// latency toxic.
func heal(l *link) error {
	clear(l.kernel)
	if !l.latency {
		return nil
	}
	l.latency = false
	var errs []error
	for _, t := range l.proxy.Toxics.GetToxicArray() {
		if w, ok := t.(*toxics.ToxicWrapper); ok && strings.HasPrefix(w.Name, toxicPrefix) {
			if err := l.proxy.Toxics.RemoveToxic(context.Background(), w.Name); err != nil {
				errs = append(errs, fmt.Errorf("cluster: heal link %q: %w", l.name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Faulty returns the sorted names of the links that currently carry a fault.
func (n *Network) Faulty() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for name, l := range n.links {
		if l.faulty() {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// Close removes every link, closing their connections, and deletes the
// Network's nftables table; nothing of it remains in the kernel. It is safe
// to call more than once.
func (n *Network) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil
	}
	n.closed = true
	close(n.stop)
	if n.watching {
		// resetWatch takes n.mu; let it see the stop.
		done := n.watchDone
		n.mu.Unlock()
		<-done
		n.mu.Lock()
	}
	var errs []error
	n.sh.close()
	if err := nft("delete table ip " + n.table + "\n"); err != nil {
		errs = append(errs, fmt.Errorf("cluster: close network: %w", err))
	}
	ls := make([]*link, 0, len(n.links))
	for _, l := range n.links {
		ls = append(ls, l)
		errs = append(errs, l.reserve.Close())
	}
	errs = append(errs, killConns(ls))
	n.links = map[string]*link{}
	for _, sa := range n.shared {
		errs = append(errs, sa.reserve.Close())
	}
	clear(n.shared)
	if n.server != nil {
		if err := n.server.Collection.Clear(); err != nil {
			errs = append(errs, fmt.Errorf("cluster: close network: %w", err))
		}
	}
	return errors.Join(errs...)
}

// link returns the named link; the caller holds n.mu.
func (n *Network) link(name string) (*link, error) {
	if n.closed {
		return nil, ErrNetworkClosed
	}
	l, ok := n.links[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrNoLink, name)
	}
	return l, nil
}

// resetInterval is how often resetWatch looks at the connections of reset
// links.
const resetInterval = 10 * time.Millisecond

// resetWatch completes the resets of reset links while any is on. The
// kernel's rule answers a packet with a RST to its sender only; this
// goroutine sees a connection that lost one end (the dialling end, whose
// peer is the link's address, or the accepting end, at the link's target
// with the dialling end's address as peer) and destroys the other end, so
// that, as a reset proxy would, the fault closes both. It ends when no link
// is reset any more, or at Close.
func (n *Network) resetWatch(done chan struct{}) {
	defer close(done)
	tick := time.NewTicker(resetInterval)
	defer tick.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-tick.C:
		}
		n.mu.Lock()
		var ends []linkEnds
		for _, l := range n.links {
			if l.resetting() {
				ends = append(ends, l.ends())
			}
		}
		if len(ends) == 0 {
			n.watching = false
			n.mu.Unlock()
			n.pmu.Lock()
			n.pairs = nil
			n.pmu.Unlock()
			return
		}
		n.mu.Unlock()
		n.pmu.Lock()
		n.pairs = completeResets(ends, n.pairs)
		n.pmu.Unlock()
	}
}

// linkEnds are the two addresses of a link's connections: the link's own
// (the dialling ends' peer) and its target (the accepting ends' address),
// and for a per-source link, whose address is shared, its mark.
type linkEnds struct {
	addr, target string
	mark         uint32
	shared       bool
}

// ends returns the link's linkEnds.
func (l *link) ends() linkEnds {
	return linkEnds{addr: l.addr, target: l.target, mark: l.markValue(), shared: l.shared != nil}
}

// completeResets lists the connections of the links and destroys the end
// left of each connection that had both ends at the last look and has one
// now. It returns the connections that have both ends now. When a link is
// per-source, the connections are told apart by their conntrack marks
// (only those of the links count), as their addresses are shared.
func completeResets(ls []linkEnds, before map[string]bool) map[string]bool {
	var terms []string
	dialled := map[string][]linkEnds{} // link address -> links
	targets := map[string][]linkEnds{} // target address -> links
	byMark := false
	for _, l := range ls {
		terms = append(terms, "dst "+l.addr, "src "+l.target)
		dialled[l.addr] = append(dialled[l.addr], l)
		targets[l.target] = append(targets[l.target], l)
		byMark = byMark || l.shared
	}
	var marks map[string]uint32
	if byMark {
		var err error
		if marks, err = trackedMarks(); err != nil {
			return before
		}
	}
	// which returns the link, among those at an address, of the connection
	// dialled from the address from.
	which := func(cands []linkEnds, from string) (linkEnds, bool) {
		if marks == nil {
			return cands[len(cands)-1], true
		}
		for _, l := range cands {
			if m, ok := marks[from+" "+l.addr]; ok && m == l.mark {
				return l, true
			}
		}
		return linkEnds{}, false
	}
	out, err := exec.Command("ss", "-t", "-n", "-H", "state", "established", "state", "close-wait", "( "+strings.Join(terms, " or ")+" )").Output()
	if err != nil {
		return before
	}
	type ends struct {
		dialling, accepting bool
		l                   linkEnds
	}
	conns := map[string]*ends{} // dialling end's address -> what of it exists
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		local, peer := f[len(f)-2], f[len(f)-1]
		if cands, ok := dialled[peer]; ok {
			l, ok := which(cands, local)
			if !ok {
				continue
			}
			e := conns[local]
			if e == nil {
				e = &ends{l: l}
				conns[local] = e
			}
			e.dialling = true
		} else if cands, ok := targets[local]; ok {
			l, ok := which(cands, peer)
			if !ok {
				continue
			}
			e := conns[peer]
			if e == nil {
				e = &ends{l: l}
				conns[peer] = e
			}
			e.accepting = true
		}
	}
	now := map[string]bool{}
	for from, e := range conns {
		switch {
		case e.dialling && e.accepting:
			now[from] = true
		case before[from] && e.dialling:
			_ = exec.Command("ss", "-K", "-t", "-n", "-H", "src", from, "dst", e.l.addr).Run()
		case before[from] && e.accepting:
			_ = exec.Command("ss", "-K", "-t", "-n", "-H", "src", e.l.target, "dst", from).Run()
		}
	}
	return now
}
