package clients

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
)

// The tests of this file check the scenario's tcp settings on the lock
// clients of every family, built as a run builds them (Lookup(name).New
// with the Target's TCP): the options their sockets carry, and what the OS
// then does to their connections during a partition.

// tcpFamily is one client family and the algorithm that stands for it.
type tcpFamily struct {
	algorithm string
	spec      cluster.Spec
	options   map[string]string
	// keepAlive is the family's own keepalive (idle s, interval s,
	// count), nil for the OS's (net.ipv4.tcp_keepalive_*).
	keepAlive []int
	// errors reports that a call of the family's lock client returns the
	// OS's ETIMEDOUT when its connection ends so (go-redis and pgx; the
	// ZooKeeper and etcd clients reconnect on their own goroutines).
	errors bool
}

var tcpFamilies = []tcpFamily{
	{"redis-single", redisMasters, map[string]string{"timeout": "60s"}, []int{30, 5, 3}, true},
	{"pg-advisory", postgresOne, map[string]string{"timeout": "60s"}, []int{15, 15, 9}, true},
	{"zk-recipe", zkOne, map[string]string{"session-timeout": "60s"}, []int{15, 15, 9}, false},
	{"etcd-mutex", etcdOne, nil, nil, false},
	// The MySQL driver reports a connection the OS ended as its own
	// "invalid connection", not ETIMEDOUT.
	{"mysql-get-lock", mariadbOne, map[string]string{"timeout": "60s"}, []int{15, 15, 9}, false},
}

// newTCPLocker builds worker's Locker of algorithm name on eps with tcp, as
// the runner does, and closes it at the end of the test.
func newTCPLocker(t *testing.T, name string, eps []Endpoint, worker int, options map[string]string, tcp TCP) Locker {
	t.Helper()
	alg, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	l, err := alg.New(t.Context(), Target{Worker: worker, Endpoints: eps, Clock: wallClock{}, Rand: newTestRand(uint64(worker) + 1), Options: options, TCP: tcp})
	if err != nil {
		t.Fatalf("%s: new locker: %v", name, err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// lockUnlock takes and gives back the lock on key, opening l's connections.
func lockUnlock(t *testing.T, ctx context.Context, l Locker, key string) {
	t.Helper()
	lease, err := l.Acquire(ctx, key, 30*time.Second)
	if err != nil {
		t.Fatalf("acquire %s: %v", key, err)
	}
	if err := l.Release(ctx, lease); err != nil {
		t.Fatalf("release %s: %v", key, err)
	}
}

// tcpSocket is one TCP socket of this process, as the kernel has it.
type tcpSocket struct {
	state                                      uint8 // tcpi_state: 1 is established
	keepAlive, idle, interval, count, userTime int
}

// socketsTo returns the TCP sockets of this process connected to addr, by
// local port.
func socketsTo(t *testing.T, addr string) map[int]tcpSocket {
	t.Helper()
	ap, err := netipAddrPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]tcpSocket{}
	for _, e := range fds {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err != nil || !strings.HasPrefix(l, "socket:") {
			continue
		}
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		peer, err := unix.Getpeername(fd)
		if p, ok := peer.(*unix.SockaddrInet4); err != nil || !ok || p.Port != ap.port || p.Addr != ap.ip {
			continue
		}
		local, err := unix.Getsockname(fd)
		l, ok := local.(*unix.SockaddrInet4)
		if err != nil || !ok {
			continue
		}
		info, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
		if err != nil {
			continue
		}
		var s tcpSocket
		s.state = info.State
		for _, o := range []struct {
			level, opt int
			v          *int
		}{
			{unix.SOL_SOCKET, unix.SO_KEEPALIVE, &s.keepAlive},
			{unix.IPPROTO_TCP, unix.TCP_KEEPIDLE, &s.idle},
			{unix.IPPROTO_TCP, unix.TCP_KEEPINTVL, &s.interval},
			{unix.IPPROTO_TCP, unix.TCP_KEEPCNT, &s.count},
			{unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, &s.userTime},
		} {
			if *o.v, err = unix.GetsockoptInt(fd, o.level, o.opt); err != nil {
				t.Fatalf("getsockopt on the socket to %s: %v", addr, err)
			}
		}
		out[l.Port] = s
	}
	return out
}

// addrPort is an IPv4 address and port.
type addrPort struct {
	ip   [4]byte
	port int
}

func netipAddrPort(addr string) (addrPort, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addrPort{}, err
	}
	ip := net.ParseIP(host).To4()
	if ip == nil {
		return addrPort{}, fmt.Errorf("%s is not an IPv4 address", addr)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return addrPort{}, err
	}
	return addrPort{ip: [4]byte(ip), port: p}, nil
}

// established returns the local ports of this process's established
// sockets to addr.
func established(t *testing.T, addr string) map[int]bool {
	t.Helper()
	out := map[int]bool{}
	for port, s := range socketsTo(t, addr) {
		if s.state == 1 {
			out[port] = true
		}
	}
	return out
}

// sysctlInt reads an integer from /proc/sys.
func sysctlInt(t *testing.T, name string) int {
	t.Helper()
	data, err := os.ReadFile("/proc/sys/" + strings.ReplaceAll(name, ".", "/"))
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestTCPSocketOptions reads the keepalive and TCP_USER_TIMEOUT of the
// sockets each family's lock client opens: without tcp settings they are
// the library's own (docs/network.md's table), with them the ones given,
// and a field left out keeps the library's own.
func TestTCPSocketOptions(t *testing.T) {
	cs := newClusters(t)
	osKeepAlive := []int{sysctlInt(t, "net.ipv4.tcp_keepalive_time"), sysctlInt(t, "net.ipv4.tcp_keepalive_intvl"), sysctlInt(t, "net.ipv4.tcp_keepalive_probes")}
	settings := []struct {
		name string
		tcp  TCP
		// want returns the keepalive (idle, interval, count) and user
		// timeout (ms) expected of a family whose own keepalive is own.
		want func(own []int) ([]int, int)
	}{
		{"none", TCP{}, func(own []int) ([]int, int) { return own, 0 }},
		{"every field", TCP{KeepAliveIdle: 7 * time.Second, KeepAliveInterval: 3 * time.Second, KeepAliveCount: 4, UserTimeout: 1500 * time.Millisecond},
			func([]int) ([]int, int) { return []int{7, 3, 4}, 1500 }},
		{"count and user timeout only", TCP{KeepAliveCount: 4, UserTimeout: 2 * time.Second},
			func(own []int) ([]int, int) { return []int{own[0], own[1], 4}, 2000 }},
	}
	for _, f := range tcpFamilies {
		for _, st := range settings {
			t.Run(f.algorithm+"/"+st.name, func(t *testing.T) {
				eps := cs.endpoints(t, f.spec)
				via, _, _ := throughLinks(t, "w0", eps)
				l := newTCPLocker(t, f.algorithm, via, 0, f.options, st.tcp)
				lockUnlock(t, t.Context(), l, "tcp-options-"+st.name)
				own := f.keepAlive
				if own == nil {
					own = osKeepAlive
				}
				ka, user := st.want(own)
				socks := socketsTo(t, via[0].Addr)
				if len(socks) == 0 {
					t.Fatalf("no socket of this process is connected to %s", via[0].Addr)
				}
				for port, s := range socks {
					got := []int{s.idle, s.interval, s.count}
					if s.keepAlive != 1 || fmt.Sprint(got) != fmt.Sprint(ka) || s.userTime != user {
						t.Errorf("socket from port %d: keepalive %d %v, user timeout %d ms; want keepalive on %v, user timeout %d ms", port, s.keepAlive, got, s.userTime, ka, user)
					}
				}
			})
		}
	}
}

// endedByOS reports whether err is how a call of a lock client sees its
// connection ended by the OS: ETIMEDOUT, or EOF (go-redis peeks at its
// sockets with MSG_PEEK, also while a call waits for its reply, and so can
// take the ETIMEDOUT itself, after which the socket reads as closed). It is not the client's own timeout: the
// tests give the clients a minute.
func endedByOS(err error) bool {
	return errors.Is(err, syscall.ETIMEDOUT) || errors.Is(err, io.EOF)
}

// shortTCP ends an idle connection about 2 s into a partition (a probe
// after 1 s idle; with TCP_USER_TIMEOUT set the kernel gives up on
// keepalive once that long passed without an answer) and a connection
// with unacknowledged data 2 s after it sent them.
var shortTCP = TCP{KeepAliveIdle: time.Second, KeepAliveInterval: time.Second, KeepAliveCount: 2, UserTimeout: 2 * time.Second}

// TestShortTCPEndsConnectionsDuringCut cuts, for each client family, two
// workers' links at once: worker 0's lock client has short tcp settings,
// worker 1's the defaults. During the one cut, the OS ends worker 0's idle
// connections (keepalive) while worker 1's stay established, for at least
// as long (their own keepalive ends them after 45 s at the soonest, and
// the ZooKeeper client's own timers after 40 s). For the families whose
// calls see the error, a call sent during a cut ends with ETIMEDOUT from
// the OS on worker 0 (TCP_USER_TIMEOUT) while worker 1's waits for the
// heal and succeeds, and after a cut of idle connections worker 0's pgx
// connection reports ETIMEDOUT at its next call. Waits are on conditions,
// with generous bounds.
func TestShortTCPEndsConnectionsDuringCut(t *testing.T) {
	cs := newClusters(t)
	for _, f := range tcpFamilies {
		t.Run(f.algorithm, func(t *testing.T) {
			eps := cs.endpoints(t, f.spec)
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
			defer cancel()
			p := &tcpPair{t: t, ctx: ctx, f: f}
			p.viaShort, p.nwShort, p.linksShort = throughLinks(t, "w0", eps)
			p.viaDef, p.nwDef, p.linksDef = throughLinks(t, "w1", eps)
			p.short = newTCPLocker(t, f.algorithm, p.viaShort, 0, f.options, shortTCP)
			p.def = newTCPLocker(t, f.algorithm, p.viaDef, 1, f.options, TCP{})
			t.Cleanup(func() { _ = p.nwShort.HealAll(); _ = p.nwDef.HealAll() })
			if f.errors {
				p.callDuringCut()
			}
			p.idleThroughCut()
		})
	}
}

// tcpPair is one family's run of TestShortTCPEndsConnectionsDuringCut:
// worker 0's Locker with short tcp settings and worker 1's with the
// defaults, each through links of its own.
type tcpPair struct {
	t                    *testing.T
	ctx                  context.Context
	f                    tcpFamily
	short, def           Locker
	viaShort, viaDef     []Endpoint
	nwShort, nwDef       *linknet.Network
	linksShort, linksDef []string
}

// cut cuts both workers' links.
func (p *tcpPair) cut() {
	p.t.Helper()
	if err := p.nwShort.Cut(p.linksShort...); err != nil {
		p.t.Fatal(err)
	}
	if err := p.nwDef.Cut(p.linksDef...); err != nil {
		p.t.Fatal(err)
	}
}

// heal heals both workers' links.
func (p *tcpPair) heal() {
	p.t.Helper()
	if err := p.nwShort.HealAll(); err != nil {
		p.t.Fatal(err)
	}
	if err := p.nwDef.HealAll(); err != nil {
		p.t.Fatal(err)
	}
}

// tcpResult is what an acquire returned.
type tcpResult struct {
	lease Lease
	err   error
}

// callDuringCut sends a call of each worker during a cut: worker 0's ends
// with the OS's end of its connection, worker 1's waits for the heal and
// succeeds.
func (p *tcpPair) callDuringCut() {
	t, ctx := p.t, p.ctx
	lockUnlock(t, ctx, p.short, "tcp-busy-w0")
	lockUnlock(t, ctx, p.def, "tcp-busy-w1")
	p.cut()
	shortDone, defDone := make(chan tcpResult, 1), make(chan tcpResult, 1)
	go func() { l, err := p.short.Acquire(ctx, "tcp-busy-w0", 30*time.Second); shortDone <- tcpResult{l, err} }()
	go func() { l, err := p.def.Acquire(ctx, "tcp-busy-w1", 30*time.Second); defDone <- tcpResult{l, err} }()
	var r tcpResult
	select {
	case r = <-shortDone:
	case <-ctx.Done():
		t.Fatal("worker 0's call during the cut never returned")
	}
	if !endedByOS(r.err) {
		t.Errorf("worker 0's call during the cut: %v, want the OS's end of its connection (TCP_USER_TIMEOUT): ETIMEDOUT, or EOF once the client's own peek took the error", r.err)
	}
	select {
	case r := <-defDone:
		t.Fatalf("worker 1's call returned during the cut (%v, %v): nothing can cross it", r.lease, r.err)
	default:
	}
	p.heal()
	r = <-defDone
	if r.err != nil {
		t.Fatalf("worker 1's call sent during the cut, after the heal: %v; want its reply on the same connection", r.err)
	}
	if err := p.def.Release(ctx, r.lease); err != nil {
		t.Fatal(err)
	}
}

// idleThroughCut cuts both workers' idle connections: the OS ends worker
// 0's while worker 1's outlast the cut, and are the same after the heal.
func (p *tcpPair) idleThroughCut() {
	t, ctx := p.t, p.ctx
	lockUnlock(t, ctx, p.short, "tcp-idle-w0")
	lockUnlock(t, ctx, p.def, "tcp-idle-w1")
	shortConns, defConns := established(t, p.viaShort[0].Addr), established(t, p.viaDef[0].Addr)
	if len(shortConns) == 0 || len(defConns) == 0 {
		t.Fatalf("established connections before the cut: worker 0 %v, worker 1 %v; want some of each", shortConns, defConns)
	}
	p.cut()
	p.waitEnded(shortConns)
	now := established(t, p.viaDef[0].Addr)
	for port := range defConns {
		if !now[port] {
			t.Errorf("worker 1's connection from port %d ended during the same cut: with the defaults it must outlast it", port)
		}
	}
	p.heal()
	if p.f.errors && p.f.spec.System == cluster.Postgres {
		if _, err := p.short.Acquire(ctx, "tcp-idle-w0", 30*time.Second); !errors.Is(err, syscall.ETIMEDOUT) {
			t.Errorf("worker 0's first call after the cut: %v, want ETIMEDOUT from the OS (keepalive)", err)
		}
	}
	lockUnlock(t, ctx, p.def, "tcp-idle-w1")
	if now := established(t, p.viaDef[0].Addr); len(now) != len(defConns) {
		t.Errorf("worker 1's connections after the heal: %v, before the cut %v: they were replaced", now, defConns)
	} else {
		for port := range defConns {
			if !now[port] {
				t.Errorf("worker 1's connection from port %d was replaced after the heal", port)
			}
		}
	}
}

// waitEnded waits until none of worker 0's connections conns is
// established any more, failing when the test's context ends first.
func (p *tcpPair) waitEnded(conns map[int]bool) {
	p.t.Helper()
	for {
		now := established(p.t, p.viaShort[0].Addr)
		left := 0
		for port := range conns {
			if now[port] {
				left++
			}
		}
		if left == 0 {
			return
		}
		select {
		case <-p.ctx.Done():
			p.t.Fatalf("worker 0's idle connections %v are still established: the OS did not end them", conns)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
