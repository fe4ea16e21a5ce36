package reports

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// copyStore copies a saved store into a temp dir, so that reports generated
// on demand do not land in testdata.
func copyStore(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := SetLatest(dst, filepath.Join(dst, savedValidRun)); err != nil {
		t.Fatal(err)
	}
	return dst
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestListRuns(t *testing.T) {
	runs, err := ListRuns(copyStore(t, savedStore(t)))
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, r := range runs {
		dirs = append(dirs, r.Dir)
	}
	if !slices.Equal(dirs, []string{savedValidRun, savedInvalidRun}) {
		t.Fatalf("runs = %v, want newest first, latest not listed", dirs)
	}
	if runs[1].Anomalies() != 1 || runs[1].Results.Verdict != "invalid" || !runs[1].Results.ExpectationMet {
		t.Errorf("invalid run = %+v", runs[1])
	}
	if want := time.Date(2026, 11, 22, 3, 15, 0, 0, time.UTC); !runs[1].Time.Equal(want) {
		t.Errorf("time of %s = %v, want %v", runs[1].Dir, runs[1].Time, want)
	}
}

func TestStoreHandler(t *testing.T) {
	store := copyStore(t, savedStore(t))
	outside := filepath.Join(filepath.Dir(store), "secret.txt")
	os.WriteFile(outside, []byte("secret"), 0o644)
	t.Cleanup(func() { os.Remove(outside) })
	h, err := NewStoreHandler(store)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	tests := []struct {
		name     string
		path     string
		status   int
		contains []string
		lacks    []string
	}{
		{"list", "/", 200, []string{savedValidRun, savedInvalidRun, "2 of 2 runs", ">met<"}, nil},
		{"filter by verdict", "/?verdict=invalid", 200, []string{savedInvalidRun, "1 of 2 runs"}, []string{savedValidRun + "/report.html"}},
		{"filter by scenario", "/?scenario=etcd-mutex-partition", 200, []string{savedValidRun}, []string{savedInvalidRun + "/report.html"}},
		{"filter matching nothing", "/?scenario=nope", 200, []string{"No runs match the filter"}, nil},
		{"history file", "/runs/" + savedInvalidRun + "/history.jsonl", 200, []string{`"f":"acquire"`}, nil},
		{"report on demand", "/runs/" + savedInvalidRun + "/report.html", 200, []string{doubleHoldMessage}, nil},
		{"run directory listing", "/runs/" + savedValidRun + "/", 200, []string{"results.json", "history.jsonl"}, nil},
		{"latest", "/runs/latest/results.json", 200, []string{"etcd-mutex-partition"}, nil},
		{"missing file", "/runs/" + savedValidRun + "/nope.txt", 404, nil, nil},
		{"traversal", "/runs/../secret.txt", 404, nil, []string{"secret"}},
		{"encoded traversal", "/runs/%2e%2e/secret.txt", 404, nil, []string{"secret"}},
		{"encoded slash traversal", "/runs/..%2fsecret.txt", 0, nil, []string{"secret"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, body := get(t, srv.URL+tc.path)
			if tc.status != 0 && status != tc.status {
				t.Errorf("GET %s = %d, want %d", tc.path, status, tc.status)
			}
			for _, s := range tc.contains {
				if !strings.Contains(body, s) {
					t.Errorf("GET %s lacks %q", tc.path, s)
				}
			}
			for _, s := range tc.lacks {
				if strings.Contains(body, s) {
					t.Errorf("GET %s contains %q", tc.path, s)
				}
			}
		})
	}
	if _, err := os.Stat(filepath.Join(store, savedInvalidRun, ReportFile)); err != nil {
		t.Errorf("the report generated on demand was not kept: %v", err)
	}
}

func TestServe(t *testing.T) {
	store := copyStore(t, savedStore(t))
	t.Run("refuses non-loopback", func(t *testing.T) {
		for _, addr := range []string{":0", "0.0.0.0:0", "192.0.2.1:0"} {
			err := Serve(t.Context(), store, addr)
			if !errors.Is(err, ErrNonLoopback) {
				t.Errorf("Serve(%q) = %v, want ErrNonLoopback", addr, err)
			}
		}
	})
	t.Run("serves until ctx ends", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		addrs := make(chan net.Addr, 1)
		done := make(chan error, 1)
		go func() { done <- Serve(ctx, store, "127.0.0.1:0", OnListen(func(a net.Addr) { addrs <- a })) }()
		var addr net.Addr
		select {
		case addr = <-addrs:
		case err := <-done:
			t.Fatalf("Serve returned %v before listening", err)
		}
		status, body := get(t, "http://"+addr.String()+"/")
		if status != 200 || !strings.Contains(body, savedInvalidRun) {
			t.Errorf("GET / = %d %q", status, body)
		}
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve after cancel = %v, want nil", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Serve did not return after its context ended")
		}
		if c, err := net.DialTimeout("tcp", addr.String(), time.Second); err == nil {
			c.Close()
			t.Error("still listening after Serve returned")
		}
	})
	t.Run("missing store", func(t *testing.T) {
		if err := Serve(t.Context(), filepath.Join(store, "nope"), "127.0.0.1:0"); err == nil {
			t.Error("Serve of a missing store succeeded")
		}
	})
}
