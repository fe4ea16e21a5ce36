package clients

import (
	"context"
	"net"
	"syscall"
	"time"

	"github.com/jepsen-lite/jepsen-lite/lockapi"
	"golang.org/x/sys/unix"
)

// TCP is the TCP timeouts every connection of a lock client is opened with
// (lockapi.TCP: the scenario's `tcp` block; docs/network.md, "When a
// connection ends during a partition"). The scenario's validation
// (scenarios.TCP) keeps the values within what the kernel accepts.
type TCP = lockapi.TCP

// The keepalive each client library dials with when it is left alone (the
// versions in go.mod; TestTCPSocketOptions reads them off real sockets).
var (
	// goRedisKeepAlive is go-redis's default dialer's.
	goRedisKeepAlive = net.KeepAliveConfig{Enable: true, Idle: 30 * time.Second, Interval: 5 * time.Second, Count: 3}
	// goKeepAlive is Go's net.Dialer default, which pgx and the ZooKeeper
	// client dial with.
	goKeepAlive = net.KeepAliveConfig{Enable: true, Idle: 15 * time.Second, Interval: 15 * time.Second, Count: 9}
	// grpcKeepAlive is gRPC's (etcd's client): SO_KEEPALIVE on, the OS's
	// net.ipv4.tcp_keepalive_* for the rest.
	grpcKeepAlive = net.KeepAliveConfig{Enable: true, Idle: -1, Interval: -1, Count: -1}
)

// tcpDialer returns the dialer of a client family whose own keepalive is
// base: base with the fields t sets in place of its own, TCP_USER_TIMEOUT
// when t sets it, and timeout bounding each dial.
func tcpDialer(t TCP, timeout time.Duration, base net.KeepAliveConfig) *net.Dialer {
	ka := base
	if t.KeepAliveIdle > 0 {
		ka.Idle = t.KeepAliveIdle
	}
	if t.KeepAliveInterval > 0 {
		ka.Interval = t.KeepAliveInterval
	}
	if t.KeepAliveCount > 0 {
		ka.Count = t.KeepAliveCount
	}
	d := &net.Dialer{Timeout: timeout, KeepAliveConfig: ka}
	if t.UserTimeout > 0 {
		ms := int(t.UserTimeout / time.Millisecond)
		d.Control = func(_, _ string, rc syscall.RawConn) error {
			var serr error
			if err := rc.Control(func(fd uintptr) {
				serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, ms)
			}); err != nil {
				return err
			}
			if serr != nil {
				return &net.OpError{Op: "setsockopt TCP_USER_TIMEOUT", Net: "tcp", Err: serr}
			}
			return nil
		}
	}
	return d
}

// redisDialer returns go-redis's Options.Dialer for t, nil (go-redis's
// own) when t is zero.
func redisDialer(t TCP, timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if t.IsZero() {
		return nil
	}
	return tcpDialer(t, timeout, goRedisKeepAlive).DialContext
}

// zkDialer returns the ZooKeeper client's dialer for t: its own,
// net.DialTimeout, when t is zero.
func zkDialer(t TCP) func(network, addr string, timeout time.Duration) (net.Conn, error) {
	if t.IsZero() {
		return net.DialTimeout
	}
	return func(network, addr string, timeout time.Duration) (net.Conn, error) {
		return tcpDialer(t, timeout, goKeepAlive).Dial(network, addr)
	}
}

// grpcDialer returns etcd's gRPC dialer for t: the address is host:port.
func grpcDialer(t TCP) func(ctx context.Context, addr string) (net.Conn, error) {
	d := tcpDialer(t, 0, grpcKeepAlive)
	return func(ctx context.Context, addr string) (net.Conn, error) {
		return d.DialContext(ctx, "tcp", addr)
	}
}
