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

	"gopkg.in/yaml.v3"
)

// fleetDir holds the Kubernetes manifests of a gate on a fleet
// (docs/ci.md, "A Kubernetes Indexed Job").
const fleetDir = "../../deploy/kubernetes"

// k8sObject is what the fleet's checks read of one document of a
// Kubernetes manifest; the rest of it is Kubernetes' to check.
type k8sObject struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Spec struct {
		AccessModes    []string `yaml:"accessModes"`
		CompletionMode string   `yaml:"completionMode"`
		Completions    int      `yaml:"completions"`
		Parallelism    int      `yaml:"parallelism"`
		Template       struct {
			Spec struct {
				Containers []k8sContainer `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

// k8sContainer is what the fleet's checks read of a pod's container.
type k8sContainer struct {
	Name            string   `yaml:"name"`
	Command         []string `yaml:"command"`
	Args            []string `yaml:"args"`
	SecurityContext struct {
		Capabilities struct {
			Add []string `yaml:"add"`
		} `yaml:"capabilities"`
	} `yaml:"securityContext"`
}

// TestKubernetesFleetShards parses deploy/kubernetes's gate.yaml and
// merge.yaml and runs each pod's command through sh for every index the
// Indexed Job gives (JOB_COMPLETION_INDEX 0 to completions-1), with a
// jepsen-lite on PATH that records its arguments; it then lists, in
// process, the pairs each pod's gate would run. The parts must be those of
// `gate --shard i/n --list` for i = index+1 and n = completions, disjoint,
// together the unsharded gate's pairs; each pod keeps its own store, and
// the merge re-checks every part's store and judges the same pairs.
func TestKubernetesFleetShards(t *testing.T) {
	gateYAML, mergeYAML := readFleet(t)
	for _, p := range fleetProblems(t, gateYAML, mergeYAML) {
		t.Error(p)
	}
}

// TestKubernetesFleetShardsCatchBreaks breaks the manifests one way at a
// time, as an edit could, and requires the fleet's checks to find each.
func TestKubernetesFleetShardsCatchBreaks(t *testing.T) {
	tests := []struct {
		name, file, old, new string
	}{
		{"index used 0-based", "gate", "$((JOB_COMPLETION_INDEX + 1))", "$((JOB_COMPLETION_INDEX))"},
		{"completions other than the command's n", "gate", "completions: 4\n  parallelism: 4", "completions: 5\n  parallelism: 5"},
		{"parallelism other than completions", "gate", "parallelism: 4", "parallelism: 2"},
		{"no NET_ADMIN", "gate", "add: [NET_ADMIN]", "add: []"},
		{"a gate cut short completes its part", "gate", "case $code in 0 | 1)", "case $code in 0 | 1 | 2)"},
		{"merge without a part's store", "merge", ",/stores/part-4\n", "\n"},
		{"merge over other seeds", "merge", "- --seeds\n            - \"3\"", "- --seeds\n            - \"2\""},
	}
	gateYAML, mergeYAML := readFleet(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, m := gateYAML, mergeYAML
			text := &g
			if tt.file == "merge" {
				text = &m
			}
			if !strings.Contains(*text, tt.old) {
				t.Fatalf("%s.yaml no longer holds %q: update the break", tt.file, tt.old)
			}
			*text = strings.Replace(*text, tt.old, tt.new, 1)
			if problems := fleetProblems(t, g, m); len(problems) == 0 {
				t.Errorf("the checks found nothing wrong with %s.yaml broken so (%q for %q)", tt.file, tt.new, tt.old)
			} else {
				t.Logf("found: %s", problems[0])
			}
		})
	}
}

// readFleet returns the text of gate.yaml and merge.yaml.
func readFleet(t *testing.T) (gateYAML, mergeYAML string) {
	t.Helper()
	g, err := os.ReadFile(filepath.Join(fleetDir, "gate.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := os.ReadFile(filepath.Join(fleetDir, "merge.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(g), string(m)
}

// fleetProblems returns what is wrong with the fleet of gateYAML and
// mergeYAML (TestKubernetesFleetShards); none when nothing is.
func fleetProblems(t *testing.T, gateYAML, mergeYAML string) []string {
	t.Helper()
	job, pvc, err := fleetJob(gateYAML)
	if err != nil {
		return []string{"gate.yaml: " + err.Error()}
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
	parts, stores, whole, err := fleetParts(t, pod, n)
	if err != nil {
		return append(problems, err.Error())
	}
	seen := map[string]int{}
	for _, part := range parts {
		for _, p := range part {
			seen[p]++
		}
	}
	for _, p := range whole {
		if seen[p] != 1 {
			bad("pair %q is in %d of the %d parts, want 1", p, seen[p], n)
		}
	}
	if len(seen) != len(whole) {
		bad("the parts hold %d pairs, the unsharded gate %d", len(seen), len(whole))
	}
	return append(problems, mergeProblems(mergeYAML, stores, whole)...)
}

// fleetJob returns the Indexed Job and the claim of a fleet's manifest
// (gate.yaml, hunt.yaml), or an error when it lacks either or the Job has
// not one container.
func fleetJob(manifest string) (job, pvc *k8sObject, err error) {
	objs, err := k8sObjects(manifest)
	if err != nil {
		return nil, nil, err
	}
	for _, o := range objs {
		switch o.Kind {
		case "Job":
			job = o
		case "PersistentVolumeClaim":
			pvc = o
		}
	}
	if job == nil || pvc == nil || len(job.Spec.Template.Spec.Containers) != 1 {
		return nil, nil, errors.New("want a PersistentVolumeClaim and a Job of one container")
	}
	return job, pvc, nil
}

// k8sObjects parses the documents of a manifest.
func k8sObjects(text string) ([]*k8sObject, error) {
	dec := yaml.NewDecoder(strings.NewReader(text))
	var out []*k8sObject
	for {
		var o k8sObject
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, &o)
	}
}

// fleetParts runs pod's command for each index 0..n-1 and returns the
// pairs each index's gate lists, its store, and the unsharded gate's
// pairs; an error when a pod's gate is not the gate, or its part is not
// `gate --shard index+1/n`'s.
func fleetParts(t *testing.T, pod k8sContainer, n int) (parts [][]string, stores, whole []string, err error) {
	for index := range n {
		args, err := podArgs(t, pod, index, "gate")
		if err != nil {
			return nil, nil, nil, err
		}
		part, err := gateList(args)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("index %d: %v", index, err)
		}
		selection := withoutFlags(args, "shard", "store", "junit", "markdown")
		want, err := gateList(append(selection, "--shard", fmt.Sprintf("%d/%d", index+1, n)))
		if err != nil {
			return nil, nil, nil, fmt.Errorf("index %d: %v", index, err)
		}
		if !slices.Equal(part, want) {
			return nil, nil, nil, fmt.Errorf("index %d: the pod's gate %q lists %q, want part %d/%d: %q", index, args, part, index+1, n, want)
		}
		store := flagValue(args, "store")
		if slices.Contains(stores, store) || store == "" {
			return nil, nil, nil, fmt.Errorf("index %d: store %q is another pod's, or the default", index, store)
		}
		parts, stores = append(parts, part), append(stores, store)
		if index == 0 {
			if whole, err = gateList(selection); err != nil {
				return nil, nil, nil, err
			}
		}
	}
	return parts, stores, whole, nil
}

// podArgs runs pod's command through the shell with JOB_COMPLETION_INDEX
// set to index and a jepsen-lite on PATH that records its arguments, and
// returns the arguments of its command sub (gate, hunt; after sub). The
// command must run jepsen-lite once and end with 0 when it does; a
// verdict of a run not as expected or invalid (1) must end the pod with 0
// too, a command cut short (2) with 2 and bad input (254) with 254.
func podArgs(t *testing.T, pod k8sContainer, index int, sub string) ([]string, error) {
	dir := t.TempDir()
	shim := filepath.Join(dir, "jepsen-lite")
	record := filepath.Join(dir, "args")
	script := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done >>\"$FLEET_ARGS\"\nexit \"$FLEET_EXIT\"\n"
	if err := os.WriteFile(shim, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	command := append(slices.Clone(pod.Command), pod.Args...)
	if len(command) == 0 {
		return nil, fmt.Errorf("container %s has no command", pod.Name)
	}
	for _, tc := range []struct{ exit, want int }{{1, 0}, {2, 2}, {254, 254}, {0, 0}} {
		_ = os.Remove(record)
		cmd := exec.Command(command[0], command[1:]...)
		cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), fmt.Sprintf("JOB_COMPLETION_INDEX=%d", index),
			"FLEET_ARGS="+record, fmt.Sprintf("FLEET_EXIT=%d", tc.exit))
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("running %s's command: %v", pod.Name, err)
		}
		if code := cmd.ProcessState.ExitCode(); code != tc.want {
			return nil, fmt.Errorf("index %d: the pod ends with %d when its %s exits %d, want %d: %s", index, code, sub, tc.exit, tc.want, out)
		}
	}
	b, err := os.ReadFile(record)
	if err != nil {
		return nil, fmt.Errorf("index %d: the pod's command runs no jepsen-lite: %v", index, err)
	}
	args := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if args[0] != sub {
		return nil, fmt.Errorf("index %d: the pod runs jepsen-lite %q, want %s", index, args, sub)
	}
	return args[1:], nil
}

// mergeProblems returns what is wrong with the merge of mergeYAML: it must
// run `gate --from-store` over exactly the parts' stores, of the same pairs
// as the unsharded gate's (whole).
func mergeProblems(mergeYAML string, stores, whole []string) []string {
	objs, err := k8sObjects(mergeYAML)
	if err != nil {
		return []string{"merge.yaml: " + err.Error()}
	}
	if len(objs) != 1 || objs[0].Kind != "Job" || len(objs[0].Spec.Template.Spec.Containers) != 1 {
		return []string{"merge.yaml: want one Job of one container"}
	}
	c := objs[0].Spec.Template.Spec.Containers[0]
	command := append(slices.Clone(c.Command), c.Args...)
	if len(command) < 2 || command[0] != "jepsen-lite" || command[1] != "gate" {
		return []string{fmt.Sprintf("merge.yaml runs %q, want jepsen-lite gate", command)}
	}
	args := command[2:]
	var problems []string
	from := strings.Split(flagValue(args, "from-store"), ",")
	if !sameSet(from, stores) {
		problems = append(problems, fmt.Sprintf("the merge re-checks the stores %q, the parts keep %q", from, stores))
	}
	merged, err := gateList(withoutFlags(args, "from-store", "junit", "markdown"))
	if err != nil {
		return append(problems, "merge.yaml: "+err.Error())
	}
	if !slices.Equal(merged, whole) {
		problems = append(problems, fmt.Sprintf("the merge judges %d pairs (first %q), the parts make %d (first %q)", len(merged), merged[0], len(whole), whole[0]))
	}
	return problems
}

// gateList runs, in process, the gate of args with --list and returns the
// pairs it lists; an error when it does not exit 0.
func gateList(args []string) ([]string, error) {
	var stdout, stderr bytes.Buffer
	code, err := gateCmd(context.Background(), append(slices.Clone(args), "--list"), &stdout, &stderr)
	if err != nil || code != exitHeld {
		return nil, fmt.Errorf("gate %q --list: exit %d, %v %s", args, code, err, stderr.String())
	}
	return strings.Split(strings.TrimSpace(stdout.String()), "\n"), nil
}

// flagValue returns the value of --name in args ("--name v" or
// "--name=v"); "" when it is not there.
func flagValue(args []string, name string) string {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
		if a == "--"+name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// withoutFlags returns args without the flags names and their values.
func withoutFlags(args []string, names ...string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, _, hasValue := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") || !slices.Contains(names, name) {
			out = append(out, a)
			continue
		}
		if !hasValue {
			i++
		}
	}
	return out
}

// sameSet reports whether a and b hold the same strings, in any order.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
