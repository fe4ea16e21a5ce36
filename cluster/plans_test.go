package cluster

import (
	"slices"
	"testing"
)

func TestEtcdFlagsLogLevel(t *testing.T) {
	for _, tc := range []struct {
		name, env, want string
	}{
		{"unset is warn", "", "warn"},
		{"debug logs every request", "debug", "debug"},
		{"info", "info", "info"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(EtcdLogLevelEnv, tc.env)
			flags := EtcdFlags()
			i := slices.Index(flags, "--log-level")
			if i < 0 || i+1 >= len(flags) || flags[i+1] != tc.want {
				t.Errorf("EtcdFlags() = %q, want --log-level %s", flags, tc.want)
			}
		})
	}
}
