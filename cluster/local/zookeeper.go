package local

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
)

// setupZooKeeper creates a standalone server (one node) or an ensemble. In
// an ensemble every server has its own zoo.cfg: its own quorum and election
// ports are real, and each peer's are the links "self->peer" (quorum) and
// "self->peer/election", so the nemesis can cut any pair. Followers reach the
// leader through those links. Leader election needs one more step: when the
// lower-numbered server of a pair dials first, the higher one dials back the
// address the lower one announces (its real port). The clock-skew library,
// preloaded into every ZooKeeper JVM, redirects such connections to the
// right link (JEPSEN_LITE_CONNECT_MAP), so every byte between two servers
// crosses a link. Without the library (WithoutClockSkew, or not found) those
// dial-backs bypass the links: isolating a follower still behaves like a
// clean partition, but an isolated leader can keep the majority voting for
// it (an asymmetric partition) until the heal.
func (c *Cluster) setupZooKeeper() error {
	java, err := exec.LookPath("java")
	if err != nil {
		return fmt.Errorf("local: java: %w", err)
	}
	if _, err := os.Stat(cluster.ZooKeeperJar); err != nil {
		return fmt.Errorf("local: ZooKeeper: %w", err)
	}
	classpath := cluster.ZooKeeperJar
	if _, err := os.Stat(cluster.ZooKeeperLogJar); err == nil {
		classpath += ":" + cluster.ZooKeeperLogJar
	}
	count := max(c.spec.Nodes, 1)
	type ports struct{ quorum, election int }
	peer := make([]ports, count)
	for i := range count {
		if _, err := c.addNode(fmt.Sprintf("n%d", i+1), ""); err != nil {
			return err
		}
		if count > 1 {
			q, err := cluster.FreePort()
			if err != nil {
				return err
			}
			e, err := cluster.FreePort()
			if err != nil {
				return err
			}
			peer[i] = ports{q, e}
		}
	}
	for i, n := range c.nodes {
		data := filepath.Join(n.dir, "data")
		if err := os.Mkdir(data, 0o755); err != nil {
			return fmt.Errorf("local: zookeeper data dir: %w", err)
		}
		conf := append(cluster.Settings(c.spec),
			"dataDir="+data,
			"clientPort="+strconv.Itoa(n.port),
			"clientPortAddress=127.0.0.1",
		)
		if count > 1 {
			if err := os.WriteFile(filepath.Join(data, "myid"), []byte(strconv.Itoa(i+1)+"\n"), 0o644); err != nil {
				return fmt.Errorf("local: zookeeper myid: %w", err)
			}
			var redirects []string
			for j, other := range c.nodes {
				q, e := peer[j].quorum, peer[j].election
				if j != i {
					qa, err := c.link(n.name, other.name, net.JoinHostPort("127.0.0.1", strconv.Itoa(q)))
					if err != nil {
						return err
					}
					ea, err := c.link(n.name, other.name+linknet.PurposeSeparator+cluster.ZooKeeperElection, net.JoinHostPort("127.0.0.1", strconv.Itoa(e)))
					if err != nil {
						return err
					}
					redirects = append(redirects,
						fmt.Sprintf("127.0.0.1:%d=%s", q, qa), fmt.Sprintf("127.0.0.1:%d=%s", e, ea))
					q, e = portOf(qa), portOf(ea)
				}
				conf = append(conf, fmt.Sprintf("server.%d=127.0.0.1:%d:%d", j+1, q, e))
			}
			n.env = append(n.env, connectMapEnv+"="+strings.Join(redirects, ","))
		}
		path := filepath.Join(n.dir, "zoo.cfg")
		if err := os.WriteFile(path, []byte(strings.Join(conf, "\n")+"\n"), 0o644); err != nil {
			return fmt.Errorf("local: zoo.cfg: %w", err)
		}
		n.argv = append([]string{java}, cluster.ZooKeeperJVM(classpath, path)...)
		addr := n.addr()
		n.ready = func(ctx context.Context) error { return cluster.ZooKeeperReady(ctx, addr) }
	}
	return nil
}

// portOf returns the port of a "host:port" address.
func portOf(addr string) int {
	_, p, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(p)
	return port
}
