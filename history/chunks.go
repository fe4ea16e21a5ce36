package history

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
)

// Chunk is a run of consecutive ops of a history read by ReadChunks. Its
// ops are the caller's until it calls Release, after which ReadChunks may
// reuse their storage: a caller that keeps an op past Release copies it
// (the copy's strings and Value stay valid).
type Chunk struct {
	// Ops are the chunk's ops, in history order.
	Ops []Op
	// Bytes is the offset in the file just past the chunk's last line.
	Bytes int64

	refs atomic.Int32
	free chan<- *Chunk
	buf  []byte
}

// Hold adds n holders to c; each calls Release once. ReadChunks hands a
// chunk over with one holder, its callback.
func (c *Chunk) Hold(n int) { c.refs.Add(int32(n)) }

// Release gives up one holder's use of c; when the last holder releases
// it, its storage goes back to ReadChunks.
func (c *Chunk) Release() {
	if c.refs.Add(-1) == 0 {
		c.Ops = c.Ops[:0]
		select {
		case c.free <- c:
		default:
		}
	}
}

// chunkBytes is how much of the file one chunk covers, about 33,000 ops of
// a lock history.
const chunkBytes = 4 << 20

// chunksInFlight bounds the chunks read and not yet released, and so the
// reader's memory (about 12 MB per chunk: its bytes and its ops): one
// for each of the workers decoding, and two more (four at least), which
// keep the decoders and the checks busy (a fifth and more bought no speed
// on two cores, only memory: docs/performance.md).
func chunksInFlight(workers int) int { return max(4, workers+2) }

// decoded is one block of lines decoded by a worker.
type decoded struct {
	c         *Chunk
	lines     int
	err       error // a *LineError with the line counted within the block, or a decode error
	errLine   int
	truncated bool
}

// ReadChunks reads the history at path (a file, or "-" for none: use
// ReadChunksFrom) in the language Read reads, decoding it on every core, and
// calls fn with its ops in order, one chunk at a time, from one goroutine.
// fn holds each chunk until it calls Release (it may hand it to other
// goroutines: Chunk.Hold); at most a few chunks are read ahead of the
// oldest one not yet released, so memory does not grow with the history's
// length. An error from fn stops the reading and is returned. The errors
// and ReadInfo are Read's: a line that is not a valid op is a *LineError
// naming it, a last line without a newline that does not parse is left out
// (ReadInfo.Truncated).
func ReadChunks(ctx context.Context, path string, fn func(*Chunk) error) (ReadInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return ReadInfo{}, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	return ReadChunksFrom(ctx, f, path, fn)
}

// ReadChunksFrom is ReadChunks over r; name is used in errors.
func ReadChunksFrom(ctx context.Context, r io.Reader, name string, fn func(*Chunk) error) (ReadInfo, error) {
	return readChunks(ctx, r, name, chunkBytes, fn)
}

// readChunks is ReadChunksFrom with blocks of about size bytes.
func readChunks(ctx context.Context, r io.Reader, name string, size int, fn func(*Chunk) error) (ReadInfo, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workers := min(runtime.GOMAXPROCS(0), 8)
	inFlight := chunksInFlight(workers)
	free := make(chan *Chunk, inFlight)
	for range inFlight {
		free <- &Chunk{}
	}
	jobs := make(chan chunkJob, workers)
	order := make(chan chan decoded, inFlight)
	var readErr error
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var d decoder
			for j := range jobs {
				j.out <- decodeBlock(&d, j.c, name, j.last)
			}
		}()
	}
	go func() {
		defer close(order)
		defer close(jobs)
		readErr = splitBlocks(ctx, r, size, free, jobs, order)
	}()
	info, err := deliver(ctx, order, name, fn)
	cancel()
	for range order {
	}
	wg.Wait()
	if err == nil && readErr != nil {
		err = fmt.Errorf("history: %s: %w", name, readErr)
	}
	return info, err
}

// chunkJob is one block for a decoding worker: its chunk, whether it is
// the last, and where its decoded ops go.
type chunkJob struct {
	c    *Chunk
	last bool
	out  chan decoded
}

// splitBlocks reads r into blocks of whole lines of about size bytes, each
// in a chunk taken from free, and hands each to the workers (jobs) and its
// result's channel to the deliverer (order), in order, until r ends, a read
// fails (its error is returned) or ctx is done.
func splitBlocks(ctx context.Context, r io.Reader, size int, free chan *Chunk, jobs chan<- chunkJob, order chan<- chan decoded) error {
	var carry []byte
	var off int64
	for done := false; !done; {
		var c *Chunk
		select {
		case c = <-free:
		case <-ctx.Done():
			return nil
		}
		c.free = free
		buf, cut, last, err := readBlock(r, append(c.buf[:0], carry...), size)
		if err != nil {
			return err
		}
		done = last
		carry = append(carry[:0], buf[cut:]...)
		c.buf = buf[:cut]
		off += int64(cut)
		c.Bytes = off
		out := make(chan decoded, 1)
		select {
		case jobs <- chunkJob{c: c, last: done, out: out}:
		case <-ctx.Done():
			return nil
		}
		order <- out
	}
	return nil
}

// readBlock fills buf from r to about size bytes and returns it with cut,
// the end of its last whole line (all of it when r ended: done). A line
// longer than a block is read whole, size bytes more at a time.
func readBlock(r io.Reader, buf []byte, size int) (_ []byte, cut int, done bool, err error) {
	buf, done, err = fill(r, buf, size)
	if err != nil {
		return buf, 0, done, err
	}
	cut = len(buf)
	if !done {
		cut = bytes.LastIndexByte(buf, '\n') + 1
		for cut == 0 && !done { // one line longer than a chunk
			buf, done, err = fill(r, buf, len(buf)+size)
			if err != nil {
				return buf, 0, done, err
			}
			cut = len(buf)
			if !done {
				cut = bytes.LastIndexByte(buf, '\n') + 1
			}
		}
	}
	return buf, cut, done, nil
}

// deliver hands the decoded blocks to fn in order and adds up ReadInfo.
func deliver(ctx context.Context, order <-chan chan decoded, name string, fn func(*Chunk) error) (ReadInfo, error) {
	var info ReadInfo
	for out := range order {
		d := <-out
		if d.err != nil {
			if le, ok := d.err.(*LineError); ok {
				le.Line += info.Lines
			}
			info.Lines += d.errLine
			return info, d.err
		}
		info.Lines += d.lines
		info.Truncated = info.Truncated || d.truncated
		d.c.refs.Store(1)
		if err := fn(d.c); err != nil {
			return info, err
		}
		if err := ctx.Err(); err != nil {
			return info, err
		}
	}
	return info, nil
}

// fill reads from r into buf until it holds want bytes or r ends (done).
func fill(r io.Reader, buf []byte, want int) ([]byte, bool, error) {
	if cap(buf) < want {
		buf = append(make([]byte, 0, want), buf...)
	}
	for len(buf) < want {
		n, err := r.Read(buf[len(buf):want])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, true, nil
		}
		if err != nil {
			return buf, false, err
		}
	}
	return buf, false, nil
}

// decodeBlock decodes c.buf's lines into c.Ops; last says whether the block
// ends the file, where a last line without a newline that does not parse is
// left out.
func decodeBlock(d *decoder, c *Chunk, name string, last bool) decoded {
	out := decoded{c: c}
	b := c.buf
	ops := c.Ops[:0]
	if n := bytes.Count(b, []byte{'\n'}) + 1; cap(ops) < n {
		ops = make([]Op, 0, n)
	}
	for len(b) > 0 {
		n := bytes.IndexByte(b, '\n')
		complete := n >= 0
		line := b
		if complete {
			line, b = b[:n], b[n+1:]
		} else {
			b = nil
		}
		out.lines++
		body := bytes.TrimRight(line, "\r")
		if len(bytes.TrimSpace(body)) == 0 {
			continue
		}
		op, err := d.decode(body)
		if err != nil {
			if !complete && last {
				out.truncated = true
				break
			}
			out.err, out.errLine = &LineError{File: name, Line: out.lines, Err: err}, out.lines
			break
		}
		ops = append(ops, op)
	}
	c.Ops = ops
	return out
}
