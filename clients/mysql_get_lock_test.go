package clients

import (
	"strings"
	"testing"
)

// TestMySQLLockName checks the GET_LOCK names of keys: a key that fits the
// server's 64 characters is its own name, a longer one a hash that fits,
// distinct for distinct keys.
func TestMySQLLockName(t *testing.T) {
	long := strings.Repeat("k", 65)
	tests := []struct {
		name, key, want string
	}{
		{"short key kept", "k0", "k0"},
		{"64 characters kept", strings.Repeat("k", 64), strings.Repeat("k", 64)},
		{"64 characters of two bytes kept", strings.Repeat("é", 64), strings.Repeat("é", 64)},
		{"65 characters hashed", long, "sha256:"},
		{"another long key, another hash", long + "x", "sha256:"},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mysqlLockName(tt.key)
			if len([]rune(got)) > mysqlLockNameMax {
				t.Fatalf("name %q is %d characters, over %d", got, len([]rune(got)), mysqlLockNameMax)
			}
			if tt.want == "sha256:" {
				if !strings.HasPrefix(got, tt.want) {
					t.Fatalf("name of a %d-character key %q, want a hash", len(tt.key), got)
				}
			} else if got != tt.want {
				t.Fatalf("name %q, want %q", got, tt.want)
			}
			if other, ok := seen[got]; ok {
				t.Fatalf("keys %q and %q have one name %q", other, tt.key, got)
			}
			seen[got] = tt.key
		})
	}
}
