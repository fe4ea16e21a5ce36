package nshosts

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Remains lists what the hosts made by process pid, whose harness had the
// address harness, have on the machine: namespaces and links named for
// it, addresses of the harness's /24, processes whose command line names
// one of its dirs, and its dirs. It is empty once they are all removed
// (Hosts.Close, or DeleteLeftovers after pid is gone).
func Remains(pid int, harness string) []string {
	mark := prefix + strconv.Itoa(pid) + "-"
	subnet := harness[:strings.LastIndex(harness, ".")+1]
	var left []string
	for _, c := range [][]string{{"ip", "netns", "list"}, {"ip", "-o", "link", "show"}, {"ip", "-4", "-o", "addr"}} {
		b, _ := exec.Command(c[0], c[1:]...).Output()
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, mark) || strings.Contains(line, " "+subnet) {
				left = append(left, strings.Join(c, " ")+": "+line)
			}
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+strconv.Itoa(pid)+"-*"))
	left = append(left, dirs...)
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	dirMark := regexp.MustCompile(regexp.QuoteMeta(dirPrefix+strconv.Itoa(pid)) + `-`)
	for _, p := range procs {
		b, _ := os.ReadFile(p)
		if cmd := strings.ReplaceAll(string(b), "\x00", " "); dirMark.MatchString(cmd) {
			left = append(left, "process "+filepath.Base(filepath.Dir(p))+": "+cmd)
		}
	}
	return left
}
