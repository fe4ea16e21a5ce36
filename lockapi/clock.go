package lockapi

import (
	"encoding/binary"
	"fmt"
	"os"
	"time"
)

// workerClock is the worker's wall clock as the harness skews it: the
// host's, plus the offset at byte 0 of the clock file, read anew on every
// Now. A Go program's runtime reads the clock without libc, so the
// clock-skew library the harness preloads does not move its time.Now; the
// offset is read here instead. Without a clock file the offset is 0.
type workerClock struct {
	f *os.File // nil: no clock file
}

var _ Clock = (*workerClock)(nil)

// newWorkerClock opens the clock file at path; "" gives the host's clock.
func newWorkerClock(path string) (*workerClock, error) {
	if path == "" {
		return &workerClock{}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("lockapi: the clock file: %w", err)
	}
	return &workerClock{f: f}, nil
}

// Now is the host's wall clock plus the clock file's offset.
func (c *workerClock) Now() time.Time { return time.Now().Add(c.offset()) }

// offset is the int64 nanoseconds at byte 0 of the clock file, in the
// host's byte order; 0 when there is no file or it holds fewer bytes.
func (c *workerClock) offset() time.Duration {
	if c.f == nil {
		return 0
	}
	var b [8]byte
	if _, err := c.f.ReadAt(b[:], 0); err != nil {
		return 0
	}
	return time.Duration(int64(binary.NativeEndian.Uint64(b[:])))
}

// close closes the clock file.
func (c *workerClock) close() {
	if c.f != nil {
		c.f.Close()
	}
}
