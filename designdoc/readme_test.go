package designdoc

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// twoCommandsRE is the README's "Two commands" block: its shell lines.
var twoCommandsRE = regexp.MustCompile("(?s)## Two commands\n.*?```sh\n(.*?)```")

// readmeCommands is the commands of the README's "Two commands", each
// without its comment: "make test-scenario", "make test".
func readmeCommands(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := twoCommandsRE.FindSubmatch(b)
	if m == nil {
		t.Fatal("README.md has no \"Two commands\" section with a sh block")
	}
	var out []string
	for _, line := range strings.Split(string(m[1]), "\n") {
		cmd, _, _ := strings.Cut(line, "#")
		if cmd = strings.TrimSpace(cmd); cmd != "" {
			out = append(out, cmd)
		}
	}
	return out
}

// TestCIRunsReadmeCommands holds .ci/run, which says it runs exactly the
// README's test command, to the README's two commands: each is a line of
// the script as it is written there.
func TestCIRunsReadmeCommands(t *testing.T) {
	cmds := readmeCommands(t)
	if len(cmds) != 2 {
		t.Fatalf("README.md's \"Two commands\" has %q; want two", cmds)
	}
	b, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		lines[strings.TrimSpace(line)] = true
	}
	for _, cmd := range cmds {
		if !lines[cmd] {
			t.Errorf(".ci/run has no line %q, a command of README.md's \"Two commands\"", cmd)
		}
	}
}
