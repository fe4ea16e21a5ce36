package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
)

// tempDirPrefix begins the name of every temp dir a harness makes
// (TempDir): "jepsen-lite-<pid>-<kind>-<random>".
const tempDirPrefix = "jepsen-lite-"

// TempDir makes a temp dir for what a run keeps while it lasts (kind names
// it: a system's nodes, the workers' clocks), named with the harness's pid,
// so that the next harness removes it (DeleteStaleTempDirs) when this one
// dies before it could (SIGKILL, a second Ctrl-C during teardown).
func TempDir(kind string) (string, error) {
	return os.MkdirTemp("", fmt.Sprintf("%s%d-%s-", tempDirPrefix, os.Getpid(), kind))
}

// DeleteStaleTempDirs removes the temp dirs (TempDir) of harnesses whose
// process is gone.
func DeleteStaleTempDirs() error {
	dirs, err := filepath.Glob(filepath.Join(os.TempDir(), tempDirPrefix+"*"))
	if err != nil {
		return fmt.Errorf("cluster: stale temp dirs: %w", err)
	}
	var errs []error
	for _, dir := range dirs {
		pid, ok := tempDirPid(filepath.Base(dir))
		if !ok || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("cluster: delete stale temp dir: %w", err))
		}
	}
	return errors.Join(errs...)
}

// tempDirPid returns the pid in the name of a TempDir; ok is false for any
// other name.
func tempDirPid(name string) (pid int, ok bool) {
	rest, ok := strings.CutPrefix(name, tempDirPrefix)
	if !ok {
		return 0, false
	}
	digits, kind, ok := strings.Cut(rest, "-")
	if !ok || kind == "" {
		return 0, false
	}
	pid, err := strconv.Atoi(digits)
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, true
}

// DeleteLeftovers removes what harnesses whose process is gone left on
// this machine: their nftables tables (linknet.DeleteStaleTables) and their temp
// dirs (DeleteStaleTempDirs). Their server processes died with them (each
// gets SIGKILL when the harness dies); a container backend removes their
// containers itself.
func DeleteLeftovers() error {
	return errors.Join(linknet.DeleteStaleTables(), DeleteStaleTempDirs())
}

// NewNetwork removes the temp dirs of dead harnesses (DeleteStaleTempDirs)
// and returns a new network of links with opts (linknet.New, which deletes
// their nftables tables): what DeleteLeftovers removes is gone before a
// run's network exists. It is the harness's way to make the network its
// cluster's connections go through.
func NewNetwork(opts ...linknet.Option) (*linknet.Network, error) {
	if err := DeleteStaleTempDirs(); err != nil {
		return nil, err
	}
	return linknet.New(opts...)
}

// processAlive reports whether a process with the pid exists.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
