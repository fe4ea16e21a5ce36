package cluster

import (
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

var (
	portsMu sync.Mutex
	// portsNext is the next candidate port; 0 until first use.
	portsNext int
)

// FreePort returns a free TCP port on 127.0.0.1 for a server to bind later.
// It is taken below the kernel's ephemeral range, so neither a listener on
// port 0 (the proxies) nor an outgoing connection's source port can take it
// between now and the server's bind. Candidates are tried in turn from a
// start that depends on the process id, so concurrent harnesses rarely try
// the same ones.
func FreePort() (int, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	lo, hi := reservedPortRange()
	if portsNext < lo || portsNext >= hi {
		portsNext = lo + (os.Getpid()*7919)%(hi-lo)
	}
	for range hi - lo {
		port := portsNext
		portsNext++
		if portsNext >= hi {
			portsNext = lo
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		l.Close()
		return port, nil
	}
	return 0, errors.New("cluster: no free port found")
}

// reservedPortRange returns the ports FreePort picks from: from 10000 up to
// the start of the ephemeral range (net.ipv4.ip_local_port_range).
func reservedPortRange() (lo, hi int) {
	lo, hi = 10000, 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil && v > lo+1000 {
				hi = v
			}
		}
	}
	return lo, hi
}
