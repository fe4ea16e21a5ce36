package local

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	"github.com/jepsen-lite/jepsen-lite/cluster"
)

// setupMariaDB creates one MariaDB node: mariadb-install-db into its temp
// dir, then a mariadbd command line that reads no option file, listens on
// 127.0.0.1 only, keeps its data, socket and pid file in the temp dir, and
// has the settings of cluster.Settings. As root, both run with --user=root
// (mariadbd refuses root otherwise).
func (c *Cluster) setupMariaDB() error {
	if c.spec.Nodes > 1 {
		return fmt.Errorf("local: mariadb runs a single node, not %d", c.spec.Nodes)
	}
	server, err := exec.LookPath("mariadbd")
	if err != nil {
		if server, err = exec.LookPath("/usr/sbin/mariadbd"); err != nil {
			return fmt.Errorf("local: mariadbd: %w", err)
		}
	}
	install, err := exec.LookPath("mariadb-install-db")
	if err != nil {
		return fmt.Errorf("local: mariadb-install-db: %w", err)
	}
	n, err := c.addNode("n1", cluster.RolePrimary)
	if err != nil {
		return err
	}
	data := filepath.Join(n.dir, "data")
	var user []string
	if os.Geteuid() == 0 {
		user = []string{"--user=root"}
	}
	// The bootstrap server's temp dir is the node's too: at start a server
	// removes the temporary tables it finds in its temp dir, and two
	// bootstraps sharing /tmp (two runs side by side) remove each other's.
	argv := append(append([]string{"--no-defaults", "--datadir=" + data, "--tmpdir=" + n.dir}, user...), cluster.MariaDBInstallArgs...)
	if err := n.initialise("mariadb-install-db", exec.Command(install, argv...)); err != nil {
		return err
	}
	n.argv = append(append([]string{server, "--no-defaults", "--datadir=" + data}, user...),
		"--bind-address=127.0.0.1",
		"--port="+strconv.Itoa(n.port),
		"--socket="+filepath.Join(n.dir, "mysqld.sock"),
		"--pid-file="+filepath.Join(n.dir, "mysqld.pid"),
		"--tmpdir="+n.dir,
	)
	n.argv = append(n.argv, cluster.Settings(c.spec)...)
	n.env = []string{"LC_ALL=C"}
	addr := n.addr()
	n.ready = func(ctx context.Context) error { return cluster.MariaDBReady(ctx, addr) }
	return nil
}
