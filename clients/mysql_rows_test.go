package clients

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestMySQLWholeSeconds checks the rounding of a ttl or wait to the whole
// seconds of wait_timeout and innodb_lock_wait_timeout: up, and at least
// one.
func TestMySQLWholeSeconds(t *testing.T) {
	tests := []struct {
		name string
		d    time.Duration
		want int64
	}{
		{"zero is one second", 0, 1},
		{"a fraction is one second", 300 * time.Millisecond, 1},
		{"a whole second stays", time.Second, 1},
		{"just over rounds up", time.Second + time.Nanosecond, 2},
		{"two and a half is three", 2500 * time.Millisecond, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mysqlWholeSeconds(tt.d); got != tt.want {
				t.Fatalf("mysqlWholeSeconds(%v) = %d, want %d", tt.d, got, tt.want)
			}
		})
	}
}

// TestMySQLForUpdateCutHolder cuts a mysql-for-update holder's link to the
// server (packets dropped, nothing closed): the server keeps the row for
// the session's wait_timeout after the holder's last statement, so a
// waiting contender is granted the row no earlier than the holder's
// lease's Expires, and is granted it (the server ended the idle session
// and rolled its transaction back). After the heal the holder's release
// finds its session gone.
func TestMySQLForUpdateCutHolder(t *testing.T) {
	eps := newClusters(t).endpoints(t, mariadbOne)
	via, nw, links := throughLinks(t, "w0", eps)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	a := newLocker(t, "mysql-for-update", via, 0, nil)
	b := newLocker(t, "mysql-for-update", eps, 1, nil)
	const key, ttl = "cut-holder", time.Second
	la, err := a.Acquire(ctx, key, ttl)
	if err != nil {
		t.Fatal(err)
	}
	if err := nw.Cut(links...); err != nil {
		t.Fatal(err)
	}
	lb, err := b.(Waiter).AcquireWait(ctx, key, ttl, 10*time.Second)
	granted := time.Now()
	if err != nil {
		t.Fatalf("waiting acquire while the holder is cut off: %v", err)
	}
	if granted.Before(la.Expires) {
		t.Fatalf("granted %v before the cut holder's lease could end", la.Expires.Sub(granted))
	}
	if err := b.Release(ctx, lb); err != nil {
		t.Fatalf("release: %v", err)
	}
	if err := nw.Heal(links...); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx, la); err == nil || errors.Is(err, ErrReleaseNoOp) {
		t.Fatalf("release of the cut holder's lease after its session ended: err = %v, want a failure", err)
	}
}
