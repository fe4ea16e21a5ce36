package ssh

// resets.go holds the elements of the cuts and resets of the links
// between nodes in the run's table on their hosts, and what completes a
// reset there: the host that answers a packet with a RST holds the
// connection's other end, which its rule records (reset_seen) and a
// watcher destroys right after; and the destruction of a worker's
// connection's end on its node's host, for the harness's reset watcher
// (linknet.EndCloser).

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
)

// Compile-time checks of the links' and the cluster's abilities for
// resets.
var (
	_ linknet.Resetter  = peerLink{}
	_ linknet.Resetter  = sharedLink{}
	_ linknet.EndCloser = (*Cluster)(nil)
)

// resetInterval is how often the reset watcher looks, on each host with a
// reset on, for the ends its rules answered.
const resetInterval = 20 * time.Millisecond

// endsTimeout bounds one look, or one destruction of ends, on a host.
const endsTimeout = 5 * time.Second

// hostResets counts the reset elements in the run's table on each host,
// and runs the watcher (watchResets) while any is.
type hostResets struct {
	mu      sync.Mutex
	on      map[*conn]int
	looks   map[*conn]*sync.Mutex // held during a look at the host (closeSeen)
	running bool
	stop    chan struct{} // closed by stopResets: the watcher ends
	done    chan struct{} // closed when the watcher has ended
}

// changeElements adds (on) or deletes the elements of the run's table's
// set on the host, for the link named what. For a reset's set it counts
// the host's reset elements and starts the watcher on the first; after a
// deletion it destroys the ends the rules answered last, so that nothing
// answered during the reset is left open.
func (c *Cluster) changeElements(host *conn, set string, elems []string, on bool, what string) error {
	verb := "add"
	if !on {
		verb = "delete"
	}
	ctx, cancel := context.WithTimeout(context.Background(), clockTimeout)
	defer cancel()
	cmd := fmt.Sprintf("nft %s element ip %s %s { %s }", verb, tableName(c.run), set, strings.Join(elems, ", "))
	if err := host.runBatched(ctx, cmd); err != nil {
		return fmt.Errorf("ssh: %s %s: %w", verb, what, err)
	}
	if !strings.HasPrefix(set, "reset_") {
		return nil
	}
	r := &c.resets
	r.mu.Lock()
	if r.on == nil {
		r.on = map[*conn]int{}
	}
	if on {
		r.on[host] += len(elems)
		if !r.running && r.stop != nil {
			r.running, r.done = true, make(chan struct{})
			go c.watchResets(r.stop, r.done)
		}
		r.mu.Unlock()
		return nil
	}
	if r.on[host] -= len(elems); r.on[host] <= 0 {
		delete(r.on, host)
	}
	r.mu.Unlock()
	return c.closeSeen(ctx, host)
}

// watchResets destroys, every resetInterval on each host with a reset
// on, the ends its rules answered (closeSeen). It ends when no host has a
// reset on, or when stop is closed (Close).
func (c *Cluster) watchResets(stop, done chan struct{}) {
	defer close(done)
	tick := time.NewTicker(resetInterval)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		r := &c.resets
		r.mu.Lock()
		var hosts []*conn
		for h := range r.on {
			hosts = append(hosts, h)
		}
		if len(hosts) == 0 {
			r.running = false
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		var wg sync.WaitGroup
		for _, h := range hosts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), endsTimeout)
				defer cancel()
				_ = c.closeSeen(ctx, h)
			}()
		}
		wg.Wait()
	}
}

// stopResets stops the watcher and waits until it has ended; no watcher
// starts after it.
func (c *Cluster) stopResets() {
	r := &c.resets
	r.mu.Lock()
	stop, done, running := r.stop, r.done, r.running
	r.stop, r.running = nil, false
	r.mu.Unlock()
	if stop != nil {
		close(stop)
	}
	if running {
		<-done
	}
}

// seenScript destroys (ss -K) the ends the reset rules of the table
// recorded in reset_seen, the host's own end first, and deletes the
// elements: one command per look.
const seenScript = `t=%s
seen=$(nft list set ip $t reset_seen | grep -oE '[0-9]+(\.[0-9]+){3} \. [0-9]+ \. [0-9]+(\.[0-9]+){3} \. [0-9]+')
[ -n "$seen" ] || exit 0
f=$(echo "$seen" | awk '{ printf "%%s( src %%s:%%s and dst %%s:%%s )", (NR > 1 ? " or " : ""), $1, $3, $5, $7 }')
ss -K -t -n -H state connected "( $f )"
nft delete element ip $t reset_seen "{ $(echo "$seen" | paste -s -d, -) }"
`

// closeSeen destroys the ends the reset rules on the host answered since
// the last look; one look at a time on a host, as a look deletes the
// elements it read.
func (c *Cluster) closeSeen(ctx context.Context, host *conn) error {
	r := &c.resets
	r.mu.Lock()
	if r.looks == nil {
		r.looks = map[*conn]*sync.Mutex{}
	}
	look := r.looks[host]
	if look == nil {
		look = &sync.Mutex{}
		r.looks[host] = look
	}
	r.mu.Unlock()
	look.Lock()
	defer look.Unlock()
	_, err := host.run(ctx, fmt.Sprintf(seenScript, tableName(c.run)), nil)
	return err
}

// CloseEnds destroys (ss -K), on the hosts of their addresses, the ends of
// the workers' connections whose other end a reset of their link answered
// on the harness (linknet.EndCloser): one command per host.
func (c *Cluster) CloseEnds(ends []linknet.End) error {
	terms := map[*conn][]string{}
	var errs []error
	for _, e := range ends {
		h, _, err := net.SplitHostPort(e.Addr)
		host := c.hostAt(h)
		if err != nil || host == nil {
			errs = append(errs, fmt.Errorf("ssh: no host of the cluster has the address %s", e.Addr))
			continue
		}
		terms[host] = append(terms[host], "( src "+e.Addr+" and dst "+e.Peer+" )")
	}
	ctx, cancel := context.WithTimeout(context.Background(), endsTimeout)
	defer cancel()
	for host, ts := range terms {
		cmd := "ss -K -t -n -H state connected " + quote("( "+strings.Join(ts, " or ")+" )")
		if _, err := host.run(ctx, cmd, nil); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// hostAt returns the connection to the host whose address is addr, or nil.
func (c *Cluster) hostAt(addr string) *conn {
	for _, h := range c.hosts {
		if h != nil && h.host.Address == addr {
			return h
		}
	}
	return nil
}
