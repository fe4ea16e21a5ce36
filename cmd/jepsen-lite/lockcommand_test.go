package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/clients"
	"github.com/jepsen-lite/jepsen-lite/reports"
	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// TestReplayTakesLockCommand requires `run --replay <dir> --lock-command
// CMD` to replay a stored run of an external client (its scenario and
// seed) with CMD in place of the command it was stored with: a client
// built anew (lockapi.Replay's test binary) has a new path.
func TestReplayTakesLockCommand(t *testing.T) {
	py, script := respLockClient(t)
	store := t.TempDir()
	runs := []struct {
		name    string
		args    []string
		command string
	}{
		{"the stored run", []string{"redis-single-baseline", "--seed", "7"}, py + " " + script},
		{"its replay under another command", []string{"--replay", ""}, "exec " + py + " " + script},
	}
	var first *reports.Results
	firstDir := ""
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			if first != nil {
				r.args[1] = firstDir
			}
			var out, errOut bytes.Buffer
			args := append(r.args, "--lock-command", r.command, "--store", store, "--time-limit", "1s", "--quiet")
			code, err := runCmd(context.Background(), args, &out, &errOut)
			if err != nil || code != exitHeld {
				t.Fatalf("exit %d, error %v:\n%s%s", code, err, out.String(), errOut.String())
			}
			dir, res := storedResults(t, out.String())
			if res.LockClient == nil || res.LockClient.Command != r.command {
				t.Errorf("the run's client is %+v, want the command %q", res.LockClient, r.command)
			}
			if first != nil && (res.Seed != first.Seed || res.Scenario != first.Scenario) {
				t.Errorf("the replay ran %s seed %d, the stored run %s seed %d", res.Scenario, res.Seed, first.Scenario, first.Seed)
			}
			if first == nil {
				first, firstDir = res, dir
			}
		})
	}
}

// storedResults returns the directory of the run whose summary is out,
// and its results.json.
func storedResults(t *testing.T, out string) (string, *reports.Results) {
	t.Helper()
	m := regexp.MustCompile(`(?m)^  store:  (.*)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no store line in:\n%s", out)
	}
	b, err := os.ReadFile(filepath.Join(m[1], reports.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	var res reports.Results
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	return m[1], &res
}

// TestShrinkTakesLockCommand requires shrink's --lock-command to replace
// the command a stored run of an external client was made with, in every
// candidate the search runs, and to leave the stored one when not given.
func TestShrinkTakesLockCommand(t *testing.T) {
	sc, err := scenarios.Load("redis-single-baseline", runner.Names())
	if err != nil {
		t.Fatal(err)
	}
	stored, err := withLockCommand(sc, "./client-as-stored")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	yml, err := scenarios.Marshal(stored)
	if err != nil {
		t.Fatal(err)
	}
	results := `{"scenario":"redis-single-baseline","verdict":"invalid","checkers":[{"name":"double-hold","verdict":"invalid","anomalies":[{"kind":"double-hold","ops":[1,2],"message":"two holders"}]}]}`
	for name, b := range map[string][]byte{reports.ScenarioFile: yml, reports.ResultsFile: []byte(results)} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, flag, want string
	}{
		{"the stored command without the flag", "", "./client-as-stored"},
		{"the flag's command", "./client-built-anew", "./client-built-anew"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, kinds, err := shrinkInput(dir, tt.flag)
			if err != nil {
				t.Fatal(err)
			}
			if cmd := got.Lock.Options[clients.ExecCommandOption]; cmd != tt.want || got.Lock.Algorithm != clients.ExecAlgorithm {
				t.Errorf("the candidates run %s %q, want exec %q", got.Lock.Algorithm, cmd, tt.want)
			}
			if len(kinds) != 1 || kinds[0] != "double-hold" {
				t.Errorf("kinds %v, want the stored run's double-hold", kinds)
			}
		})
	}
}
