package local

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/jepsen-lite/jepsen-lite/cluster"
)

// etcdGidBase is the base of the group ids etcd members run with in a
// cluster: member nK runs as root with primary group id etcdGidBase+K
// (304321 for n1), so the kernel tells the connections it dials apart from
// the other members' (linknet.Network.LinkFrom). The range lies in
// 65536-524287, which systemd leaves unused (no user database, container
// or dynamic range), and needs no group entry; concurrent clusters may
// share the ids, as a per-source link is also keyed by the shared address
// it translates, a port reserved by its own Network.
const etcdGidBase = 0x4a4c0

// setupEtcd creates a single etcd node or a cluster. In a cluster member
// nK's peer URL is one address in every member's view (etcd derives member
// ids from the advertised URLs, which must be the same everywhere), shared
// by the per-source links "nJ->nK": member nJ runs with the group id
// etcdGidBase+J, so the kernel puts its connections to nK on its own link.
// Cutting every link of a member ("nJ->nK" and "nK->nJ") cuts both the
// connections it dials and those dialled to it, as on the docker backend:
// it loses its quorum.
func (c *Cluster) setupEtcd() error {
	bin, err := exec.LookPath("etcd")
	if err != nil {
		return fmt.Errorf("local: etcd: %w", err)
	}
	top, err := cluster.TopologyOf(c.spec)
	if err != nil {
		return fmt.Errorf("local: %w", err)
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
		if count > 1 && top.OneAdvertisedAddress {
			n.cred = &syscall.Credential{Uid: 0, Gid: uint32(etcdGidBase + i + 1), NoSetGroups: true}
		}
	}
	advertised := map[string]string{}
	var initial []string
	for _, n := range c.nodes {
		real := "127.0.0.1:" + strconv.Itoa(peerPort[n.name])
		adv := real
		for j, p := range c.nodes {
			if p == n {
				continue
			}
			if adv, err = c.peerLink(top, p.name, n.name, etcdGidBase+j+1, real); err != nil {
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
		}, cluster.Settings(c.spec)...)
		addr := n.addr()
		n.ready = func(ctx context.Context) error { return cluster.EtcdReady(ctx, addr) }
	}
	return nil
}
