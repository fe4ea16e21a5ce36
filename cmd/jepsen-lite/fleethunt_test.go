package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestKubernetesFleetHunt parses deploy/kubernetes's hunt.yaml and
// hunt-merge.yaml and runs each pod's command through sh for every index
// the Indexed Job gives, with a jepsen-lite on PATH that records its
// arguments; it then lists, in process, the runs each pod's hunt would
// make. The parts must be those of `hunt --shard i/n --list` for i =
// index+1 and n = completions, disjoint, together the unsharded hunt's
// runs; each pod keeps its own store and campaign file; the merge merges
// exactly the parts' files (hunt --merge), goes on to the datasheet when
// the hunt's verdict is known or not (0, 1, 2) and ends with a refusal
// (254), and lays out the merged file (matrix), not a part's.
func TestKubernetesFleetHunt(t *testing.T) {
	huntYAML, mergeYAML := readManifests(t, "hunt.yaml", "hunt-merge.yaml")
	for _, p := range huntFleetProblems(t, huntYAML, mergeYAML) {
		t.Error(p)
	}
}

// TestKubernetesFleetHuntCatchBreaks breaks the hunt's manifests one way at
// a time, as an edit could, and requires the checks to find each.
func TestKubernetesFleetHuntCatchBreaks(t *testing.T) {
	tests := []struct {
		name, file, old, new string
	}{
		{"index used 0-based", "hunt", "$((JOB_COMPLETION_INDEX + 1))", "$((JOB_COMPLETION_INDEX))"},
		{"completions other than the command's n", "hunt", "completions: 4\n  parallelism: 4", "completions: 5\n  parallelism: 5"},
		{"parallelism other than completions", "hunt", "parallelism: 4", "parallelism: 2"},
		{"no NET_ADMIN", "hunt", "add: [NET_ADMIN]", "add: []"},
		{"a hunt cut short completes its part", "hunt", "case $code in 0 | 1)", "case $code in 0 | 1 | 2)"},
		{"every part one campaign file", "hunt", `--json "/stores/redlock-part-$i.json"`, `--json "/stores/redlock-part.json"`},
		{"no shard", "hunt", `--shard "$i/4" `, ""},
		{"merge without a part's file", "merge", " /stores/redlock-part-4.json --json", " --json"},
		{"merge past a refusal", "merge", "case $code in 0 | 1 | 2)", "case $code in 0 | 1 | 2 | 254)"},
		{"merge stops at a found violation", "merge", "case $code in 0 | 1 | 2)", "case $code in 0 | 2)"},
		{"datasheet of a part", "merge", "matrix /stores/redlock.json", "matrix /stores/redlock-part-1.json"},
	}
	huntYAML, mergeYAML := readManifests(t, "hunt.yaml", "hunt-merge.yaml")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, m := huntYAML, mergeYAML
			text := &h
			if tt.file == "merge" {
				text = &m
			}
			if !strings.Contains(*text, tt.old) {
				t.Fatalf("the %s manifest no longer holds %q: update the break", tt.file, tt.old)
			}
			*text = strings.Replace(*text, tt.old, tt.new, 1)
			if problems := huntFleetProblems(t, h, m); len(problems) == 0 {
				t.Errorf("the checks found nothing wrong with the %s manifest broken so (%q for %q)", tt.file, tt.new, tt.old)
			} else {
				t.Logf("found: %s", problems[0])
			}
		})
	}
}

// readManifests returns the text of the manifests names in fleetDir.
func readManifests(t *testing.T, names ...string) (first, second string) {
	t.Helper()
	var texts []string
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(fleetDir, n))
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, string(b))
	}
	return texts[0], texts[1]
}

// huntFleetProblems returns what is wrong with the hunt fleet of huntYAML
// and mergeYAML (TestKubernetesFleetHunt); none when nothing is.
func huntFleetProblems(t *testing.T, huntYAML, mergeYAML string) []string {
	t.Helper()
	job, pvc, err := fleetJob(huntYAML)
	if err != nil {
		return []string{"hunt.yaml: " + err.Error()}
	}
	var problems []string
	bad := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	if !slices.Contains(pvc.Spec.AccessModes, "ReadWriteMany") {
		bad("the stores' claim %s is not ReadWriteMany: %v", pvc.Metadata.Name, pvc.Spec.AccessModes)
	}
	n, pod := job.Spec.Completions, job.Spec.Template.Spec.Containers[0]
	if job.Spec.CompletionMode != "Indexed" || n < 2 || job.Spec.Parallelism != n {
		bad("job %s: completionMode %q, completions %d, parallelism %d; want Indexed, n >= 2 and n", job.Metadata.Name, job.Spec.CompletionMode, n, job.Spec.Parallelism)
	}
	if !slices.Contains(pod.SecurityContext.Capabilities.Add, "NET_ADMIN") {
		bad("container %s adds %v, not NET_ADMIN: the local backend's nft and ss -K need it", pod.Name, pod.SecurityContext.Capabilities.Add)
	}
	files, err := huntParts(t, pod, n)
	if err != nil {
		return append(problems, err.Error())
	}
	return append(problems, huntMergeProblems(t, mergeYAML, files)...)
}

// huntParts runs pod's command for each index 0..n-1 and returns each
// part's campaign file; an error when a pod's hunt is not a hunt, its
// runs are not `hunt --shard index+1/n`'s, the parts are not disjoint or
// do not make the unsharded hunt's runs, or two pods share a store or a
// campaign file.
func huntParts(t *testing.T, pod k8sContainer, n int) (files []string, err error) {
	var stores, whole []string
	seen := map[string]int{}
	for index := range n {
		args, err := podArgs(t, pod, index, "hunt")
		if err != nil {
			return nil, err
		}
		part, err := huntList(args)
		if err != nil {
			return nil, fmt.Errorf("index %d: %v", index, err)
		}
		selection := withoutFlags(args, "shard", "store", "json", "markdown")
		want, err := huntList(append(selection, "--shard", fmt.Sprintf("%d/%d", index+1, n)))
		if err != nil {
			return nil, fmt.Errorf("index %d: %v", index, err)
		}
		if !slices.Equal(part, want) {
			return nil, fmt.Errorf("index %d: the pod's hunt %q lists %d runs %q, want part %d/%d: %q", index, args, len(part), part, index+1, n, want)
		}
		store, file := flagValue(args, "store"), flagValue(args, "json")
		if store == "" || file == "" || slices.Contains(stores, store) || slices.Contains(files, file) {
			return nil, fmt.Errorf("index %d: store %q or campaign file %q is another pod's, or none", index, store, file)
		}
		stores, files = append(stores, store), append(files, file)
		for _, r := range part {
			seen[r]++
		}
		if index == 0 {
			if whole, err = huntList(selection); err != nil {
				return nil, err
			}
		}
	}
	for _, r := range whole {
		if seen[r] != 1 {
			return nil, fmt.Errorf("run %q is in %d of the %d parts, want 1", r, seen[r], n)
		}
	}
	if len(seen) != len(whole) {
		return nil, fmt.Errorf("the parts make %d runs, the unsharded hunt %d", len(seen), len(whole))
	}
	return files, nil
}

// huntList runs, in process, the hunt of args with --list and returns the
// runs it lists; an error when it does not exit 0.
func huntList(args []string) ([]string, error) {
	var stdout, stderr bytes.Buffer
	code, err := huntCmd(context.Background(), append(slices.Clone(args), "--list"), &stdout, &stderr)
	if err != nil || code != exitHeld {
		return nil, fmt.Errorf("hunt %q --list: exit %d, %v %s", args, code, err, stderr.String())
	}
	return strings.Split(strings.TrimSpace(stdout.String()), "\n"), nil
}

// huntMergeProblems returns what is wrong with the merge of mergeYAML over
// the parts' campaign files: its pod must run `hunt --merge` over exactly
// those files, then, when the merge exits 0, 1 or 2, `matrix` over the
// merged file and end as matrix does; when the merge refuses (254), end
// with 254 and lay nothing out.
func huntMergeProblems(t *testing.T, mergeYAML string, files []string) []string {
	objs, err := k8sObjects(mergeYAML)
	if err != nil {
		return []string{"hunt-merge.yaml: " + err.Error()}
	}
	if len(objs) != 1 || objs[0].Kind != "Job" || len(objs[0].Spec.Template.Spec.Containers) != 1 {
		return []string{"hunt-merge.yaml: want one Job of one container"}
	}
	c := objs[0].Spec.Template.Spec.Containers[0]
	var problems []string
	for _, tc := range []struct{ merge, matrix, want, calls int }{{0, 0, 0, 2}, {1, 0, 0, 2}, {2, 0, 0, 2}, {254, 0, 254, 1}, {1, 254, 254, 2}} {
		calls, code, err := podCalls(t, c, tc.merge, tc.matrix)
		switch {
		case err != nil:
			return append(problems, err.Error())
		case code != tc.want || len(calls) != tc.calls:
			problems = append(problems, fmt.Sprintf("when hunt --merge exits %d and matrix %d, the merge pod runs %q and ends with %d; want %d commands and %d", tc.merge, tc.matrix, calls, code, tc.calls, tc.want))
		}
	}
	calls, _, _ := podCalls(t, c, 0, 0)
	if len(calls) != 2 || calls[0][0] != "hunt" || calls[1][0] != "matrix" {
		return append(problems, fmt.Sprintf("the merge pod runs %q, want jepsen-lite hunt --merge, then matrix", calls))
	}
	f, _, err := parseHuntFlags(calls[0][1:], io.Discard)
	if err != nil || f == nil || !f.merge {
		return append(problems, fmt.Sprintf("the merge pod's hunt %q is not a hunt --merge: %v", calls[0], err))
	}
	if !sameSet(f.files, files) || len(f.files) != len(files) {
		problems = append(problems, fmt.Sprintf("the merge merges %q, the parts write %q", f.files, files))
	}
	laid := withoutFlags(calls[1][1:], "out", "html", "schedules")
	if !slices.Equal(laid, []string{f.jsonOut}) || flagValue(calls[1], "out") == "" {
		problems = append(problems, fmt.Sprintf("the merge's matrix lays out %q, want the merged file %q, written to --out", laid, f.jsonOut))
	}
	return problems
}

// podCalls runs container c's command through the shell with a jepsen-lite
// on PATH that records each call's arguments and exits with huntExit for
// hunt and matrixExit for matrix; it returns the calls, in order, and the
// pod's exit code.
func podCalls(t *testing.T, c k8sContainer, huntExit, matrixExit int) ([][]string, int, error) {
	t.Helper()
	dir := t.TempDir()
	calls := filepath.Join(dir, "calls")
	if err := os.Mkdir(calls, 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\nn=$(ls \"$FLEET_CALLS\" | wc -l)\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done >\"$FLEET_CALLS/$n\"\n" +
		"case \"$1\" in hunt) exit \"$FLEET_HUNT_EXIT\" ;; matrix) exit \"$FLEET_MATRIX_EXIT\" ;; esac\nexit 0\n"
	if err := os.WriteFile(filepath.Join(dir, "jepsen-lite"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	command := append(slices.Clone(c.Command), c.Args...)
	if len(command) == 0 {
		return nil, 0, fmt.Errorf("container %s has no command", c.Name)
	}
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), "FLEET_CALLS="+calls,
		fmt.Sprintf("FLEET_HUNT_EXIT=%d", huntExit), fmt.Sprintf("FLEET_MATRIX_EXIT=%d", matrixExit))
	var ee *exec.ExitError
	if err := cmd.Run(); err != nil && !errors.As(err, &ee) {
		t.Fatalf("running %s's command: %v", c.Name, err)
	}
	var out [][]string
	for i := 0; ; i++ {
		b, err := os.ReadFile(filepath.Join(calls, fmt.Sprint(i)))
		if err != nil {
			break
		}
		out = append(out, strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"))
	}
	return out, cmd.ProcessState.ExitCode(), nil
}
