package lockproto_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/lockproto"
)

// TestDocErrorTexts reads the error texts docs/lock-protocol.md quotes
// (its list between the "error texts" marks) and finds each in the
// package's code, so that the page quotes the errors a client really gets.
// It also checks the page's example of a quoted line against the error a
// ProtocolError of that line gives.
func TestDocErrorTexts(t *testing.T) {
	doc, err := os.ReadFile("../docs/lock-protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	begin, end := strings.Index(text, "<!-- error texts -->"), strings.Index(text, "<!-- /error texts -->")
	if begin < 0 || end < begin {
		t.Fatal(`docs/lock-protocol.md has no list between "<!-- error texts -->" and "<!-- /error texts -->"`)
	}
	quoted := regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(text[begin:end], -1)
	if len(quoted) < 20 {
		t.Fatalf("only %d error texts quoted", len(quoted))
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var code strings.Builder
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		code.Write(b)
	}
	for _, q := range quoted {
		if !strings.Contains(code.String(), q[1]) {
			t.Errorf("docs/lock-protocol.md quotes the error text %q, which no error of lockproto has", q[1])
		}
	}
	example := (&lockproto.ProtocolError{Command: "python3 bad.py", Worker: 2, Process: 2, Line: 3, Text: "acquired k1", Reason: "not a JSON object"}).Error()
	if !strings.Contains(text, "jepsen-lite run: "+example+"\n") {
		t.Errorf("docs/lock-protocol.md's example of a protocol error is not the error's own text %q", example)
	}
}

// TestQuoteCuts checks that a quoted line is cut at QuoteLimit bytes with
// a mark that says so, and that a short one is quoted whole.
func TestQuoteCuts(t *testing.T) {
	cases := []struct {
		name, text, want string
	}{
		{"short", "acquired k1", `"acquired k1"`},
		{"long", strings.Repeat("x", 300), `"` + strings.Repeat("x", lockproto.QuoteLimit) + `"… (cut at 200 of 300 bytes)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := lockproto.Quote(tc.text); got != tc.want {
				t.Errorf("Quote: %s, want %s", got, tc.want)
			}
		})
	}
}
