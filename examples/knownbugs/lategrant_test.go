package knownbugs_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// lateGrant is the run of the etcd 3.5.0 program kept in testdata
// (docs/knownbugs.md, "The 3.5.0 client's late grant"): worker 0's Lock
// read its own key just as a partition cut it off, the answer came after
// the heal, and Lock granted it the lock that etcd had long since given to
// others. Its servers logged every request (etcd at debug level).
const lateGrant = "testdata/etcd-mutex-3.5.0-late-grant"

// The facts of the kept run that the test pins: worker 0's grant (op 458)
// and the grant of worker 5 it overlapped (op 452), the partition that cut
// worker 0 off (op 71), and worker 0's lease, which names its key.
const (
	lateGrantOp      = 458
	lateGrantHeldOp  = 452
	lateGrantCutOp   = 71
	lateGrantLeaseID = "37dba23af6f41616"
)

// TestFixedClientLateGrant checks the kept run: the checker finds worker
// 0's grant overlapping worker 5's, the corpus test counts it as the bug's
// shape (a waiter cut off for longer than its lease, granted after the
// heal), and the servers' logs show why: etcd answered worker 0's read of
// its key while the partition was being put in place, revoked the lease
// when it expired, with no leader change in the run, and refused worker
// 0's own revoke at its release.
func TestFixedClientLateGrant(t *testing.T) {
	h, _, err := history.ReadFile(filepath.Join(lateGrant, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	res := checker.Check(context.Background(), h, checker.Options{OutDir: t.TempDir()})
	logs := readNodeLogs(t, lateGrant)
	zero := historyZero(t, lateGrant, logs)
	for _, tc := range []struct {
		name  string
		check func() error
	}{
		{"the checker names the overlapping grants", func() error { return namesLateGrant(res) }},
		{"the corpus test counts it as the waiter granted after its cut", func() error {
			for _, s := range grantedAfterLeaseCut(h, res) {
				if strings.Contains(s, fmt.Sprintf("(op %d)", lateGrantOp)) {
					return nil
				}
			}
			return fmt.Errorf("grantedAfterLeaseCut names no grant op %d: %q", lateGrantOp, grantedAfterLeaseCut(h, res))
		}},
		{"etcd answered the read of the key as the cut began", func() error { return readAcrossCut(h, logs, zero) }},
		{"one leader for the whole run", func() error { return oneLeader(logs) }},
		{"etcd revoked the lease before w0's release deleted anything", func() error { return revokedFirst(lateGrant) }},
		{"etcd no longer knew the lease at the release", func() error {
			for _, r := range logs {
				if r.Msg == "failed to apply request" && strings.Contains(r.Request, "lease_revoke:<id:"+lateGrantLeaseID+">") && r.Error == "lease not found" {
					return nil
				}
			}
			return fmt.Errorf("no refused revoke of lease %s in the logs", lateGrantLeaseID)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.check(); err != nil {
				t.Error(err)
			}
		})
	}
}

// namesLateGrant returns nil when a double-hold of res names worker 5's
// grant and then worker 0's late one.
func namesLateGrant(res []checker.Result) error {
	for _, a := range anomalies(res, checker.DoubleHold) {
		if len(a.Ops) >= 2 && a.Ops[0] == lateGrantHeldOp && a.Ops[1] == lateGrantOp {
			return nil
		}
	}
	return fmt.Errorf("no double-hold names ops %d and %d: %+v", lateGrantHeldOp, lateGrantOp, anomalies(res, checker.DoubleHold))
}

// readAcrossCut returns nil when the node logs hold the read of worker
// 0's key that found it (Mutex.Lock's last read), begun before the
// partition of op lateGrantCutOp was in force and answered after.
func readAcrossCut(h history.History, logs []nodeRecord, zero time.Time) error {
	cut, ok := opAt(h, lateGrantCutOp)
	if !ok || cut.F != "partition" {
		return fmt.Errorf("op %d is not the partition", lateGrantCutOp)
	}
	want := `key:"/locks/k/` + lateGrantLeaseID + `" `
	for _, r := range logs {
		if r.Msg != "request stats" || r.Type != "/etcdserverpb.KV/Range" || r.Content != want || r.Count != 1 {
			continue
		}
		start, err := time.Parse(time.RFC3339Nano, r.Start)
		if err != nil {
			return err
		}
		spent, err := time.ParseDuration(strings.ReplaceAll(r.Spent, "µs", "us"))
		if err != nil {
			return err
		}
		from, to := start.Sub(zero), start.Add(spent).Sub(zero)
		if from < cut.Time && to > cut.Time {
			return nil
		}
		return fmt.Errorf("the read of the key ran from %v to %v, not across the partition at %v", from, to, cut.Time)
	}
	return fmt.Errorf("no read of %s that found the key", want)
}

// oneLeader returns nil when every member logged the same single
// election: no leader change could have extended the lease.
func oneLeader(logs []nodeRecord) error {
	var elected []string
	for _, r := range logs {
		if _, who, ok := strings.Cut(r.Msg, " elected leader "); ok && !slices.Contains(elected, who) {
			elected = append(elected, who)
		}
	}
	if len(elected) != 1 {
		return fmt.Errorf("elections %q, want one", elected)
	}
	return nil
}

// revokedFirst returns nil when n1's write-ahead log (wal.txt) has one
// term after the members' bootstrap and revokes worker 0's lease before
// the delete of its key that its release sent: etcd expired the lease, its
// holder did not give it up.
func revokedFirst(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, "wal.txt"))
	if err != nil {
		return err
	}
	terms, revoke, del := 0, -1, -1
	for i, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "# entries: ") && strings.Contains(line, " term=") && !strings.HasSuffix(line, " term=1"):
			terms++
		case revoke < 0 && strings.HasSuffix(line, "lease_revoke id="+lateGrantLeaseID):
			revoke = i
		case del < 0 && strings.Contains(line, `delete_range:<key:"/locks/k/`+lateGrantLeaseID+`" >`):
			del = i
		}
	}
	if terms != 1 || revoke < 0 || del < revoke {
		return fmt.Errorf("wal.txt: %d terms after the bootstrap, the lease's first revoke at line %d, its key's delete at line %d", terms, revoke, del)
	}
	return nil
}

// nodeRecord is the part of an etcd log line the test reads.
type nodeRecord struct {
	Msg     string `json:"msg"`
	TS      string `json:"ts"`
	Start   string `json:"start time"`
	Spent   string `json:"time spent"`
	Type    string `json:"response type"`
	Count   int    `json:"response count"`
	Content string `json:"request content"`
	Request string `json:"request"`
	Error   string `json:"error"`
}

// readNodeLogs returns the JSON lines of the nodes' logs in dir (the
// harness's own first line of each is not JSON and is left out).
func readNodeLogs(t *testing.T, dir string) []nodeRecord {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "n*.log"))
	if err != nil || len(files) != 3 {
		t.Fatalf("node logs in %s: %v %v", dir, files, err)
	}
	var out []nodeRecord
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		for sc.Scan() {
			var r nodeRecord
			if json.Unmarshal(sc.Bytes(), &r) == nil {
				out = append(out, r)
			}
		}
	}
	return out
}

// readyLine is run.log's line written as the history's clock starts.
var readyLine = regexp.MustCompile(`(?m)^(\d\d:\d\d:\d\d\.\d+) cluster and \d+ workers ready$`)

// historyZero returns the wall-clock time of the history's time zero: the
// time of day of run.log's ready line, on the day of the nodes' logs.
func historyZero(t *testing.T, dir string, logs []nodeRecord) time.Time {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "run.log"))
	if err != nil {
		t.Fatal(err)
	}
	m := readyLine.FindSubmatch(b)
	if m == nil || len(logs) == 0 || len(logs[0].TS) < len("2006-01-02") {
		t.Fatalf("no ready line in run.log or no dated node log")
	}
	zero, err := time.Parse("2006-01-02 15:04:05.999999", logs[0].TS[:len("2006-01-02")]+" "+string(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	return zero
}
