package reports

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/websocket"
)

// chromiumBinary is Debian's Chromium; the project's deps step installs it.
func chromiumBinary() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// browser is a headless Chromium driven over the DevTools protocol.
type browser struct {
	t    testing.TB
	ws   *websocket.Conn
	mu   sync.Mutex
	next int
}

// startBrowser starts headless Chromium with its own profile in a temp dir
// and connects to its first page. Chromium and its children are killed in
// t.Cleanup.
func startBrowser(t testing.TB) *browser {
	t.Helper()
	bin := chromiumBinary()
	if bin == "" {
		t.Skip("chromium is not installed (the deps step installs Debian's chromium): skipping the browser test")
	}
	profile := t.TempDir()
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
		"--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", "--remote-allow-origins=*",
		"--user-data-dir="+profile, "--window-size=1400,1000", "about:blank")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			t.Errorf("chromium (pid %d) did not exit", cmd.Process.Pid)
		}
	})
	var port string
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(filepath.Join(profile, "DevToolsActivePort"))
		if err == nil && strings.Contains(string(b), "\n") {
			port = strings.SplitN(string(b), "\n", 2)[0]
			break
		}
		select {
		case <-exited:
			t.Fatalf("chromium exited at start: %s", stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("chromium wrote no DevToolsActivePort in 30s: %s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	resp, err := http.Get("http://127.0.0.1:" + port + "/json/list")
	if err != nil {
		t.Fatalf("devtools: %v", err)
	}
	var targets []struct {
		Type string `json:"type"`
		WS   string `json:"webSocketDebuggerUrl"`
	}
	err = json.NewDecoder(resp.Body).Decode(&targets)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("devtools targets: %v", err)
	}
	var wsURL string
	for _, tg := range targets {
		if tg.Type == "page" {
			wsURL = tg.WS
			break
		}
	}
	if wsURL == "" {
		t.Fatalf("devtools: no page target in %+v", targets)
	}
	ws, err := websocket.Dial(wsURL, "", "http://127.0.0.1/")
	if err != nil {
		t.Fatalf("devtools websocket: %v", err)
	}
	ws.MaxPayloadBytes = 64 << 20
	t.Cleanup(func() { ws.Close() })
	b := &browser{t: t, ws: ws}
	b.call("Page.enable", nil)
	b.call("Emulation.setDeviceMetricsOverride", map[string]any{"width": 1400, "height": 1000, "deviceScaleFactor": 1, "mobile": false})
	return b
}

// call sends one DevTools command and returns its result, skipping events.
func (b *browser) call(method string, params any) json.RawMessage {
	b.t.Helper()
	res, err := b.try(method, params)
	if err != nil {
		b.t.Fatal(err)
	}
	return res
}

// try is call returning the error of a command the browser refused.
func (b *browser) try(method string, params any) (json.RawMessage, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.next++
	id := b.next
	if params == nil {
		params = map[string]any{}
	}
	if err := websocket.JSON.Send(b.ws, map[string]any{"id": id, "method": method, "params": params}); err != nil {
		return nil, fmt.Errorf("devtools %s: %w", method, err)
	}
	b.ws.SetReadDeadline(time.Now().Add(60 * time.Second))
	for {
		var msg struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := websocket.JSON.Receive(b.ws, &msg); err != nil {
			return nil, fmt.Errorf("devtools %s: %w", method, err)
		}
		if msg.ID != id {
			continue
		}
		if msg.Error != nil {
			return nil, fmt.Errorf("devtools %s: %s", method, msg.Error.Message)
		}
		return msg.Result, nil
	}
}

// eval evaluates a JavaScript expression in the page and decodes its value
// into out.
func (b *browser) eval(expr string, out any) {
	b.t.Helper()
	if err := b.evalErr(expr, out); err != nil {
		b.t.Fatal(err)
	}
}

// evalErr is eval returning its error, for pages that may be navigating.
func (b *browser) evalErr(expr string, out any) error {
	res, err := b.try("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true})
	if err != nil {
		return err
	}
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		Exception *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return fmt.Errorf("eval %q: %w", expr, err)
	}
	if r.Exception != nil {
		return fmt.Errorf("eval %q: %s %s", expr, r.Exception.Text, r.Exception.Exception.Description)
	}
	if out != nil {
		if err := json.Unmarshal(r.Result.Value, out); err != nil {
			return fmt.Errorf("eval %q = %s: %w", expr, r.Result.Value, err)
		}
	}
	return nil
}

// open navigates to url and waits until the page has loaded.
func (b *browser) open(url string) {
	b.t.Helper()
	b.call("Page.navigate", map[string]any{"url": url})
	deadline := time.Now().Add(30 * time.Second)
	for {
		var state string
		b.eval(`document.readyState + "|" + location.href`, &state)
		if strings.HasPrefix(state, "complete|") && strings.TrimPrefix(state, "complete|") != "about:blank" {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("page %s did not load: %s", url, state)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// screenshot saves a PNG of the whole page to path.
func (b *browser) screenshot(path string) error {
	var h float64
	b.eval(`document.documentElement.scrollHeight`, &h)
	res := b.call("Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true,
		"clip": map[string]any{"x": 0, "y": 0, "width": 1400, "height": min(h, 6000), "scale": 1}})
	var r struct {
		Data string `json:"data"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return fmt.Errorf("screenshot: %w", err)
	}
	png, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil {
		return fmt.Errorf("screenshot: %w", err)
	}
	if len(png) < 8 || string(png[1:4]) != "PNG" {
		return errors.New("screenshot: not a PNG")
	}
	return os.WriteFile(path, png, 0o644)
}

func sleepBrief() { time.Sleep(50 * time.Millisecond) }

// screenshotElement saves a PNG of the element selector matches.
func (b *browser) screenshotElement(selector, path string) error {
	var r struct{ X, Y, W, H float64 }
	if err := b.evalErr(`(() => { const e = document.querySelector(`+fmt.Sprintf("%q", selector)+`).getBoundingClientRect();
		return {X: e.left + scrollX, Y: e.top + scrollY, W: e.width, H: e.height} })()`, &r); err != nil {
		return err
	}
	res, err := b.try("Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true,
		"clip": map[string]any{"x": r.X, "y": r.Y, "width": r.W, "height": r.H, "scale": 1}})
	if err != nil {
		return err
	}
	var out struct {
		Data string `json:"data"`
	}
	if err := json.Unmarshal(res, &out); err != nil {
		return err
	}
	png, err := base64.StdEncoding.DecodeString(out.Data)
	if err != nil {
		return err
	}
	return os.WriteFile(path, png, 0o644)
}
