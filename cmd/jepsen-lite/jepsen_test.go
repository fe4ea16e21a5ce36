package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// jepsenFixtures holds the EDN histories of the Jepsen import's own tests.
const jepsenFixtures = "../../history/jepsen/testdata/"

func TestCheckJepsenHistory(t *testing.T) {
	store := t.TempDir()
	data, err := os.ReadFile(jepsenFixtures + "lock-valid.edn")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(store, "history.edn"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout []string // substrings
		wantStderr []string // substrings
	}{
		{"a valid lock history", []string{"check", "--format", "jepsen", jepsenFixtures + "lock-valid.edn", "--ttl", "5s"}, 0,
			[]string{"lock-valid.edn: 16 ops", "verdict: valid"}, nil},
		{"a Jepsen store directory", []string{"check", "--format", "jepsen", store, "--ttl", "5s"}, 0,
			[]string{"history.edn: 16 ops", "verdict: valid"}, nil},
		{"crashes and unknown outcomes", []string{"check", "--format", "jepsen", "--ttl", "5s", jepsenFixtures + "lock-crashes.edn"}, 0,
			[]string{"verdict: valid"}, nil},
		{"two processes granted the lock at once", []string{"check", "--format", "jepsen", jepsenFixtures + "lock-double-grant.edn", "--ttl", "5s"}, 1,
			[]string{"double-hold", "early-grant", "verdict: invalid"}, nil},
		{"not EDN", []string{"check", "--format", "jepsen", jepsenFixtures + "not-edn.edn", "--ttl", "5s"}, 254,
			nil, []string{"not-edn.edn:3: op 3", "not valid EDN"}},
		{"an op without :type", []string{"check", "--format", "jepsen", jepsenFixtures + "no-type.edn", "--ttl", "5s"}, 254,
			nil, []string{"no-type.edn:3: op 3", "no :type"}},
		{"a completion without an invoke", []string{"check", "--format", "jepsen", jepsenFixtures + "orphan-completion.edn", "--ttl", "5s"}, 254,
			nil, []string{"orphan-completion.edn:3: op 3", "without an outstanding invoke"}},
		{"no --ttl", []string{"check", "--format", "jepsen", jepsenFixtures + "lock-valid.edn"}, 254,
			nil, []string{"--ttl"}},
		{"a zero --ttl", []string{"check", "--format", "jepsen", jepsenFixtures + "lock-valid.edn", "--ttl", "0s"}, 254,
			nil, []string{"--ttl"}},
		{"--ttl with a jsonl history", []string{"check", "testdata/redlock-clock-jump.jsonl", "--ttl", "5s"}, 254,
			nil, []string{"--ttl", "jepsen"}},
		{"an unknown format", []string{"check", "--format", "csv", jepsenFixtures + "lock-valid.edn"}, 254,
			nil, []string{`"csv"`, "jsonl", "jepsen"}},
		{"no such file", []string{"check", "--format", "jepsen", jepsenFixtures + "absent.edn", "--ttl", "5s"}, 254,
			nil, []string{"absent.edn"}},
		{"an EDN history read as jsonl", []string{"check", jepsenFixtures + "lock-valid.edn"}, 254,
			nil, []string{"lock-valid.edn"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tt.args...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d; stdout:\n%s\nstderr:\n%s", code, tt.wantCode, stdout, stderr)
			}
			for _, w := range tt.wantStdout {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout does not say %q:\n%s", w, stdout)
				}
			}
			for _, w := range tt.wantStderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr)
				}
			}
			if code == 254 && strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Errorf("bad input is not reported on one line:\n%s", stderr)
			}
		})
	}
}

func TestCheckJepsenHistoryJSON(t *testing.T) {
	code, stdout, stderr := runCLI(t, "check", "--format", "jepsen", jepsenFixtures+"lock-double-grant.edn", "--ttl", "5s", "--json")
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, stderr)
	}
	var res struct {
		Verdict  string `json:"verdict"`
		Checkers []struct {
			Name      string `json:"name"`
			Anomalies []struct {
				Kind string `json:"kind"`
				Key  string `json:"key"`
			} `json:"anomalies"`
		} `json:"checkers"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("stdout is not the results document: %v\n%s", err, stdout)
	}
	if res.Verdict != "invalid" {
		t.Errorf("verdict %q, want invalid", res.Verdict)
	}
	found := map[string]bool{}
	for _, c := range res.Checkers {
		for _, a := range c.Anomalies {
			found[a.Kind] = true
			if a.Key != "lock" {
				t.Errorf("%s anomaly of key %q, want the import's lock key", a.Kind, a.Key)
			}
		}
	}
	for _, k := range []string{"double-hold", "early-grant"} {
		if !found[k] {
			t.Errorf("no %s anomaly in %v", k, found)
		}
	}
}
