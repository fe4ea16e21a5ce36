package docker

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
)

// A relay carries one node-to-node link out of a container. A container
// cannot reach the harness's links, which are addresses on the host's loopback
// only; so the harness opens a listening socket on 127.0.0.1 inside the
// container's own network namespace, and pipes every connection accepted
// there to the link's address on the host's loopback. The node (a Redis
// replica) connects to 127.0.0.1:<relay port> in its container; the nemesis
// cuts the link as any other link. Nothing listens beyond a
// loopback interface.
type relay struct {
	ln   net.Listener
	link string
	net  *linknet.Network

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	done   chan struct{}
}

// startRelay listens on addr inside the network namespace of the process
// pid and forwards each connection to the current address of the link.
func startRelay(pid int, addr, link string, network *linknet.Network) (*relay, error) {
	ln, err := listenInNetns(pid, addr)
	if err != nil {
		return nil, err
	}
	r := &relay{ln: ln, link: link, net: network, conns: map[net.Conn]struct{}{}, done: make(chan struct{})}
	go r.serve()
	return r, nil
}

func (r *relay) serve() {
	defer close(r.done)
	for {
		in, err := r.ln.Accept()
		if err != nil {
			return
		}
		go r.pipe(in)
	}
}

// pipe copies between an accepted connection and a new one to the link.
func (r *relay) pipe(in net.Conn) {
	upstream := r.net.Addr(r.link)
	if upstream == "" {
		_ = in.Close()
		return
	}
	out, err := net.Dial("tcp", upstream)
	if err != nil {
		_ = in.Close()
		return
	}
	if !r.track(in, out) {
		_ = in.Close()
		_ = out.Close()
		return
	}
	// An orderly end (EOF) is passed on as one; a reset of either side
	// resets the other (abort), as a reset fault on the link would reset
	// the node's own connection on the local backend. A cut ends neither:
	// the relay holds the node's connection open while the link drops
	// packets.
	var wg sync.WaitGroup
	wg.Go(func() { relayCopy(out, in) })
	wg.Go(func() { relayCopy(in, out) })
	wg.Wait()
	_ = in.Close()
	_ = out.Close()
	r.untrack(in, out)
}

// relayCopy copies from src to dst; at EOF it closes dst for writing, on an
// error it aborts both.
func relayCopy(dst, src net.Conn) {
	if _, err := io.Copy(dst, src); err != nil {
		abort(dst)
		abort(src)
		return
	}
	closeWrite(dst)
}

// abort closes c with a reset (SO_LINGER 0).
func abort(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

func closeWrite(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
}

func (r *relay) track(conns ...net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	for _, c := range conns {
		r.conns[c] = struct{}{}
	}
	return true
}

func (r *relay) untrack(conns ...net.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range conns {
		delete(r.conns, c)
	}
}

// close stops listening and closes every connection the relay carries.
func (r *relay) close() error {
	r.mu.Lock()
	r.closed = true
	for c := range r.conns {
		_ = c.Close()
	}
	r.mu.Unlock()
	err := r.ln.Close()
	<-r.done
	return err
}

// listenInNetns opens a TCP listener on addr inside the network namespace of
// the process pid. The socket keeps belonging to that namespace; accepting
// on it works from any thread. It needs CAP_SYS_ADMIN; without it the error
// wraps cluster.ErrUnavailable.
func listenInNetns(pid int, addr string) (net.Listener, error) {
	type result struct {
		ln  net.Listener
		err error
	}
	ch := make(chan result, 1)
	// A fresh goroutine on a locked thread: if the thread cannot be put back
	// into the harness's namespace, the goroutine exits without unlocking
	// and the runtime discards the thread.
	go func() {
		runtime.LockOSThread()
		ln, err, restored := listenOnThisThread(pid, addr)
		if restored {
			runtime.UnlockOSThread()
		}
		ch <- result{ln, err}
	}()
	res := <-ch
	return res.ln, res.err
}

func listenOnThisThread(pid int, addr string) (ln net.Listener, err error, restored bool) {
	self, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return nil, fmt.Errorf("docker: open own network namespace: %w", err), true
	}
	defer self.Close()
	target, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		return nil, fmt.Errorf("docker: open network namespace of pid %d: %w: %w", pid, cluster.ErrUnavailable, err), true
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		if errors.Is(err, unix.EPERM) {
			err = fmt.Errorf("%w (node-to-node links of containers need CAP_SYS_ADMIN): %w", cluster.ErrUnavailable, err)
		}
		return nil, fmt.Errorf("docker: enter network namespace of pid %d: %w", pid, err), true
	}
	ln, lerr := net.Listen("tcp", addr)
	if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
		if ln != nil {
			_ = ln.Close()
		}
		return nil, fmt.Errorf("docker: return to own network namespace: %w", err), false
	}
	if lerr != nil {
		return nil, fmt.Errorf("docker: listen on %s in the network namespace of pid %d: %w", addr, pid, lerr), true
	}
	return ln, nil, true
}
