package reports

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
)

// DetailEndpoint is the name, in a run's directory, under which serve
// returns the full detail of a time window of the run.
const DetailEndpoint = "detail.json"

// maxServedOps is the most ops the detail endpoint returns for one window
// of a run.
const maxServedOps = 100_000

// DefaultServeAddr is where Serve listens when given no address.
const DefaultServeAddr = "127.0.0.1:8080"

// ErrNonLoopback is returned by Serve for an address that is not on the
// loopback interface, unless AllowNonLoopback is given.
var ErrNonLoopback = errors.New("reports: refusing to serve the store on a non-loopback address")

// ServeOption configures Serve.
type ServeOption func(*serveConfig)

type serveConfig struct {
	allowRemote bool
	onListen    func(net.Addr)
}

// AllowNonLoopback lets Serve listen on any address. By default it only
// listens on loopback addresses, since the store holds logs of the systems
// under test.
func AllowNonLoopback() ServeOption { return func(c *serveConfig) { c.allowRemote = true } }

// OnListen has Serve call f with the address it listens on once it does
// (useful with port 0). By default nothing is called.
func OnListen(f func(net.Addr)) ServeOption { return func(c *serveConfig) { c.onListen = f } }

// Serve serves the run store at storeDir over HTTP on addr (DefaultServeAddr
// when empty) until ctx ends, then shuts down and returns nil. See
// NewStoreHandler for what it serves.
func Serve(ctx context.Context, storeDir, addr string, opts ...ServeOption) error {
	var cfg serveConfig
	for _, o := range opts {
		o(&cfg)
	}
	if addr == "" {
		addr = DefaultServeAddr
	}
	if !cfg.allowRemote {
		if err := checkLoopback(addr); err != nil {
			return err
		}
	}
	h, err := NewStoreHandler(storeDir)
	if err != nil {
		return err
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	if cfg.onListen != nil {
		cfg.onListen(ln.Addr())
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("reports: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("reports: shutting down: %w", err)
	}
	<-done
	return nil
}

// checkLoopback returns ErrNonLoopback unless addr's host is a loopback IP
// or "localhost". An empty host (all interfaces) is not loopback.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("reports: address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%w: %q (use 127.0.0.1)", ErrNonLoopback, addr)
}

// Run is one run of the store as the run list shows it.
type Run struct {
	Scenario string
	Dir      string // relative to the store, slash-separated: <scenario>/<timestamp>
	Time     time.Time
	Results  *Results
	Err      string // why results.json could not be read
}

// Anomalies counts the run's anomalies.
func (r Run) Anomalies() int {
	if r.Results == nil {
		return 0
	}
	n := 0
	for _, c := range r.Results.Checkers {
		n += len(c.Anomalies)
	}
	return n
}

// runDirTimeLayouts are the layouts of run directory names, newest first.
var runDirTimeLayouts = []string{"20060102T150405.000Z", "20060102T150405Z", time.RFC3339Nano, "2006-01-02T15-04-05"}

func runDirTime(name string, dir string) time.Time {
	base := name
	if i := strings.LastIndexByte(name, '-'); i > 0 && !strings.Contains(name[i:], ":") {
		if _, err := time.Parse(runDirTimeLayouts[0], name[:i]); err == nil {
			base = name[:i]
		}
	}
	for _, l := range runDirTimeLayouts {
		if t, err := time.Parse(l, base); err == nil {
			return t
		}
	}
	if st, err := os.Stat(dir); err == nil {
		return st.ModTime()
	}
	return time.Time{}
}

// ListRuns returns the runs of the store, newest first: every directory
// <scenario>/<timestamp> that holds a results.json. Symlinks (latest) are
// not followed.
func ListRuns(storeDir string) ([]Run, error) {
	scen, err := os.ReadDir(storeDir)
	if err != nil {
		return nil, fmt.Errorf("reports: %w", err)
	}
	var runs []Run
	for _, s := range scen {
		if !s.IsDir() || strings.HasPrefix(s.Name(), ".") {
			continue
		}
		dirs, err := os.ReadDir(filepath.Join(storeDir, s.Name()))
		if err != nil {
			continue
		}
		for _, d := range dirs {
			if !d.IsDir() {
				continue
			}
			dir := filepath.Join(storeDir, s.Name(), d.Name())
			if _, err := os.Stat(filepath.Join(dir, ResultsFile)); err != nil {
				continue
			}
			r := Run{Scenario: s.Name(), Dir: s.Name() + "/" + d.Name(), Time: runDirTime(d.Name(), dir)}
			if res, err := ReadResults(dir); err != nil {
				r.Err = err.Error()
			} else {
				r.Results = res
			}
			runs = append(runs, r)
		}
	}
	sort.SliceStable(runs, func(a, b int) bool {
		if !runs[a].Time.Equal(runs[b].Time) {
			return runs[a].Time.After(runs[b].Time)
		}
		return runs[a].Dir > runs[b].Dir
	})
	return runs, nil
}

var runsTemplate = template.Must(template.New("runs.html.tmpl").Funcs(template.FuncMap{
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "?"
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
}).ParseFS(assets, "assets/runs.html.tmpl"))

type runsView struct {
	Store     string
	Runs      []Run
	Total     int
	Scenarios []string
	Verdicts  []checker.Verdict
	Scenario  string
	Verdict   string
	CSS       template.CSS
}

// NewStoreHandler returns the HTTP handler of the run store at storeDir:
//   - "/" lists the runs (scenario, time, verdict, expectation met,
//     anomalies), newest first, filtered by the query parameters scenario
//     and verdict;
//   - "/runs/<scenario>/<timestamp>/<file>" serves a run's files, never
//     anything outside storeDir; report.html is generated on first request
//     when the run has none;
//   - "/runs/<scenario>/<timestamp>/detail.json?from=<µs>&to=<µs>" returns
//     the full detail (ops and holds) of a time window of the run, read on
//     demand from its history.jsonl (readWindow; from the latest
//     checkpoint before the window of the run's windowIndex, built as
//     windows are read), for the timeline of a long run's report.
func NewStoreHandler(storeDir string) (http.Handler, error) {
	abs, err := filepath.Abs(storeDir)
	if err != nil {
		return nil, fmt.Errorf("reports: %w", err)
	}
	if st, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("reports: store: %w", err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("reports: store %s is not a directory", abs)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("reports: %w", err)
	}
	s := &storeServer{dir: abs, root: root, files: http.FileServerFS(root.FS())}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.list)
	mux.HandleFunc("GET /runs/", s.file)
	mux.HandleFunc("GET /runs/{scenario}/{run}/"+DetailEndpoint, s.detail)
	return mux, nil
}

type storeServer struct {
	dir   string
	root  *os.Root
	files http.Handler
	mu    sync.Mutex // serialises report generation
	// indexes are the window indexes of the runs whose detail was asked
	// for, by run directory.
	imu     sync.Mutex
	indexes map[string]*windowIndex
}

// index returns the window index of the history of run rel, whose file is
// st: a new one when the file is not the one indexed.
func (s *storeServer) index(rel string, st fs.FileInfo) *windowIndex {
	s.imu.Lock()
	defer s.imu.Unlock()
	x := s.indexes[rel]
	if x == nil || x.size != st.Size() || !x.mod.Equal(st.ModTime()) {
		x = &windowIndex{size: st.Size(), mod: st.ModTime()}
		if s.indexes == nil {
			s.indexes = map[string]*windowIndex{}
		}
		s.indexes[rel] = x
	}
	return x
}

func (s *storeServer) list(w http.ResponseWriter, r *http.Request) {
	runs, err := ListRuns(s.dir)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	css, _ := assets.ReadFile("assets/report.css")
	v := runsView{Store: s.dir, Total: len(runs), Scenario: r.URL.Query().Get("scenario"),
		Verdict: r.URL.Query().Get("verdict"), CSS: template.CSS(css),
		Verdicts: []checker.Verdict{checker.Valid, checker.Invalid, checker.Unknown}}
	seen := map[string]bool{}
	for _, run := range runs {
		if !seen[run.Scenario] {
			seen[run.Scenario] = true
			v.Scenarios = append(v.Scenarios, run.Scenario)
		}
		if v.Scenario != "" && run.Scenario != v.Scenario {
			continue
		}
		if v.Verdict != "" && (run.Results == nil || string(run.Results.Verdict) != v.Verdict) {
			continue
		}
		v.Runs = append(v.Runs, run)
	}
	sort.Strings(v.Scenarios)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := runsTemplate.Execute(w, v); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

func (s *storeServer) file(w http.ResponseWriter, r *http.Request) {
	rel := strings.TrimPrefix(path.Clean(r.URL.Path), "/runs")
	rel = strings.TrimPrefix(rel, "/")
	if rel != "" && !fs.ValidPath(rel) {
		http.Error(w, "bad path", http.StatusBadRequest)
		return
	}
	parts := strings.Split(rel, "/")
	if len(parts) == 3 && parts[2] == ReportFile {
		if err := s.ensureReport(parts[0] + "/" + parts[1]); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	r2 := r.Clone(r.Context())
	r2.URL.Path = "/" + rel
	if strings.HasSuffix(r.URL.Path, "/") && rel != "" {
		r2.URL.Path += "/"
	}
	r2.URL.RawPath = ""
	s.files.ServeHTTP(w, r2)
}

// ensureReport writes the report of the run dir rel when it has results
// but no report yet.
func (s *storeServer) ensureReport(rel string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.root.Stat(path.Join(rel, ReportFile)); err == nil {
		return nil
	}
	if _, err := s.root.Stat(path.Join(rel, ResultsFile)); err != nil {
		return nil // not a run: let the file server say 404
	}
	// rel stays inside the store: the root has just resolved it.
	return WriteHTML(filepath.Join(s.dir, filepath.FromSlash(rel)))
}

// detail returns the full detail of the window ?from=<µs>&to=<µs> of a
// run as JSON (windowJSON), read from its history.jsonl op by op.
func (s *storeServer) detail(w http.ResponseWriter, r *http.Request) {
	rel := r.PathValue("scenario") + "/" + r.PathValue("run")
	if !fs.ValidPath(rel) || strings.HasPrefix(rel, ".") {
		http.Error(w, "bad path", http.StatusBadRequest)
		return
	}
	from, err1 := strconv.ParseInt(r.URL.Query().Get("from"), 10, 64)
	to, err2 := strconv.ParseInt(r.URL.Query().Get("to"), 10, 64)
	if err1 != nil || err2 != nil || from < 0 || to < from {
		http.Error(w, "want ?from=<µs>&to=<µs>, 0 <= from <= to", http.StatusBadRequest)
		return
	}
	var res Results
	if b, err := s.root.ReadFile(path.Join(rel, ResultsFile)); err != nil || json.Unmarshal(b, &res) != nil {
		http.Error(w, "no such run", http.StatusNotFound)
		return
	}
	guarded := false
	if b, err := s.root.ReadFile(path.Join(rel, ScenarioFile)); err == nil {
		guarded = scenarioField(b, "resource") == "guarded"
	}
	f, err := s.root.Open(path.Join(rel, HistoryFile))
	if err != nil {
		http.Error(w, "the run has no history", http.StatusNotFound)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	out, err := readWindow(f, time.Duration(from)*time.Microsecond, time.Duration(to)*time.Microsecond, maxServedOps, guarded, namedOps(drawnResults(res)), s.index(rel, st))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(out); err != nil {
		return // the client went away
	}
}
