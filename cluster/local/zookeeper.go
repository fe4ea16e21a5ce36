package local

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ZooKeeper timing: a short tick so sessions expire quickly under faults.
// Sessions may ask for timeouts between zkMinSession and zkMaxSession.
const (
	zkTick       = 200 * time.Millisecond
	zkMinSession = 2 * zkTick
	zkMaxSession = 60 * time.Second
)

// zookeeperJar is Debian's ZooKeeper jar; its manifest names its dependencies.
const zookeeperJar = "/usr/share/java/zookeeper.jar"

// zookeeperLogJar, when present, makes ZooKeeper log to stderr (the node log)
// instead of nowhere.
const zookeeperLogJar = "/usr/share/java/slf4j-simple.jar"

// zkElection is the purpose of the link that carries leader election.
const zkElection = "election"

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
	if _, err := os.Stat(zookeeperJar); err != nil {
		return fmt.Errorf("local: ZooKeeper: %w", err)
	}
	classpath := zookeeperJar
	if _, err := os.Stat(zookeeperLogJar); err == nil {
		classpath += ":" + zookeeperLogJar
	}
	count := max(c.spec.Nodes, 1)
	type ports struct{ quorum, election int }
	peer := make([]ports, count)
	for i := range count {
		if _, err := c.addNode(fmt.Sprintf("n%d", i+1), ""); err != nil {
			return err
		}
		if count > 1 {
			q, err := freePort()
			if err != nil {
				return err
			}
			e, err := freePort()
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
		conf := []string{
			"tickTime=" + strconv.FormatInt(zkTick.Milliseconds(), 10),
			"initLimit=10",
			"syncLimit=5",
			"minSessionTimeout=" + strconv.FormatInt(zkMinSession.Milliseconds(), 10),
			"maxSessionTimeout=" + strconv.FormatInt(zkMaxSession.Milliseconds(), 10),
			"dataDir=" + data,
			"clientPort=" + strconv.Itoa(n.port),
			"clientPortAddress=127.0.0.1",
			"admin.enableServer=false",
			"4lw.commands.whitelist=ruok,srvr,mntr,stat,cons",
			"maxClientCnxns=0",
			"autopurge.purgeInterval=0",
		}
		if count > 1 {
			if err := os.WriteFile(filepath.Join(data, "myid"), []byte(strconv.Itoa(i+1)+"\n"), 0o644); err != nil {
				return fmt.Errorf("local: zookeeper myid: %w", err)
			}
			conf = append(conf, "standaloneEnabled=false", "reconfigEnabled=false", "cnxTimeout=500")
			var redirects []string
			for j, other := range c.nodes {
				q, e := peer[j].quorum, peer[j].election
				if j != i {
					qa, err := c.link(n.name, other.name, net.JoinHostPort("127.0.0.1", strconv.Itoa(q)))
					if err != nil {
						return err
					}
					ea, err := c.link(n.name, other.name+"/"+zkElection, net.JoinHostPort("127.0.0.1", strconv.Itoa(e)))
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
		n.argv = []string{java, "-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
			"-Dzookeeper.admin.enableServer=false", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
			// Short election back-off: votes are re-sent every 0.1 to 0.8 s.
			"-Dzookeeper.fastleader.minNotificationInterval=100", "-Dzookeeper.fastleader.maxNotificationInterval=800",
			"-cp", classpath, "org.apache.zookeeper.server.quorum.QuorumPeerMain", path}
		addr := n.addr()
		n.ready = func(ctx context.Context) error { return zkServing(ctx, addr) }
	}
	return nil
}

// portOf returns the port of a "host:port" address.
func portOf(addr string) int {
	_, p, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(p)
	return port
}

// zkFourLetter sends a four-letter command and returns the whole answer.
func zkFourLetter(ctx context.Context, addr, cmd string) (string, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if _, err := io.WriteString(conn, cmd); err != nil {
		return "", err
	}
	b, err := io.ReadAll(conn)
	return string(b), err
}

// zkServing reports whether the server answers client requests: `srvr`
// names its mode (standalone, leader, follower) only then.
func zkServing(ctx context.Context, addr string) error {
	out, err := zkFourLetter(ctx, addr, "srvr")
	if err != nil {
		return err
	}
	if !strings.Contains(out, "Mode: ") {
		return fmt.Errorf("local: zookeeper not serving: %s", strings.TrimSpace(out))
	}
	return nil
}

// ZooKeeperMode returns the server's mode as `srvr` reports it
// ("standalone", "leader", "follower"), or an error when it is not serving.
func ZooKeeperMode(ctx context.Context, addr string) (string, error) {
	out, err := zkFourLetter(ctx, addr, "srvr")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(out, "\n") {
		if m, ok := strings.CutPrefix(line, "Mode: "); ok {
			return strings.TrimSpace(m), nil
		}
	}
	return "", fmt.Errorf("local: zookeeper not serving: %s", strings.TrimSpace(out))
}
