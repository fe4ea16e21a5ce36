package local

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
)

// Environment variables of the clock-skew library.
const (
	// ClockSkewLibraryEnv names the environment variable that gives the path
	// of libclockskew.so, overriding the search.
	ClockSkewLibraryEnv = "JEPSEN_LITE_CLOCKSKEW"
	// connectMapEnv is read by the library in the node: comma-separated
	// "ip:port=ip:port" pairs, each redirecting connect() from the left
	// address to the right one.
	connectMapEnv = "JEPSEN_LITE_CONNECT_MAP"
)

// clockSkewLibraryName is the library's file name.
const clockSkewLibraryName = "libclockskew.so"

// FindClockSkewLibrary returns the path of libclockskew.so: the value of
// JEPSEN_LITE_CLOCKSKEW when set; else build/libclockskew.so in the module
// root found by walking up from the working directory to go.mod, or in the
// harness's own source tree (the checkout or module cache directory this
// package was compiled from: a `replace` to a checkout from another module
// finds the checkout's build); else libclockskew.so or
// build/libclockskew.so next to the executable. When none exists but the
// source clockskew/clockskew.c is in one of those roots and cc is on PATH,
// it builds the library into buildDir. Otherwise it returns a one-line
// error that says what is missing and how to provide it.
func FindClockSkewLibrary(buildDir string) (string, error) {
	if p := os.Getenv(ClockSkewLibraryEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("local: %s=%s: %w", ClockSkewLibraryEnv, p, err)
		}
		return filepath.Abs(p)
	}
	roots := sourceRoots()
	for _, root := range roots {
		p := filepath.Join(root, "build", clockSkewLibraryName)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if exe, err := os.Executable(); err == nil {
		for _, p := range []string{
			filepath.Join(filepath.Dir(exe), clockSkewLibraryName),
			filepath.Join(filepath.Dir(exe), "..", "build", clockSkewLibraryName),
		} {
			if _, err := os.Stat(p); err == nil {
				return filepath.Abs(p)
			}
		}
	}
	cc, ccErr := exec.LookPath("cc")
	for _, root := range roots {
		src := filepath.Join(root, "clockskew", "clockskew.c")
		if _, err := os.Stat(src); err != nil || ccErr != nil || buildDir == "" {
			continue
		}
		out := filepath.Join(buildDir, clockSkewLibraryName)
		cmd := exec.Command(cc, "-shared", "-fPIC", "-O2", "-Wall", "-o", out, src, "-ldl")
		if msg, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("local: build %s: %w: %s", clockSkewLibraryName, err, msg)
		}
		if err := os.Chmod(out, 0o755); err != nil {
			return "", fmt.Errorf("local: build %s: %w", clockSkewLibraryName, err)
		}
		return out, nil
	}
	return "", ErrNoClockSkewLibrary
}

// ErrNoClockSkewLibrary is FindClockSkewLibrary's error when the library is
// nowhere to be found or built.
var ErrNoClockSkewLibrary = fmt.Errorf("local: %s not found (the harness's build/%s, or cc and clockskew/clockskew.c to build it): set %s=/path/%s; build it with `make build` in a jepsen-lite checkout, or `cc -shared -fPIC -O2 -o %s clockskew/clockskew.c -ldl`",
	clockSkewLibraryName, clockSkewLibraryName, ClockSkewLibraryEnv, clockSkewLibraryName, clockSkewLibraryName)

// sourceRoots returns the directories where the library or its source may
// be: the module root of the working directory (moduleRoot) and the root
// of the harness's own source tree (harnessRoot), each once.
func sourceRoots() []string {
	var roots []string
	for _, r := range []string{moduleRoot(), harnessRoot()} {
		if r != "" && !slices.Contains(roots, r) {
			roots = append(roots, r)
		}
	}
	return roots
}

// harnessRoot returns the root of the source tree this package was
// compiled from (two directories above this file), or "" when the binary
// does not know it (built with -trimpath) or the tree is gone.
func harnessRoot() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return ""
	}
	root := filepath.Join(filepath.Dir(file), "..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return ""
	}
	return filepath.Clean(root)
}

// moduleRoot returns the nearest directory at or above the working directory
// that holds go.mod, or "".
func moduleRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}
