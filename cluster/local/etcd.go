package local

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/jepsen-lite/jepsen-lite/cluster"
)

// setupEtcd creates a single etcd node or a cluster. In a cluster every
// member advertises the link "peers->nX" as its peer URL, so all raft traffic
// towards nX goes through that one link. etcd derives member ids from the
// advertised URLs, which must therefore be the same in every member's view:
// per-pair links are impossible. Each member dials the others for its raft
// streams, so cutting "peers->nX" silences nX (its messages to the others are
// lost; theirs still reach it): the others elect a leader without it and nX
// stops serving linearizable requests.
func (c *Cluster) setupEtcd() error {
	bin, err := exec.LookPath("etcd")
	if err != nil {
		return fmt.Errorf("local: etcd: %w", err)
	}
	count := max(c.spec.Nodes, 1)
	peerPort := map[string]int{}
	for i := range count {
		n, err := c.addNode(fmt.Sprintf("n%d", i+1), "")
		if err != nil {
			return err
		}
		if peerPort[n.name], err = cluster.FreePort(); err != nil {
			return err
		}
	}
	advertised := map[string]string{}
	var initial []string
	for _, n := range c.nodes {
		real := "127.0.0.1:" + strconv.Itoa(peerPort[n.name])
		adv := real
		if count > 1 {
			if adv, err = c.link(cluster.PeersLink, n.name, real); err != nil {
				return err
			}
		}
		advertised[n.name] = "http://" + adv
		initial = append(initial, n.name+"="+advertised[n.name])
	}
	for _, n := range c.nodes {
		client := "http://" + n.addr()
		n.argv = append([]string{bin,
			"--name", n.name,
			"--data-dir", filepath.Join(n.dir, "data"),
			"--listen-client-urls", client,
			"--advertise-client-urls", client,
			"--listen-peer-urls", "http://127.0.0.1:" + strconv.Itoa(peerPort[n.name]),
			"--initial-advertise-peer-urls", advertised[n.name],
			"--initial-cluster", strings.Join(initial, ","),
		}, cluster.EtcdFlags()...)
		addr := n.addr()
		n.ready = func(ctx context.Context) error { return cluster.EtcdReady(ctx, addr) }
	}
	return nil
}
