package linknet

// away.go holds the resets of links whose target is on another host
// (WithLinkAddress): the harness sees only the dialling end of their
// connections, so the rules that answer their packets with a RST record
// each connection they answer, and the reset watcher destroys the end
// left: on the harness itself, or on the target's host through the
// backend's EndCloser.

import (
	"fmt"
	"os/exec"
	"regexp"
	"strings"
)

// End is one end of a TCP connection: its own address and its peer's
// (host:port each).
type End struct {
	Addr, Peer string
}

// EndCloser destroys ends of connections on other hosts: the ends, on a
// link's target's host, of the connections of a link whose target is
// there. The backend that runs servers on other hosts gives it
// (Network.SetEndCloser); without it such a link cannot be reset
// (ErrUnavailable).
type EndCloser interface {
	// CloseEnds destroys, each on the host of its address, the TCP
	// sockets whose address is End.Addr and peer End.Peer; the kernel
	// sends their peers a RST. A socket already gone is no error.
	CloseEnds(ends []End) error
}

// SetEndCloser sets (nil: removes) the EndCloser with which the reset
// watcher destroys the ends, on other hosts, of the connections of reset
// links whose target is there.
func (n *Network) SetEndCloser(c EndCloser) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.closer = c
}

// elementRE matches one element of the sets reset_out and reset_in in an
// nft listing: "10.1.0.2 . 6379 . 10.1.0.1 . 40312".
var elementRE = regexp.MustCompile(`(\d+\.\d+\.\d+\.\d+) \. (\d+) \. (\d+\.\d+\.\d+\.\d+) \. (\d+)`)

// awayElement is one connection a reset of a link to another host
// answered: its end left to destroy (left) and the other (gone), and the
// element as nft writes it.
type awayElement struct {
	left, gone string
	nft        string
}

// awayElements returns the elements of the named set, read from the
// Network's table.
func (n *Network) awayElements(set string) ([]awayElement, error) {
	out, err := n.sh.list(set)
	if err != nil {
		return nil, err
	}
	var es []awayElement
	for _, m := range elementRE.FindAllStringSubmatch(out, -1) {
		es = append(es, awayElement{left: m[1] + ":" + m[2], gone: m[3] + ":" + m[4], nft: m[0]})
	}
	return es, nil
}

// completeAwayResets destroys the ends left of the connections of the
// links ls (links to other hosts) that their reset rules answered since
// the last look: for a packet the output hook answered (the original
// direction), the target's end, on its host, by closer; for one the input
// hook answered (a reply), the dialling end, here. It then deletes the
// elements it handled. Errors are left for the next look, as the watcher
// has no one to report them to.
func (n *Network) completeAwayResets(ls []linkEnds, closer EndCloser) {
	if len(ls) == 0 {
		return
	}
	out, err := n.awayElements("reset_out")
	if err != nil {
		return
	}
	in, err := n.awayElements("reset_in")
	if err != nil {
		return
	}
	var script strings.Builder
	if len(out) > 0 && closer != nil {
		ends := make([]End, len(out))
		for i, e := range out {
			ends[i] = End{Addr: e.left, Peer: e.gone}
		}
		if closer.CloseEnds(ends) == nil {
			fmt.Fprintf(&script, "delete element ip %s reset_out { %s }\n", n.table, joinElements(out))
		}
	}
	if len(in) > 0 && closeDialling(in, ls) == nil {
		fmt.Fprintf(&script, "delete element ip %s reset_in { %s }\n", n.table, joinElements(in))
	}
	if script.Len() > 0 {
		_ = n.sh.run(script.String())
	}
}

// closeDialling destroys (ss -K) the dialling ends of the connections:
// each is at its element's left address, and its peer is the address of
// a link of ls whose target is the element's gone address.
func closeDialling(es []awayElement, ls []linkEnds) error {
	var terms []string
	for _, e := range es {
		var dsts []string
		for _, l := range ls {
			if l.target == e.gone {
				dsts = append(dsts, "dst "+l.addr)
			}
		}
		if len(dsts) > 0 {
			terms = append(terms, "( src "+e.left+" and ( "+strings.Join(dsts, " or ")+" ) )")
		}
	}
	if len(terms) == 0 {
		return nil
	}
	return exec.Command("ss", "-K", "-t", "-n", "-H", "state", "connected", "( "+strings.Join(terms, " or ")+" )").Run()
}

// joinElements returns the elements as an nft element list.
func joinElements(es []awayElement) string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.nft
	}
	return strings.Join(parts, ", ")
}
