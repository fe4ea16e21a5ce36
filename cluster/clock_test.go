package cluster

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestWriteClockOffsetInPlace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "clock")
	if err := CreateClockFile(path); err != nil {
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
			if err := WriteClockOffset(path, tt.offset); err != nil {
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
