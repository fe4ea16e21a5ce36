package docker

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
)

// Container ports of the systems. A peer port that differs per node
// (ZooKeeper's quorum and election ports, etcd's peer port) is the base
// plus the node's number, so that 127.0.0.1:port names the same node in
// every container: the node's own listener in its container, a relay to it
// in the others.
//
// The client ports are the systems' declared ones (cluster.SystemInfo.Port).
var (
	redisPort     = clientPort(cluster.Redis)
	postgresPort  = clientPort(cluster.Postgres)
	zookeeperPort = clientPort(cluster.ZooKeeper)
	etcdPort      = clientPort(cluster.Etcd)
	mariadbPort   = clientPort(cluster.MariaDB)
)

const (
	sentinelPort       = "26379/tcp"
	redisRelayBase     = 16000 // + k: the relay to Redis data node nk
	zookeeperQuorum    = 12800 // + k: nk's quorum port
	zookeeperElection  = 13800 // + k: nk's election port
	etcdPeerBase       = 12300 // + k: nk's peer port
	postgresDataDir    = dataDir + "/pg"
	zookeeperDataDir   = dataDir + "/zk"
	etcdDataDir        = dataDir + "/etcd"
	mariadbDataDir     = dataDir + "/mariadb"
	postgresUnprivUser = "postgres"
)

// clientPort returns the container port spec of the declared client port
// of a system, "" for an undeclared one.
func clientPort(system string) string {
	info, err := cluster.LookupSystem(system)
	if err != nil {
		return ""
	}
	return tcp(info.Port)
}

// portNumber returns the number of a container port spec ("6379/tcp").
func portNumber(spec string) string { return strings.TrimSuffix(spec, "/tcp") }

// tcp returns a container port spec of a port number.
func tcp(port int) string { return strconv.Itoa(port) + "/tcp" }

// redisRelayPort returns the port, on every container's loopback, that
// leads to Redis data node t.
func redisRelayPort(t *node) int { return redisRelayBase + t.index }

// plan gives every node its published ports, script, files, relays and
// readiness probe, by the system's plan in package cluster.
func (c *Cluster) plan() error {
	info, err := cluster.LookupSystem(c.spec.System)
	if err != nil {
		return err
	}
	for _, n := range c.nodes {
		n.skew = info.NoClockSkew == ""
		n.ready = info.Ready
	}
	switch c.spec.System {
	case cluster.Redis:
		if c.spec.Topology == cluster.TopologyCluster {
			return c.planRedisCluster()
		}
		return c.planRedis()
	case cluster.Postgres:
		return c.planPostgres()
	case cluster.ZooKeeper:
		return c.planZooKeeper()
	case cluster.Etcd:
		return c.planEtcd()
	case cluster.MariaDB:
		return c.planMariaDB()
	}
	return fmt.Errorf("%w: docker: system %q", cluster.ErrUnavailable, c.spec.System)
}

// quote returns s quoted for sh.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// command returns argv as one sh command line. An argument that begins
// with "$bin/" names a program in the directory the script found (the
// shell expands it); every other is quoted.
func command(argv ...string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = quote(a)
		if strings.HasPrefix(a, "$bin/") {
			q[i] = `"` + a + `"`
		}
	}
	return strings.Join(q, " ")
}

// logTo returns the redirection that appends to the node's log.
func logTo(n *node) string { return " >>" + quote(logDir+"/"+n.Name+".log") + " 2>&1" }

// dataNodes returns the nodes that are not sentinels.
func (c *Cluster) dataNodes() []*node {
	var out []*node
	for _, n := range c.nodes {
		if n.Role != cluster.RoleSentinel {
			out = append(out, n)
		}
	}
	return out
}

// script returns the shell script a node's container runs as its first
// process: the node's setup, then its server, started again each time it
// ends once the harness asks (Start creates startFile): Kill kills the
// server's processes, not the container, so that the node dies and comes
// back at the speed of a process, its container, network namespace and
// relays staying up, as a local node's links do.
func script(n *node) string {
	lines := []string{}
	if n.setup != "" {
		lines = append(lines, n.setup)
	}
	return strings.Join(append(lines,
		"rm -f "+confDir+"/"+startFile,
		"while :; do",
		"  "+n.server+" &",
		"  wait $!",
		"  until [ -e "+confDir+"/"+startFile+" ]; do sleep 0.01; done",
		"  rm -f "+confDir+"/"+startFile,
		"done",
	), "\n")
}

// startFile, created in a node's config directory, makes its script start
// the server again.
const startFile = "start"

// planRedis: each data node runs redis-server with the plan's config; a
// replica replicates from n1 through its relay; in the sentinel topology
// every node has a relay to every data node over "peers->nK", replicas
// announce their relay port, and the sentinels (which talk to each other
// over the run's Docker network, by host name) watch n1 through theirs.
func (c *Cluster) planRedis() error {
	data := c.dataNodes()
	sentinel := c.spec.Topology == cluster.TopologySentinel
	for _, n := range c.nodes {
		port := redisPort
		if n.Role == cluster.RoleSentinel {
			port = sentinelPort
		}
		if err := c.publish(n, port); err != nil {
			return err
		}
		if sentinel {
			for _, t := range data {
				n.relay(redisRelayPort(t), cluster.ReplicationLink(c.spec, n.Name, t.Name), t, redisPort)
			}
		}
	}
	primary := data[0]
	for _, n := range data {
		conf := append(cluster.Settings(c.spec), "port "+portNumber(redisPort), "bind 0.0.0.0", "dir "+dataDir, `logfile ""`)
		if n.Role == cluster.RoleReplica {
			via := n.relay(redisRelayPort(primary), cluster.ReplicationLink(c.spec, n.Name, primary.Name), primary, redisPort)
			conf = append(conf, "replicaof 127.0.0.1 "+portOf(via))
		}
		if sentinel {
			conf = append(conf, "replica-announce-ip 127.0.0.1", "replica-announce-port "+strconv.Itoa(redisRelayPort(n)))
		}
		n.files["redis.conf"] = strings.Join(conf, "\n") + "\n"
		n.server = command(append([]string{"redis-server", confDir + "/redis.conf"}, c.extra...)...) + logTo(n)
	}
	for _, s := range c.nodes[len(data):] {
		conf := append([]string{"port 26379", "bind 0.0.0.0", "dir " + dataDir, `logfile ""`,
			"sentinel resolve-hostnames yes", "sentinel announce-ip " + s.Name, "sentinel announce-port 26379"},
			cluster.SentinelConfig("127.0.0.1", redisRelayPort(primary))...)
		s.files["sentinel.conf"] = strings.Join(conf, "\n") + "\n"
		s.server = command("redis-sentinel", confDir+"/sentinel.conf") + logTo(s)
		replicas := len(data) - 1
		s.ready = func(ctx context.Context, addr string) error { return cluster.SentinelReady(ctx, addr, replicas) }
	}
	return nil
}

// portOf returns the port of a "host:port" address.
func portOf(addr string) string {
	i := strings.LastIndexByte(addr, ':')
	return addr[i+1:]
}

// planPostgres: initdb (once: a restarted container keeps its data) and
// postgres, both as the unprivileged user postgres, listening on every
// address of the container and trusting every client (connections arrive
// from the engine's port forwarder).
func (c *Cluster) planPostgres() error {
	n := c.nodes[0]
	if err := c.publish(n, postgresPort); err != nil {
		return err
	}
	asUser := []string{"setpriv", "--reuid=" + postgresUnprivUser, "--regid=" + postgresUnprivUser, "--init-groups"}
	initdb := append(append(append([]string{}, asUser...), "$bin/initdb", "-D", postgresDataDir), cluster.PostgresInitdbArgs...)
	server := append(append([]string{}, asUser...), "$bin/postgres", "-D", postgresDataDir,
		"-c", "listen_addresses=*", "-c", "port="+portNumber(postgresPort), "-c", "unix_socket_directories=/tmp")
	for _, s := range cluster.Settings(c.spec) {
		server = append(server, "-c", s)
	}
	// $bin: the newest installed version's programs.
	n.setup = strings.Join([]string{
		`bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)`,
		`if [ ! -f ` + postgresDataDir + `/PG_VERSION ]; then mkdir -p ` + postgresDataDir + ` && chown ` + postgresUnprivUser + ": " + postgresDataDir +
			` && ` + command(initdb...) + logTo(n) + ` || exit 1`,
		// Connections come from the engine's port forwarder, not loopback.
		`echo 'host all all all trust' >>` + postgresDataDir + `/pg_hba.conf; fi`,
	}, "\n")
	n.server = command(server...) + logTo(n)
	return nil
}

// planMariaDB: mariadb-install-db (once: a restarted container keeps its
// data) and mariadbd, both as root (--user=root), reading no option file,
// listening on every address of the container (connections arrive from
// the engine's port forwarder; the settings skip the grant tables, so any
// address may connect).
func (c *Cluster) planMariaDB() error {
	n := c.nodes[0]
	if err := c.publish(n, mariadbPort); err != nil {
		return err
	}
	install := append([]string{"mariadb-install-db", "--no-defaults", "--datadir=" + mariadbDataDir, "--user=root"}, cluster.MariaDBInstallArgs...)
	server := append([]string{"/usr/sbin/mariadbd", "--no-defaults", "--datadir=" + mariadbDataDir, "--user=root",
		"--bind-address=0.0.0.0", "--port=" + portNumber(mariadbPort),
		"--socket=/tmp/mysqld.sock", "--pid-file=/tmp/mysqld.pid"}, cluster.Settings(c.spec)...)
	n.setup = `if [ ! -d ` + mariadbDataDir + `/mysql ]; then ` + command(install...) + logTo(n) + ` || exit 1; fi`
	n.server = command(server...) + logTo(n)
	return nil
}

// planZooKeeper: a standalone server, or an ensemble in which server k's
// quorum and election addresses are 127.0.0.1:zookeeperQuorum+k and
// 127.0.0.1:zookeeperElection+k in every member's zoo.cfg: its own
// listeners in its container, relays over "nJ->nK" and
// "nJ->nK/election" in the others. An address a server announces in leader
// election is thus the right link wherever it is dialled back.
func (c *Cluster) planZooKeeper() error {
	members := len(c.nodes)
	for _, n := range c.nodes {
		ports := []string{zookeeperPort}
		if members > 1 {
			ports = append(ports, tcp(zookeeperQuorum+n.index), tcp(zookeeperElection+n.index))
		}
		if err := c.publish(n, ports...); err != nil {
			return err
		}
	}
	for _, n := range c.nodes {
		conf := append(cluster.Settings(c.spec),
			"dataDir="+zookeeperDataDir, "clientPort="+portNumber(zookeeperPort), "clientPortAddress=0.0.0.0")
		if members > 1 {
			conf = append(conf, "quorumListenOnAllIPs=true")
			for _, p := range c.nodes {
				q, e := zookeeperQuorum+p.index, zookeeperElection+p.index
				if p != n {
					n.relay(q, linknet.Name(n.Name, p.Name), p, tcp(q))
					n.relay(e, linknet.Name(n.Name, p.Name+linknet.PurposeSeparator+cluster.ZooKeeperElection), p, tcp(e))
				}
				conf = append(conf, fmt.Sprintf("server.%d=127.0.0.1:%d:%d", p.index, q, e))
			}
		}
		n.files["zoo.cfg"] = strings.Join(conf, "\n") + "\n"
		java := append([]string{"java"}, cluster.ZooKeeperJVM(cluster.ZooKeeperJar+":"+cluster.ZooKeeperLogJar, confDir+"/zoo.cfg")...)
		n.setup = "mkdir -p " + zookeeperDataDir + " && echo " + strconv.Itoa(n.index) + " >" + zookeeperDataDir + "/myid || exit 1"
		n.server = command(java...) + logTo(n)
	}
	return nil
}

// planEtcd: a single member, or a cluster in which member k's peer URL is
// http://127.0.0.1:etcdPeerBase+k in every member's view (etcd derives
// member ids from the advertised URLs, which must be the same everywhere):
// its own listener in its container, and in member j's container a relay
// over the link "nJ->nK". Each member has its own relays, so the links are
// per pair, as ZooKeeper's are and as the local backend's are (there the
// members dial one address and the kernel tells them apart by their group
// ids), and cutting a member's links cuts the connections it dials as well
// as those dialled to it.
func (c *Cluster) planEtcd() error {
	members := len(c.nodes)
	var initial []string
	for _, n := range c.nodes {
		peer := etcdPeerBase + n.index
		ports := []string{etcdPort}
		if members > 1 {
			ports = append(ports, tcp(peer))
		}
		if err := c.publish(n, ports...); err != nil {
			return err
		}
		initial = append(initial, fmt.Sprintf("%s=http://127.0.0.1:%d", n.Name, peer))
	}
	for _, n := range c.nodes {
		peer := etcdPeerBase + n.index
		for _, p := range c.nodes {
			if p != n && members > 1 {
				q := etcdPeerBase + p.index
				n.relay(q, linknet.Name(n.Name, p.Name), p, tcp(q))
			}
		}
		argv := append([]string{"etcd",
			"--name", n.Name,
			"--data-dir", etcdDataDir,
			"--listen-client-urls", "http://0.0.0.0:" + portNumber(etcdPort),
			"--advertise-client-urls", "http://" + n.Addr,
			"--listen-peer-urls", fmt.Sprintf("http://0.0.0.0:%d", peer),
			"--initial-advertise-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", peer),
			"--initial-cluster", strings.Join(initial, ","),
		}, cluster.Settings(c.spec)...)
		n.server = command(argv...) + logTo(n)
	}
	return nil
}
