package local

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"

	"github.com/jepsen-lite/jepsen-lite/cluster"
)

// postgresUnprivileged is the user initdb and postgres run as when the
// harness runs as root (PostgreSQL refuses to run as root).
const postgresUnprivileged = "nobody"

// setupPostgres creates one PostgreSQL node: initdb into its temp dir, then
// a postgres command line that listens on 127.0.0.1 only, with its Unix
// socket in the temp dir and the settings of cluster.Settings.
func (c *Cluster) setupPostgres() error {
	if c.spec.Nodes > 1 {
		return fmt.Errorf("local: postgres runs a single node, not %d", c.spec.Nodes)
	}
	bin := c.opts.pgBinDir
	if bin == "" {
		var err error
		if bin, err = postgresBinDir(); err != nil {
			return err
		}
	}
	n, err := c.addNode("n1", cluster.RolePrimary)
	if err != nil {
		return err
	}
	if os.Geteuid() == 0 {
		cred, err := unprivilegedCredential()
		if err != nil {
			return err
		}
		n.cred = cred
		if err := chownTree(n.dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return err
		}
	}
	data := filepath.Join(n.dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), append([]string{"-D", data}, cluster.PostgresInitdbArgs...)...)
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: n.cred}
	if err := n.initialise("initdb", initdb); err != nil {
		return err
	}
	n.argv = []string{
		filepath.Join(bin, "postgres"), "-D", data,
		"-c", "listen_addresses=127.0.0.1",
		"-c", "port=" + strconv.Itoa(n.port),
		"-c", "unix_socket_directories=" + n.dir,
	}
	for _, setting := range cluster.Settings(c.spec) {
		n.argv = append(n.argv, "-c", setting)
	}
	n.env = []string{"LC_ALL=C"}
	addr := n.addr()
	n.ready = func(ctx context.Context) error { return cluster.PostgresReady(ctx, addr) }
	return nil
}

// postgresBinDir returns the newest /usr/lib/postgresql/<version>/bin that
// has initdb, else the directory of initdb on PATH.
func postgresBinDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(dirs, func(i, j int) bool { return pgVersion(dirs[i]) > pgVersion(dirs[j]) })
	if len(dirs) > 0 {
		return filepath.Dir(dirs[0]), nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", fmt.Errorf("local: PostgreSQL not found (no /usr/lib/postgresql/*/bin/initdb, no initdb on PATH)")
}

// pgVersion returns the major version in a /usr/lib/postgresql/<v>/bin path.
func pgVersion(path string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(path))))
	return v
}

// unprivilegedCredential returns the credential of the unprivileged user.
func unprivilegedCredential() (*syscall.Credential, error) {
	u, err := user.Lookup(postgresUnprivileged)
	if err != nil {
		return nil, fmt.Errorf("local: postgres cannot run as root and user %q is missing: %w", postgresUnprivileged, err)
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return nil, fmt.Errorf("local: uid of %s: %w", u.Username, err)
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return nil, fmt.Errorf("local: gid of %s: %w", u.Username, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}

// chownTree gives dir and everything under it to uid:gid.
func chownTree(dir string, uid, gid int) error {
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
	if err != nil {
		return fmt.Errorf("local: chown %s: %w", dir, err)
	}
	return nil
}
