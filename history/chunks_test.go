package history

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// chunkInputs are histories whose reading by blocks is compared with Read:
// the saved ones, and texts with blank lines, CRLF, a line longer than a
// block, a bad line, and a truncated last line.
func chunkInputs(t *testing.T) map[string][]byte {
	t.Helper()
	in := map[string][]byte{}
	files, _ := filepath.Glob("testdata/*.jsonl")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		in[filepath.Base(f)] = b
	}
	var sb strings.Builder
	for i := range 300 {
		fmt.Fprintf(&sb, `{"index":%d,"time":%d,"process":%d,"client":0,"type":"invoke","f":"write","key":"k","value":%d}`+"\n", i, i, i, i)
		if i%37 == 0 {
			sb.WriteString("\n  \r\n")
		}
	}
	in["blank-lines"] = []byte(sb.String())
	long := `{"index":0,"time":1,"process":-1,"type":"info","f":"partition","value":"` + strings.Repeat("n", 5000) + `"}` + "\n"
	in["long-line"] = []byte(long + strings.Replace(long, `"index":0`, `"index":1`, 1))
	in["crlf"] = []byte(strings.ReplaceAll(sb.String(), "\n", "\r\n"))
	in["bad-line"] = []byte(sb.String() + "{not json}\n" + sb.String())
	in["truncated"] = []byte(sb.String() + `{"index":300,"ti`)
	in["no-newline"] = []byte(strings.TrimSuffix(sb.String(), "\n"))
	in["empty"] = nil
	return in
}

// TestReadChunksEqualsRead requires ReadChunks to read the ops, lines and
// errors Read reads, whatever the block size.
func TestReadChunksEqualsRead(t *testing.T) {
	for name, data := range chunkInputs(t) {
		for _, size := range []int{1, 64, 1000, 1 << 20} {
			t.Run(fmt.Sprintf("%s/%d", name, size), func(t *testing.T) {
				want, winfo, werr := Read(bytes.NewReader(data), "h")
				var got History
				info, err := readChunks(context.Background(), bytes.NewReader(data), "h", size, func(c *Chunk) error {
					got = append(got, c.Ops...)
					c.Release()
					return nil
				})
				if fmt.Sprint(err) != fmt.Sprint(werr) {
					t.Fatalf("error %v, want %v", err, werr)
				}
				if werr != nil {
					return
				}
				if info != winfo {
					t.Errorf("info %+v, want %+v", info, winfo)
				}
				if len(got) != len(want) {
					t.Fatalf("%d ops, want %d", len(got), len(want))
				}
				for i := range got {
					if fmt.Sprint(got[i]) != fmt.Sprint(want[i]) {
						t.Fatalf("op %d: %v, want %v", i, got[i], want[i])
					}
				}
			})
		}
	}
}

// TestReadChunksStopsOnCallbackError requires an error from the callback to
// end the reading with that error, also while chunks are held.
func TestReadChunksStopsOnCallbackError(t *testing.T) {
	data := chunkInputs(t)["blank-lines"]
	stop := errors.New("stop")
	n := 0
	_, err := readChunks(context.Background(), bytes.NewReader(data), "h", 64, func(c *Chunk) error {
		n++
		if n == 3 {
			return stop
		}
		return nil // held, never released
	})
	if !errors.Is(err, stop) || n != 3 {
		t.Fatalf("err %v after %d chunks", err, n)
	}
}
