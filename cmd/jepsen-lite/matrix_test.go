package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMatrixRejectsABadCampaignFile: a file that is not a campaign is bad
// input, named in the error.
func TestMatrixRejectsABadCampaignFile(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"rows": 3}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, "matrix", bad); code != exitUsage || !strings.Contains(stderr, "bad.json") {
		t.Errorf("a malformed campaign file: exit %d, stderr %q; want %d naming it", code, stderr, exitUsage)
	}
}
