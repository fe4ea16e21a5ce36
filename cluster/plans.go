package cluster

import (
	"os"
	"strconv"
	"time"
)

// The settings of PostgreSQL, MariaDB, ZooKeeper and etcd nodes that every backend
// gives them; a backend adds only where a node listens, logs and keeps its
// data.

// PostgresSettings returns the server settings ("name=value", for -c) of
// spec's PostgreSQL node: fsync, synchronous commit and full-page writes only
// with persistence, and room for every worker's connections.
func PostgresSettings(spec Spec) []string {
	durable := "off"
	if spec.Persistence {
		durable = "on"
	}
	return []string{
		"fsync=" + durable,
		"synchronous_commit=" + durable,
		"full_page_writes=" + durable,
		"max_connections=300",
		"shared_buffers=32MB",
		"logging_collector=off",
	}
}

// PostgresInitdbArgs are initdb's arguments after the data directory.
var PostgresInitdbArgs = []string{"-A", "trust", "-U", PostgresUser, "--no-sync", "-E", "UTF8", "--locale=C", "--no-instructions"}

// MariaDBSettings returns the server options (mariadbd's "--name=value"
// flags, after --no-defaults) of spec's MariaDB node: no grant tables, so
// that any user connects from any address without a password (clients
// arrive through links, and in a container from the engine's port
// forwarder); no name resolution; room for every worker's connections; a
// small buffer pool; the redo log written and synced at each commit only
// with persistence (without, once a second: a kill may lose the last
// second's commits).
func MariaDBSettings(spec Spec) []string {
	flush, doublewrite := "0", "OFF"
	if spec.Persistence {
		flush, doublewrite = "1", "ON"
	}
	return []string{
		"--skip-grant-tables",
		"--skip-name-resolve",
		"--max-connections=300",
		"--innodb-buffer-pool-size=32M",
		"--innodb-flush-log-at-trx-commit=" + flush,
		"--innodb-doublewrite=" + doublewrite,
		"--innodb-use-native-aio=OFF",
		mariadbLogFileSize,
	}
}

// mariadbLogFileSize is the size of the InnoDB redo log, given to
// mariadb-install-db and mariadbd alike, so that the server never resizes
// the log the install created.
const mariadbLogFileSize = "--innodb-log-file-size=16M"

// MariaDBInstallArgs are mariadb-install-db's arguments besides the data
// directory and the user: the system tables only, no test database, no
// name resolution, and the server's redo log size.
var MariaDBInstallArgs = []string{"--skip-test-db", "--skip-name-resolve", "--auth-root-authentication-method=normal", mariadbLogFileSize}

// ZooKeeper timing: a short tick so sessions expire quickly under faults.
// Sessions may ask for timeouts between ZooKeeperMinSession and
// ZooKeeperMaxSession.
const (
	ZooKeeperTick       = 200 * time.Millisecond
	ZooKeeperMinSession = 2 * ZooKeeperTick
	ZooKeeperMaxSession = 60 * time.Second
)

// ZooKeeperElection is the purpose of the link that carries a ZooKeeper
// server's leader election to a peer ("n2->n1/election").
const ZooKeeperElection = "election"

// ZooKeeperJar is Debian's ZooKeeper jar; its manifest names its
// dependencies. ZooKeeperLogJar, when present, makes ZooKeeper log to its
// standard error (the node log).
const (
	ZooKeeperJar    = "/usr/share/java/zookeeper.jar"
	ZooKeeperLogJar = "/usr/share/java/slf4j-simple.jar"
)

// ZooKeeperConfig returns the zoo.cfg lines every ZooKeeper server has,
// and, in an ensemble (members > 1), those every member has.
func ZooKeeperConfig(members int) []string {
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	conf := []string{
		"tickTime=" + ms(ZooKeeperTick),
		"initLimit=10",
		"syncLimit=5",
		"minSessionTimeout=" + ms(ZooKeeperMinSession),
		"maxSessionTimeout=" + ms(ZooKeeperMaxSession),
		"admin.enableServer=false",
		"4lw.commands.whitelist=ruok,srvr,mntr,stat,cons",
		"maxClientCnxns=0",
		"autopurge.purgeInterval=0",
	}
	if members > 1 {
		conf = append(conf, "standaloneEnabled=false", "reconfigEnabled=false", "cnxTimeout=500")
	}
	return conf
}

// ZooKeeperJVM returns the java command line of a ZooKeeper server, from
// the JVM's options to its config file: a small heap, a quick start, and a
// short election back-off (votes are re-sent every 0.1 to 0.8 s).
func ZooKeeperJVM(classpath, config string) []string {
	return []string{"-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dzookeeper.admin.enableServer=false", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		"-Dzookeeper.fastleader.minNotificationInterval=100", "-Dzookeeper.fastleader.maxNotificationInterval=800",
		"-cp", classpath, "org.apache.zookeeper.server.quorum.QuorumPeerMain", config}
}

// etcd timing: fast elections.
const (
	EtcdHeartbeat       = 20 * time.Millisecond
	EtcdElectionTimeout = 200 * time.Millisecond
)

// EtcdLogLevelEnv names the environment variable that sets the etcd
// members' log level, warn when it is unset or empty. At debug each member
// logs every request it served ("request stats": the request with its keys
// and lease IDs, when it began, how long it took, how many keys it
// returned), about 25 lines a second per member in a busy run: how
// docs/knownbugs.md reads the etcd 3.5.0 client's late grant. The default
// keeps the node logs to warnings (failed applies and revokes name their
// lease IDs too).
const EtcdLogLevelEnv = "JEPSEN_LITE_ETCD_LOG_LEVEL"

// EtcdFlags returns the etcd flags every member has, whatever its
// addresses: the cluster token, the timing and the log level
// (EtcdLogLevelEnv).
func EtcdFlags() []string {
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	level := os.Getenv(EtcdLogLevelEnv)
	if level == "" {
		level = "warn"
	}
	return []string{
		"--initial-cluster-state", "new",
		"--initial-cluster-token", "jepsen-lite",
		"--heartbeat-interval", ms(EtcdHeartbeat),
		"--election-timeout", ms(EtcdElectionTimeout),
		"--logger", "zap", "--log-level", level,
	}
}
