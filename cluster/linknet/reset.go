package linknet

// reset.go holds the reset watcher: the goroutine that, while a link is
// reset, destroys the end left of each of its connections the kernel reset
// on one side only.

import (
	"os/exec"
	"strings"
	"time"
)

// resetInterval is how often resetWatch looks at the connections of reset
// links.
const resetInterval = 10 * time.Millisecond

// resetWatch completes the resets of reset links while any is on. The
// kernel's rule answers a packet with a RST to its sender only; this
// goroutine sees a connection that lost one end (the dialling end, whose
// peer is the link's address, or the accepting end, at the link's target
// with the dialling end's address as peer) and destroys the other end, so
// that, as a reset proxy would, the fault closes both; for a link to
// another host, whose accepting end it cannot see, it destroys the ends
// the rules recorded (completeAwayResets). It ends when no link is reset
// any more, or at Close.
func (n *Network) resetWatch(done chan struct{}) {
	defer close(done)
	tick := time.NewTicker(resetInterval)
	defer tick.Stop()
	var last []linkEnds // the links to other hosts reset at the last look
	for {
		select {
		case <-n.stop:
			return
		case <-tick.C:
		}
		n.mu.Lock()
		var here, far []linkEnds // reset links to this host, and to other hosts
		for _, l := range n.links {
			switch {
			case !l.resetting() || l.remote != nil:
			case l.away:
				far = append(far, l.ends())
			default:
				here = append(here, l.ends())
			}
		}
		closer := n.closer
		if len(here) == 0 && len(far) == 0 {
			n.watching = false
			n.mu.Unlock()
			n.pmu.Lock()
			n.pairs = nil
			n.pmu.Unlock()
			// What the rules answered since the last look.
			n.completeAwayResets(last, closer)
			return
		}
		n.mu.Unlock()
		n.pmu.Lock()
		if len(here) > 0 {
			n.pairs = completeResets(here, n.pairs)
		} else {
			n.pairs = nil // no pair is watched: a later reset starts afresh
		}
		n.pmu.Unlock()
		n.completeAwayResets(append(far, last...), closer)
		last = far
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
	ix := indexEnds(ls)
	if ix.byMark {
		var err error
		if ix.marks, err = trackedMarks(); err != nil {
			return before
		}
	}
	out, err := exec.Command("ss", "-t", "-n", "-H", "state", "established", "state", "close-wait", "( "+strings.Join(ix.terms, " or ")+" )").Output()
	if err != nil {
		return before
	}
	conns := ix.connEnds(string(out))
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

// endsIndex finds the reset links' connections in the socket table: the ss
// filter terms of their two addresses, the links by address, and for
// per-source links the conntrack marks that tell them apart.
type endsIndex struct {
	terms   []string
	dialled map[string][]linkEnds // link address -> links
	targets map[string][]linkEnds // target address -> links
	byMark  bool                  // a link is per-source: marks tell connections apart
	marks   map[string]uint32     // trackedMarks, when byMark
}

// indexEnds returns the endsIndex of the links, without marks.
func indexEnds(ls []linkEnds) *endsIndex {
	ix := &endsIndex{dialled: map[string][]linkEnds{}, targets: map[string][]linkEnds{}}
	for _, l := range ls {
		ix.terms = append(ix.terms, "dst "+l.addr, "src "+l.target)
		ix.dialled[l.addr] = append(ix.dialled[l.addr], l)
		ix.targets[l.target] = append(ix.targets[l.target], l)
		ix.byMark = ix.byMark || l.shared
	}
	return ix
}

// which returns the link, among those at an address, of the connection
// dialled from the address from.
func (ix *endsIndex) which(cands []linkEnds, from string) (linkEnds, bool) {
	if ix.marks == nil {
		return cands[len(cands)-1], true
	}
	for _, l := range cands {
		if m, ok := ix.marks[from+" "+l.addr]; ok && m == l.mark {
			return l, true
		}
	}
	return linkEnds{}, false
}

// connEnd says which ends of one connection of a reset link exist.
type connEnd struct {
	dialling, accepting bool
	l                   linkEnds
}

// connEnds reads an ss listing and returns, by the dialling end's address,
// which ends of each connection of the links exist.
func (ix *endsIndex) connEnds(listing string) map[string]*connEnd {
	conns := map[string]*connEnd{}
	see := func(from string, l linkEnds) *connEnd {
		e := conns[from]
		if e == nil {
			e = &connEnd{l: l}
			conns[from] = e
		}
		return e
	}
	for _, line := range strings.Split(listing, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		local, peer := f[len(f)-2], f[len(f)-1]
		if cands, ok := ix.dialled[peer]; ok {
			if l, ok := ix.which(cands, local); ok {
				see(local, l).dialling = true
			}
		} else if cands, ok := ix.targets[local]; ok {
			if l, ok := ix.which(cands, peer); ok {
				see(peer, l).accepting = true
			}
		}
	}
	return conns
}
