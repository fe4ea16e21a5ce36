package clients

import (
	"errors"
	"testing"
)

// TestCheckOptions checks every algorithm's options before anything starts,
// as its factory does: the options it declares, with their defaults, pass;
// an unknown option and an empty value fail with ErrBadOption; nothing
// connects.
//
// The exec algorithm's options are checked by TestExecOptions.
func TestCheckOptions(t *testing.T) {
	for _, a := range Algorithms() {
		if a.OtherOptions != "" {
			continue
		}
		t.Run(a.Name, func(t *testing.T) {
			good := map[string]string{}
			for _, o := range a.Options {
				good[o.Name] = o.Default
			}
			if err := CheckOptions(a.Name, good); err != nil {
				t.Fatalf("the defaults %v: %v", good, err)
			}
			if err := CheckOptions(a.Name, map[string]string{"no-such-option": "1"}); !errors.Is(err, ErrBadOption) {
				t.Fatalf("an unknown option: %v, want ErrBadOption", err)
			}
			for name := range good {
				if err := CheckOptions(a.Name, map[string]string{name: ""}); !errors.Is(err, ErrBadOption) {
					t.Errorf("option %s=\"\": %v, want ErrBadOption", name, err)
				}
			}
		})
	}
	for _, q := range QueueAlgorithms() {
		if q.OtherOptions != "" {
			continue // TestExecOptions
		}
		t.Run(q.Name, func(t *testing.T) {
			if err := CheckOptions(q.Name, map[string]string{"timeout": "2s"}); err != nil {
				t.Fatalf("timeout=2s: %v", err)
			}
			if err := CheckOptions(q.Name, map[string]string{"timeout": ""}); !errors.Is(err, ErrBadOption) {
				t.Fatalf("timeout=\"\": %v, want ErrBadOption", err)
			}
			if err := CheckOptions(q.Name, map[string]string{"no-such-option": "1"}); !errors.Is(err, ErrBadOption) {
				t.Fatalf("an unknown option: %v, want ErrBadOption", err)
			}
		})
	}
	if err := CheckOptions("no-such-lock", nil); !errors.Is(err, ErrUnknownAlgorithm) {
		t.Fatalf("an unknown algorithm: %v", err)
	}
}
