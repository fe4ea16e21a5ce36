package cluster

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// declaredPackages returns the Debian packages of every declaration, in
// order, each once.
func declaredPackages() []string {
	var out []string
	for _, s := range Systems {
		for _, p := range s.Packages {
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// TestImagePackagesDeclared holds the node image's package list to the
// declarations: images/packages.txt installs exactly the packages the
// systems declare, so a system's servers are in the image once it is
// declared, and nothing undeclared is.
func TestImagePackagesDeclared(t *testing.T) {
	b, err := os.ReadFile("../images/packages.txt")
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, line := range strings.Split(string(b), "\n") {
		line, _, _ = strings.Cut(line, "#")
		listed = append(listed, strings.Fields(line)...)
	}
	declared := declaredPackages()
	for _, p := range declared {
		if !slices.Contains(listed, p) {
			t.Errorf("images/packages.txt lacks %s, which a system declares", p)
		}
	}
	for _, p := range listed {
		if !slices.Contains(declared, p) {
			t.Errorf("images/packages.txt installs %s, which no system declares", p)
		}
	}
}

// TestDepsInstallsDeclared requires scripts/deps.sh to install on the host
// every package a system declares (its line need+=(package)).
func TestDepsInstallsDeclared(t *testing.T) {
	b, err := os.ReadFile("../scripts/deps.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range declaredPackages() {
		if !strings.Contains(string(b), "need+=("+p+")") {
			t.Errorf("scripts/deps.sh does not install %s, which a system declares", p)
		}
	}
}
