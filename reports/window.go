package reports

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// windowJSON is the full detail of one time window of a stored run, as the
// detail endpoint of `serve` returns it: the timeline of its ops, and More
// when the window held more than maxServedOps ops and only its first ones
// are drawn.
type windowJSON struct {
	timelineJSON
	More bool `json:"more,omitempty"`
}

// checkpointEvery is how many lines apart a windowIndex remembers where a
// history's reading stood.
const checkpointEvery = 100_000

// windowIndex is what serve remembers of one stored history to read a
// window of it without reading from its first op: every checkpointEvery
// lines read so far, where the next line starts and the state of the
// reading there (the follower's, the maybe-held spans that may run on, the
// reply times rule's). A checkpoint holds a few KB (the live processes and
// their beliefs), so the index of a 10M-op history holds about a hundred.
// It is kept for one version of the file (its size and modification time).
type windowIndex struct {
	mu   sync.Mutex
	size int64
	mod  time.Time
	// every is how many lines apart its checkpoints are; 0 is
	// checkpointEvery.
	every  int
	points []checkpoint // by line
}

// spacing returns how many lines apart x's checkpoints are.
func (x *windowIndex) spacing() int {
	if x.every > 0 {
		return x.every
	}
	return checkpointEvery
}

// checkpoint is the state of a history's reading after line lines: the
// line after it is found by skipping skip lines from the byte offset
// chunk.
type checkpoint struct {
	line   int
	chunk  int64
	skip   int
	last   time.Duration
	rule   replyRule
	fol    *follower
	maybes [][2]history.Op
}

// before returns a copy of the latest checkpoint whose ops all came
// before from, nil when there is none.
func (x *windowIndex) before(from time.Duration) *checkpoint {
	if x == nil {
		return nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	k := sort.Search(len(x.points), func(i int) bool { return x.points[i].last >= from }) - 1
	if k < 0 {
		return nil
	}
	cp := x.points[k]
	cp.fol, cp.maybes = cp.fol.clone(), slices.Clone(cp.maybes)
	return &cp
}

// add records cp, unless a checkpoint of its line is known.
func (x *windowIndex) add(cp checkpoint) {
	if x == nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	k := sort.Search(len(x.points), func(i int) bool { return x.points[i].line >= cp.line })
	if k < len(x.points) && x.points[k].line == cp.line {
		return
	}
	x.points = slices.Insert(x.points, k, cp)
}

// lineCounter passes a history's bytes through, counting them and their
// lines, and remembers at which line each chunk read starts.
type lineCounter struct {
	r      io.Reader
	pos    int64
	lines  int
	chunks []chunkMark
}

// chunkMark is the byte offset of a chunk read and the lines before it.
type chunkMark struct {
	offset int64
	lines  int
}

func (c *lineCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 {
		c.chunks = append(c.chunks, chunkMark{c.pos, c.lines})
		c.pos += int64(n)
		c.lines += bytes.Count(p[:n], []byte{'\n'})
	}
	return n, err
}

// mark returns where the line after line n starts: a chunk's offset and
// the lines to skip from it; false when line n has not been read whole.
// It forgets the chunks before it.
func (c *lineCounter) mark(n int) (int64, int, bool) {
	if c.lines < n {
		return 0, 0, false
	}
	k := sort.Search(len(c.chunks), func(i int) bool { return c.chunks[i].lines >= n }) - 1
	if k < 0 {
		return 0, n, true // nothing before the first chunk
	}
	m := c.chunks[k]
	c.chunks = c.chunks[k:]
	return m.offset, n - m.lines, true
}

// resume positions r at the line after checkpoint cp and returns a reader
// of the lines from there with its offset.
func resume(r io.ReadSeeker, cp *checkpoint) (io.Reader, int64, error) {
	if _, err := r.Seek(cp.chunk, io.SeekStart); err != nil {
		return nil, 0, err
	}
	br := bufio.NewReaderSize(r, 64*1024)
	pos := cp.chunk
	for range cp.skip {
		for {
			line, err := br.ReadSlice('\n')
			pos += int64(len(line))
			if err == nil {
				break
			}
			if !errors.Is(err, bufio.ErrBufferFull) {
				return nil, 0, fmt.Errorf("reports: the history changed under its index: %w", err)
			}
		}
	}
	return br, pos, nil
}

// readWindow reads a stored history op by op (r) and draws the full
// detail of the window [from, to]: its ops, with the op each completion
// inside completes, the completion of each op in flight inside, and the
// beliefs open inside (followed from the history's first op, by the
// checker's rule, or from the latest checkpoint of idx before the window;
// idx may be nil); named are the op indexes anomalies name. It reads on
// past the window only until everything drawn in it has ended (to the end
// of the history when something drawn never ends), draws at most maxOps
// ops of the window, its first ones, and records in idx a checkpoint every
// checkpointEvery lines it reads. guarded is the run's register rule
// (history.DropReplyTimes).
func readWindow(r io.ReadSeeker, from, to time.Duration, maxOps int, guarded bool, named map[int]bool, idx *windowIndex) (windowJSON, error) {
	var out windowJSON
	f, rule, line := newFollower(), replyRule{guarded: guarded}, 0
	d := newDetailCollector(nil)
	d.in = func(op *history.Op) bool {
		if op.Time < from || op.Time > to {
			return false
		}
		if d.count >= maxOps {
			out.More, to = true, op.Time-1
			return false
		}
		return true
	}
	f.started, f.ended = d.started, d.ended
	lc := &lineCounter{r: r}
	var last time.Duration
	if cp := idx.before(from); cp != nil {
		br, pos, err := resume(r, cp)
		if err != nil {
			return out, err
		}
		lc = &lineCounter{r: br, pos: pos, lines: cp.line}
		f, d.maybes, rule, line, last = cp.fol, cp.maybes, cp.rule, cp.line, cp.last
		f.started, f.ended = d.started, d.ended
	}
	sc := history.NewScanner(lc, HistoryFile)
	every := checkpointEvery
	if idx != nil {
		every = idx.spacing()
	}
	base, ended, next := line, true, (line/every+1)*every
	var op history.Op // one for every line: nothing keeps it
	for sc.Scan() {
		op = sc.Op()
		rule.apply(&op)
		if op.Time > to && d.settled(&op) {
			ended = false
			break
		}
		last = max(last, op.Time)
		d.before(&op, f)
		inv := f.add(&op)
		d.after(&op, inv)
		// a checkpoint is the state of a reading that has met no window yet
		if line = base + sc.Info().Lines; idx != nil && line >= next && len(d.extents) == 0 {
			next = (line/every + 1) * every
			if chunk, skip, ok := lc.mark(line); ok {
				idx.add(checkpoint{line: line, chunk: chunk, skip: skip, last: last, rule: rule, fol: f.clone(), maybes: slices.Clone(d.maybes)})
			}
		}
	}
	if err := sc.Err(); err != nil {
		return out, err
	}
	end := last
	if ended {
		end = max(last, f.finish())
	}
	tl := d.timeline(timeline{Last: last, End: end})
	out.timelineJSON = tl.compact(named)
	return out, nil
}
