package local

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

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
