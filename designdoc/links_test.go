package designdoc

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

var (
	fenceRE  = regexp.MustCompile("(?ms)^```.*?^```")
	linkRE   = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	headRE   = regexp.MustCompile(`(?m)^#+ (.*)$`)
	anchorRE = regexp.MustCompile(`<a (?:id|name)="([^"]+)"`)
	schemeRE = regexp.MustCompile(`^[a-z][a-z0-9+.-]*:`)
)

// slug is GitHub's anchor of a heading: lower case, spaces as hyphens,
// every character but letters, digits, hyphens and underscores left out.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors is every anchor a Markdown file has: its headings' and its
// explicit <a id> marks.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	for _, m := range headRE.FindAllStringSubmatch(fenceRE.ReplaceAllString(text, ""), -1) {
		out[slug(m[1])] = true
	}
	for _, m := range anchorRE.FindAllStringSubmatch(text, -1) {
		out[m[1]] = true
	}
	return out
}

// TestDocLinksResolve requires every relative link of README.md and
// docs/*.md, outside code blocks, to name a file or directory that exists,
// and its #anchor, if any, to be a heading or an anchor of that file.
func TestDocLinksResolve(t *testing.T) {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range append(docs, filepath.Join(root, "README.md")) {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		text := fenceRE.ReplaceAllString(string(b), "")
		for _, m := range linkRE.FindAllStringSubmatch(text, -1) {
			if schemeRE.MatchString(m[1]) {
				continue
			}
			if why := broken(doc, m[1]); why != "" {
				t.Errorf("%s links to %s: %s", doc, m[1], why)
			}
		}
	}
}

// broken says why a relative link of the file doc does not resolve, or ""
// when it does.
func broken(doc, link string) string {
	path, anchor, _ := strings.Cut(link, "#")
	target := doc
	if path != "" {
		target = filepath.Join(filepath.Dir(doc), path)
	}
	b, err := os.ReadFile(target)
	if err != nil {
		if _, statErr := os.Stat(target); statErr == nil && anchor == "" {
			return "" // a directory
		}
		return "no such file"
	}
	if anchor != "" && strings.HasSuffix(target, ".md") && !anchors(string(b))[anchor] {
		return "no heading or anchor #" + anchor
	}
	return ""
}

func TestSlug(t *testing.T) {
	for _, tc := range []struct{ name, heading, want string }{
		{"words", "When a connection ends during a partition", "when-a-connection-ends-during-a-partition"},
		{"punctuation", "1. Layout and dependency direction", "1-layout-and-dependency-direction"},
		{"code", "redis-py: `redis.lock.Lock`", "redis-py-redislocklock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := slug(tc.heading); got != tc.want {
				t.Errorf("slug(%q) = %q, want %q", tc.heading, got, tc.want)
			}
		})
	}
}
