package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"time"
)

// A node's clock file holds its wall-clock offset: a signed count of
// nanoseconds in native byte order in its first 8 bytes. The clock-skew
// library maps it in every process of the node (ClockFileEnv names it), so
// rewriting it in place moves the node's clock at once; it is never
// truncated.

// CreateClockFile creates a clock file holding a zero offset, readable by
// every user (nodes may run unprivileged).
func CreateClockFile(path string) error {
	if err := os.WriteFile(path, make([]byte, 8), 0o644); err != nil {
		return fmt.Errorf("cluster: clock file: %w", err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		return fmt.Errorf("cluster: clock file: %w", err)
	}
	return nil
}

// WriteClockOffset writes offset over the first 8 bytes of the clock file
// in place.
func WriteClockOffset(path string, offset time.Duration) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("cluster: clock file: %w", err)
	}
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], uint64(int64(offset)))
	_, werr := f.WriteAt(b[:], 0)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		return fmt.Errorf("cluster: write clock offset: %w", err)
	}
	return nil
}
