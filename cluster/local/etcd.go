package local

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster"
)

// etcd timing: fast elections on loopback.
const (
	etcdHeartbeat       = 20 * time.Millisecond
	etcdElectionTimeout = 200 * time.Millisecond
)

// etcdNoSkew says why an etcd node's clock cannot be offset.
const etcdNoSkew = "etcd is a Go binary: it reads the clock through the vDSO, not libc, so LD_PRELOAD cannot offset it"

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
		n.noSkewReason = etcdNoSkew
		if peerPort[n.name], err = freePort(); err != nil {
			return err
		}
	}
	advertised := map[string]string{}
	var initial []string
	for _, n := range c.nodes {
		real := "127.0.0.1:" + strconv.Itoa(peerPort[n.name])
		adv := real
		if count > 1 {
			if adv, err = c.link(peersLink, n.name, real); err != nil {
				return err
			}
		}
		advertised[n.name] = "http://" + adv
		initial = append(initial, n.name+"="+advertised[n.name])
	}
	for _, n := range c.nodes {
		client := "http://" + n.addr()
		n.argv = []string{bin,
			"--name", n.name,
			"--data-dir", filepath.Join(n.dir, "data"),
			"--listen-client-urls", client,
			"--advertise-client-urls", client,
			"--listen-peer-urls", "http://127.0.0.1:" + strconv.Itoa(peerPort[n.name]),
			"--initial-advertise-peer-urls", advertised[n.name],
			"--initial-cluster", strings.Join(initial, ","),
			"--initial-cluster-state", "new",
			"--initial-cluster-token", "jepsen-lite",
			"--heartbeat-interval", strconv.FormatInt(etcdHeartbeat.Milliseconds(), 10),
			"--election-timeout", strconv.FormatInt(etcdElectionTimeout.Milliseconds(), 10),
			"--logger", "zap", "--log-level", "warn",
		}
		url := client + "/health"
		n.ready = func(ctx context.Context) error { return etcdHealthy(ctx, url) }
	}
	return nil
}

// etcdHealthy reports whether the member's /health says it is healthy
// (it has a leader and answers).
func etcdHealthy(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return err
	}
	var h struct {
		Health string `json:"health"`
	}
	if err := json.Unmarshal(body, &h); err != nil {
		return fmt.Errorf("local: etcd health %q: %w", body, err)
	}
	if h.Health != "true" {
		return fmt.Errorf("local: etcd not healthy: %s", strings.TrimSpace(string(body)))
	}
	return nil
}

// etcdPeerLink returns the name of the link all raft traffic towards node
// goes through in a multi-member etcd cluster.
func etcdPeerLink(node string) string { return cluster.LinkName(peersLink, node) }
