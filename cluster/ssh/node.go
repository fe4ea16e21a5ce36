package ssh

// node.go holds one node on its host: its dir, config and port, and the
// shell scripts that start, signal and kill its server there and fetch its
// log.

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster"
)

// portOffset is added to a system's declared client port (and the node's
// number) to make a node's port on its host, away from a server the host
// may run on its standard port.
const portOffset = 20000

// node is one server of the cluster on its host.
type node struct {
	name, role string
	conn       *conn
	dir        string // its dir on the host
	port       int
	addr       string // host:port, the host's address
	logPath    string // where its log is fetched to, on the harness
	ready      func(ctx context.Context, addr string) error
	command    string // the server's command line, run in dir
	config     string // the config file's name in dir, "" for none
	configText string
	install    string // a command run once in dir before the first start, "" for none
	prelude    string // shell lines the start runs before the command (variables it reads)
	cleanup    string // a command run in dir after the server's last kill, "" for none
	clock      string // its clock file on the host, "" when its clock cannot be skewed

	mu sync.Mutex // one start, kill or signal at a time
}

// addNode adds the i-th node of the layout on its host (round robin over
// the inventory), with its port, dir and config.
func (c *Cluster) addNode(i int, l cluster.Node) error {
	info, err := cluster.LookupSystem(c.spec.System)
	if err != nil {
		return fmt.Errorf("ssh: %w", err)
	}
	conn := c.hosts[i%len(c.hosts)]
	port := info.Port + portOffset + i + 1
	logDir := c.spec.LogDir
	if logDir == "" {
		logDir = os.TempDir()
	}
	n := &node{
		name: l.Name, role: l.Role, conn: conn, port: port,
		dir:     c.runDir(conn) + "/" + l.Name,
		addr:    net.JoinHostPort(conn.host.Address, strconv.Itoa(port)),
		logPath: filepath.Join(logDir, l.Name+".log"),
		ready:   info.Ready,
	}
	if c.spec.LogDir == "" {
		n.logPath = ""
	}
	switch c.spec.System {
	case cluster.Redis:
		n.redisNode(c.spec)
	case cluster.MariaDB:
		n.mariaDB(c.spec)
	case cluster.Postgres:
		n.postgres(c.spec, c.inv.Harness)
	case cluster.Etcd, cluster.ZooKeeper:
		// Its command is made once every member has a port (wireEtcd,
		// wireZooKeeper).
	default:
		return fmt.Errorf("%w: the ssh backend does not run %s", cluster.ErrUnavailable, c.spec.System)
	}
	if c.lib != nil && info.NoClockSkew == "" {
		n.clock = n.dir + "/clock"
		n.command = strings.TrimSpace("env LD_PRELOAD=" + quote(c.libPath(conn)) + " " + cluster.ClockFileEnv + "=" + quote(n.clock) + " " + n.command)
	}
	c.nodes = append(c.nodes, n)
	return nil
}

// statFunc is the shell function stat_ FILE: it sets st to the state and
// sid to the session of the process whose /proc/PID/stat FILE is, with
// the shell's builtins only (a kill polls it), and fails when the process
// is gone.
const statFunc = `stat_() { { read -r l < "$1"; } 2>/dev/null || return 1; r=${l##*) }; set -- $r; st=$1 sid=$4; }; `

// aliveFunc is the shell function alive PID: the process exists and is
// not a zombie.
const aliveFunc = statFunc + `alive() { [ -n "$1" ] && stat_ "/proc/$1/stat" && [ "$st" != Z ] && [ "$st" != X ]; }; `

// setup makes the node's dir on its host and writes its config there.
func (n *node) setup(ctx context.Context) error {
	if _, err := n.conn.run(ctx, "mkdir -p "+quote(n.dir), nil); err != nil {
		return fmt.Errorf("ssh: %s: %w", n.name, err)
	}
	if n.clock != "" {
		// The clock file holds a zero offset (cluster.CreateClockFile).
		if _, err := n.conn.run(ctx, "head -c 8 /dev/zero > "+quote(n.clock)+" && chmod 644 "+quote(n.clock), nil); err != nil {
			return fmt.Errorf("ssh: %s: clock file: %w", n.name, err)
		}
	}
	if n.config != "" {
		if _, err := n.conn.run(ctx, "cat > "+quote(n.dir+"/"+n.config), strings.NewReader(n.configText)); err != nil {
			return fmt.Errorf("ssh: %s: config: %w", n.name, err)
		}
	}
	if n.install != "" {
		if _, err := n.conn.run(ctx, rootUser+"cd "+quote(n.dir)+" && { "+n.install+"; } >> node.log 2>&1 < /dev/null", nil); err != nil {
			return fmt.Errorf("ssh: %s: %w (its log: %s)", n.name, err, n.logTail(ctx))
		}
	}
	return nil
}

// rootUser sets the shell variable u to --user=root when the SSH user is
// root, which mariadbd and mariadb-install-db then need.
const rootUser = `u=""; [ "$(id -u)" = 0 ] && u=--user=root; `

// pgBin sets the shell variable pg to the newest
// /usr/lib/postgresql/<version>/bin on the host.
const pgBin = `pg=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1); `

// unprivileged runs the rest of a command line as nobody when the SSH
// user is root: PostgreSQL refuses to run as root.
const unprivileged = `$([ "$(id -u)" = 0 ] && echo setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups)`

// postgres sets the node up as one PostgreSQL server: initdb into its dir
// (given to nobody when the SSH user is root), then postgres listening on
// its host's address only, its Unix socket in its dir, with the settings
// of cluster.Settings (as the local backend's), trusting the harness's
// address as initdb trusts the loopback's. The inventory's paths of
// initdb and postgres, when given, replace those of the newest version
// under /usr/lib/postgresql.
func (n *node) postgres(spec cluster.Spec, harness string) {
	bin := func(name string) string {
		if p := n.conn.host.binary(name); p != name {
			return quote(p)
		}
		return `"$pg"/` + name
	}
	data := quote(n.dir + "/data")
	n.install = pgBin + `[ "$(id -u)" = 0 ] && chown -R nobody "$(pwd)"; env LC_ALL=C ` + unprivileged + " " + bin("initdb") + " -D " + data + " " + strings.Join(cluster.PostgresInitdbArgs, " ") +
		" && echo 'host all all " + harness + "/32 trust' >> " + quote(n.dir+"/data/pg_hba.conf")
	args := []string{"-D", data, "-c", "listen_addresses=" + n.conn.host.Address, "-c", "port=" + strconv.Itoa(n.port), "-c", "unix_socket_directories=" + quote(n.dir)}
	for _, setting := range cluster.Settings(spec) {
		args = append(args, "-c", setting)
	}
	n.command = "env LC_ALL=C " + unprivileged + " " + bin("postgres") + " " + strings.Join(args, " ")
	n.prelude = pgBin
	// A postmaster killed with SIGKILL leaves its System V shared memory
	// segment, keyed by the data dir's inode; a restart removes it, the
	// teardown does here.
	n.cleanup = `k=$(printf '0x%08x' "$(stat -c %i data)") && ipcs -m | awk -v k="$k" '$1 == k && $6 == 0 {print $2}' | xargs -r -n 1 ipcrm -m`
}

// mariaDB sets the node up as one MariaDB server: mariadb-install-db into
// its dir, then mariadbd reading no option file, listening on its host's
// address only, its data, socket and pid file in its dir, with the
// settings of cluster.Settings (as the local backend's).
func (n *node) mariaDB(spec cluster.Spec) {
	data := quote(n.dir + "/data")
	n.install = "env LC_ALL=C " + quote(n.conn.host.binary("mariadb-install-db")) + " --no-defaults --datadir=" + data + " --tmpdir=" + quote(n.dir) + " $u " + strings.Join(cluster.MariaDBInstallArgs, " ")
	n.command = "env LC_ALL=C " + quote(n.conn.host.binary("mariadbd")) + " --no-defaults --datadir=" + data + " $u" +
		" --bind-address=" + n.conn.host.Address + " --port=" + strconv.Itoa(n.port) +
		" --socket=" + quote(n.dir+"/mysqld.sock") + " --pid-file=" + quote(n.dir+"/mysqld.pid") + " --tmpdir=" + quote(n.dir) +
		" " + strings.Join(cluster.Settings(spec), " ")
}

// start starts the node's server and waits until it answers. The server
// runs under a /bin/sh of its own, started with setsid so that both
// outlive the SSH session, which leads the server's session and process
// group (its pid in the file group), starts the server (its pid in the
// file pid, its output appended to node.log) and waits for it: the server
// killed is so reaped at once by its parent, not by the host's init, which
// may reap late (a VM's init took 1.4-1.8 s).
func (n *node) start(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	leader := rootUser + n.prelude + `echo $$ > group; ` + n.command + ` & echo $! > pid.new && mv pid.new pid; wait`
	script := aliveFunc + "cd " + quote(n.dir) + ` || exit 1
if [ -f pid ] && alive "$(cat pid)"; then echo "already running as pid $(cat pid)"; exit 1; fi
rm -f pid group
(setsid /bin/sh -c ` + quote(leader) + ` >> node.log 2>&1 < /dev/null &)
i=0
until [ -s pid ]; do
  i=$((i+1)); [ $i -gt 1000 ] && { echo "no pid after 10s"; exit 1; }
  sleep 0.01
done`
	if _, err := n.conn.run(ctx, script, nil); err != nil {
		return fmt.Errorf("ssh: start %s: %w", n.name, err)
	}
	wait, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	for {
		err := n.ready(wait, n.addr)
		if err == nil {
			return nil
		}
		select {
		case <-wait.Done():
			return fmt.Errorf("ssh: %s on %s does not answer at %s: %w (its log: %s)", n.name, n.conn.host.Name, n.addr, err, n.logTail(ctx))
		case <-time.After(readyPoll):
		}
	}
}

// readyPoll is the pause between two readiness checks of a starting node.
const readyPoll = 10 * time.Millisecond

// ownedFunc is the shell function owned PID: the process's working dir is
// the current dir or below it (mariadbd moves into its data dir).
const ownedFunc = `owned() { case "$(readlink /proc/$1/cwd 2>/dev/null)" in "$(pwd -P)"|"$(pwd -P)"/*) return 0;; esac; return 1; }; `

// sessionFunc is the shell function session PID: a process of the
// session PID leads (started with setsid) is alive, not a zombie.
const sessionFunc = `session() { ps -o stat= --sid "$1" 2>/dev/null | grep -q '^[^ZX]'; }; `

// kill kills the node's server with SIGKILL, if it runs, then every
// process of its process group and waits until they are gone. Only a
// process whose working dir is the node's, or below it, is killed: a pid
// file outlives its process, and a pid is reused. It waits until the
// server is reaped too, not only dead: PostgreSQL takes the pid of a
// zombie in its lock file for a running postmaster. The server is killed
// before its group so that its parent (start) reaps it at once. Its log
// is fetched at close, not here: a kill takes no longer than on the local
// backend.
func (n *node) kill(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	script := aliveFunc + ownedFunc + sessionFunc + "cd " + quote(n.dir) + ` 2>/dev/null || exit 0
[ -f pid ] || exit 0
p=$(cat pid)
g=$(cat group 2>/dev/null)
alive "$p" && owned "$p" || exit 0
kill -KILL "$p"
[ -n "$g" ] && kill -CONT -"$g" 2>/dev/null # a paused leader reaps the server only when it runs
i=0
while [ -e "/proc/$p" ]; do
  i=$((i+1)); [ $i -gt 2000 ] && { echo "pid $p outlived SIGKILL for 20s"; exit 1; }
  sleep 0.01
done
[ -n "$g" ] && owned "$g" && kill -KILL -"$g" 2>/dev/null
while [ -n "$g" ] && session "$g"; do
  i=$((i+1)); [ $i -gt 2000 ] && { echo "session $g outlived SIGKILL for 20s"; exit 1; }
  sleep 0.01
done
rm -f pid group`
	if _, err := n.conn.run(ctx, script, nil); err != nil {
		return fmt.Errorf("ssh: kill %s: %w", n.name, err)
	}
	return nil
}

// signal sends the signal (STOP, CONT) to the node's running server and
// every process of its process group (its leader shell and the server's
// children: PostgreSQL's backends), as the local backend does. A STOP
// returns once every thread of the group is stopped, so that a paused
// server answers nothing from then on: kill returns when the signal is
// sent, and a thread running on another CPU may still answer a request
// until it takes the stop.
func (n *node) signal(ctx context.Context, sig string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	script := aliveFunc + "cd " + quote(n.dir) + ` || exit 1
p=$(cat pid 2>/dev/null)
alive "$p" || { echo "not running"; exit 1; }
g=$(cat group 2>/dev/null)
[ -n "$g" ] || { echo "no process group"; exit 1; }
kill -` + sig + ` -"$g"`
	if sig == "STOP" {
		script += waitStopped
	}
	if _, err := n.conn.run(ctx, script, nil); err != nil {
		return fmt.Errorf("ssh: SIG%s %s: %w", sig, n.name, err)
	}
	return nil
}

// writeClock writes offset over the first 8 bytes of the node's clock file
// on its host, in place and in one write (cluster.WriteClockOffset's
// format, in the harness's byte order, which the hosts must share).
func (n *node) writeClock(ctx context.Context, offset time.Duration) error {
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], uint64(int64(offset)))
	script := "dd of=" + quote(n.clock) + " bs=8 count=1 iflag=fullblock conv=notrunc status=none"
	if _, err := n.conn.run(ctx, script, bytes.NewReader(b[:])); err != nil {
		return fmt.Errorf("ssh: clock of %s: %w", n.name, err)
	}
	return nil
}

// close kills the node's server for good, fetches its log and runs its
// cleanup.
func (n *node) close(ctx context.Context) error {
	if err := n.kill(ctx); err != nil {
		return err
	}
	if err := n.fetchLog(ctx); err != nil || n.cleanup == "" {
		return err
	}
	if _, err := n.conn.run(ctx, "cd "+quote(n.dir)+" && "+n.cleanup, nil); err != nil {
		return fmt.Errorf("ssh: clean up after %s: %w", n.name, err)
	}
	return nil
}

// fetchLog copies the node's log from its host to logPath (when the spec
// names a log dir), whole: the log on the host grows across restarts.
func (n *node) fetchLog(ctx context.Context) error {
	if n.logPath == "" {
		return nil
	}
	out, err := n.conn.run(ctx, "cat "+quote(n.dir+"/node.log")+" 2>/dev/null || true", nil)
	if err != nil {
		return fmt.Errorf("ssh: fetch the log of %s: %w", n.name, err)
	}
	if err := os.WriteFile(n.logPath, []byte(out), 0o644); err != nil {
		return fmt.Errorf("ssh: fetch the log of %s: %w", n.name, err)
	}
	return nil
}

// logTail returns the last lines of the node's log on its host, for an
// error.
func (n *node) logTail(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	out, err := n.conn.run(ctx, "tail -n 8 "+quote(n.dir+"/node.log"), nil)
	if err != nil {
		return err.Error()
	}
	return strings.TrimSpace(out)
}

// waitStopped is the end of a STOP's script: it waits, polling every
// 10 ms for up to 5 s, until every thread of every process in process
// group $g is stopped (state T, or t when traced) or dead (Z, X: a
// zombie its stopped parent cannot reap, a fork of Redis's that saved),
// as /proc/PID/stat and /proc/PID/task/*/stat say (the fields after the
// command: state, parent, group). It reads the tasks of the group's
// processes only.
const waitStopped = `
i=0
while :; do
  all=1
  for f in /proc/[0-9]*/stat; do
    { read -r l < "$f"; } 2>/dev/null || continue
    set -- ${l##*") "}
    [ "$3" = "$g" ] || continue
    for t in "${f%/stat}"/task/*/stat; do
      { read -r l < "$t"; } 2>/dev/null || continue
      set -- ${l##*") "}
      case $1 in T|t|Z|X) ;; *) all=0 ;; esac
    done
  done
  [ $all = 1 ] && exit 0
  i=$((i+1)); [ $i -gt 500 ] && { echo "process group $g not stopped 5s after SIGSTOP"; exit 1; }
  sleep 0.01
done`
