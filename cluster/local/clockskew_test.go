package local

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestWriteClockOffsetInPlace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "clock")
	if err := createClockFile(path); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		offset time.Duration
	}{
		{"forward", 20 * time.Second},
		{"backward", -90 * time.Minute},
		{"zero", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := writeClockOffset(path, tt.offset); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) != 8 {
				t.Fatalf("clock file has %d bytes, want 8", len(b))
			}
			if got := time.Duration(int64(binary.NativeEndian.Uint64(b))); got != tt.offset {
				t.Errorf("read back %v, want %v", got, tt.offset)
			}
			after, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if !os.SameFile(before, after) {
				t.Error("clock file was replaced, not written in place")
			}
		})
	}
}

func TestFindClockSkewLibraryFromEnv(t *testing.T) {
	t.Run("missing file", func(t *testing.T) {
		t.Setenv(ClockSkewLibraryEnv, filepath.Join(t.TempDir(), "nope.so"))
		if _, err := FindClockSkewLibrary(""); err == nil {
			t.Error("a missing library named by the env var was accepted")
		}
	})
	t.Run("existing file", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "lib.so")
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Setenv(ClockSkewLibraryEnv, p)
		got, err := FindClockSkewLibrary("")
		if err != nil || got != p {
			t.Errorf("FindClockSkewLibrary = %q, %v, want %q", got, err, p)
		}
	})
}

// TestHarnessRoot finds the harness's own source tree, where the library's
// source lies, from the compiled package (not from the working directory).
func TestHarnessRoot(t *testing.T) {
	t.Chdir(t.TempDir())
	root := harnessRoot()
	if root == "" {
		t.Fatal("the harness's source tree was not found")
	}
	if _, err := os.Stat(filepath.Join(root, "clockskew", "clockskew.c")); err != nil {
		t.Errorf("harnessRoot %s holds no clockskew/clockskew.c: %v", root, err)
	}
	if slices.Contains(sourceRoots(), "") || !slices.Contains(sourceRoots(), root) {
		t.Errorf("sourceRoots %q, want %s among them", sourceRoots(), root)
	}
}
