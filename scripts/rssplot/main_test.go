package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		n          int
		err        string
	}{
		{"samples", "seconds,rss_kb\n0,1024\n10,2048\n", 2, ""},
		{"not a number", "seconds,rss_kb\n0,lots\n", 0, ":2: want seconds,kilobytes"},
		{"header only", "seconds,rss_kb\n", 0, "no samples"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.csv")
			if err := os.WriteFile(path, []byte(tc.text), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := read(path)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || len(got) != tc.n {
				t.Fatalf("%d samples, err %v; want %d", len(got), err, tc.n)
			}
		})
	}
}

func TestPlotMarksThePeak(t *testing.T) {
	var b strings.Builder
	if err := plot(&b, "t", []sample{{0, 1024}, {60, 300 * 1024}, {120, 2048}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "peak 300 MB at 1.0 min") || !strings.HasSuffix(b.String(), "</svg>\n") {
		t.Fatalf("plot:\n%s", b.String())
	}
}
