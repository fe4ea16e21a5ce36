package clients

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// scriptedLocker returns the lease and errors a test gives it, so that the
// recording wrapper's rules can be checked without a server.
type scriptedLocker struct {
	lease      func() Lease
	acquireErr error
	releaseErr error
	closed     int
}

func (s *scriptedLocker) Acquire(context.Context, string, time.Duration) (Lease, error) {
	if s.acquireErr != nil {
		return Lease{}, s.acquireErr
	}
	return s.lease(), nil
}
func (s *scriptedLocker) Release(context.Context, Lease) error { return s.releaseErr }
func (s *scriptedLocker) Close() error                         { s.closed++; return nil }

func TestRecordedLease(t *testing.T) {
	tests := []struct {
		name        string
		lease       func() Lease
		wantLease   func(got time.Duration) bool
		wantSession bool
	}{
		{"expiry after the invoke", func() Lease { return Lease{Key: "k", Expires: time.Now().Add(time.Hour)} },
			func(got time.Duration) bool { return got > time.Hour-time.Minute && got <= time.Hour+time.Minute }, false},
		{"never", func() Lease { return Lease{Key: "k", Never: true, Session: true} },
			func(got time.Duration) bool { return got == history.NoLease }, true},
		{"an expiry before the invoke is the shortest lease", func() Lease { return Lease{Key: "k", Expires: time.Now().Add(-time.Hour)} },
			func(got time.Duration) bool { return got == 1 }, false},
		{"neither: absent", func() Lease { return Lease{Key: "k"} },
			func(got time.Duration) bool { return got == 0 }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := history.NewRecorder()
			r := &Recorded{Locker: &scriptedLocker{lease: tt.lease}, Rec: rec, Proc: NewProcess(0, 1)}
			if _, err := r.Acquire(context.Background(), "k", time.Second); err != nil {
				t.Fatal(err)
			}
			h := rec.History()
			if len(h) != 2 || h[1].Type != history.OK {
				t.Fatalf("history %v, want invoke and ok", h)
			}
			if !tt.wantLease(h[1].Lease) || h[1].Session != tt.wantSession {
				t.Fatalf("recorded lease %v session %v", h[1].Lease, h[1].Session)
			}
		})
	}
}

func TestRecordedOutcomes(t *testing.T) {
	tests := []struct {
		name       string
		releaseErr error
		want       history.Type
		crashes    bool
	}{
		{"release ok", nil, history.OK, false},
		{"release of a lock not held", ErrNotHeld, history.Fail, false},
		// A release that does nothing on the server must not read as a
		// release that freed the lock.
		{"release that does nothing on the server", ErrReleaseNoOp, history.Fail, false},
		{"release of unknown outcome", errors.New("i/o timeout"), history.Info, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := history.NewRecorder()
			first := &scriptedLocker{releaseErr: tt.releaseErr}
			second := &scriptedLocker{}
			r := &Recorded{Locker: first, Rec: rec, Proc: NewProcess(1, 3),
				Open: func(context.Context) (Locker, error) { return second, nil }}
			_ = r.Release(context.Background(), Lease{Key: "k"})
			h := rec.History()
			if len(h) != 2 || h[1].Type != tt.want {
				t.Fatalf("history %v, want a %s completion", h, tt.want)
			}
			if got := r.Proc.ID() != 1; got != tt.crashes {
				t.Fatalf("process %d after the release; crashed %v, want %v", r.Proc.ID(), got, tt.crashes)
			}
			if !tt.crashes {
				if first.closed != 0 || r.Locker != first {
					t.Fatal("a definite outcome closed or replaced the Locker")
				}
				return
			}
			if first.closed != 1 || r.Locker != nil {
				t.Fatalf("the crashed process's Locker: closed %d times, still attached %v", first.closed, r.Locker != nil)
			}
			if _, err := r.Acquire(context.Background(), "k", time.Second); err == nil {
				t.Fatal("an acquire without a Locker succeeded")
			}
			if n := rec.Len(); n != 2 {
				t.Fatalf("an acquire without a Locker recorded %d ops", n-2)
			}
			opened, err := r.Ready(context.Background())
			if err != nil || !opened || r.Locker != second || r.Proc.ID() != 4 {
				t.Fatalf("Ready: opened %v, err %v, new Locker %v, process %d (want 4)", opened, err, r.Locker == second, r.Proc.ID())
			}
		})
	}
}

// renewingLocker is a scriptedLocker that can renew.
type renewingLocker struct {
	scriptedLocker
	renewErr error
}

func (r *renewingLocker) Renew(_ context.Context, l Lease, ttl time.Duration) (Lease, error) {
	if r.renewErr != nil {
		return Lease{}, r.renewErr
	}
	l.Expires = time.Now().Add(ttl)
	l.Until = l.Expires.Add(-time.Millisecond)
	return l, nil
}

func TestRecordedRenew(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want history.Type
	}{
		{"renewed", nil, history.OK},
		{"not held", ErrNotHeld, history.Fail},
		{"unknown", errors.New("i/o timeout"), history.Info},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := history.NewRecorder()
			r := &Recorded{Locker: &renewingLocker{renewErr: tt.err}, Rec: rec, Proc: NewProcess(0, 1)}
			_, _ = r.Renew(context.Background(), Lease{Key: "k", Token: 7}, time.Hour)
			h := rec.History()
			if len(h) != 2 || h[0].F != history.FRenew || h[0].TTL != time.Hour || h[0].Token != 7 || h[1].Type != tt.want {
				t.Fatalf("history %+v, want a renew invoke (ttl 1h, token 7) and a %s completion", h, tt.want)
			}
			if tt.want == history.OK && (h[1].Lease < time.Hour-time.Minute || h[1].Lease > time.Hour+time.Minute || h[1].Until == 0) {
				t.Fatalf("renew ok with lease %v, until %v", h[1].Lease, h[1].Until)
			}
			if tt.want != history.OK && (h[1].Lease != 0 || h[1].Until != 0) {
				t.Fatalf("a %s renewal records lease %v, until %v", tt.want, h[1].Lease, h[1].Until)
			}
		})
	}
	rec := history.NewRecorder()
	r := &Recorded{Locker: &scriptedLocker{}, Rec: rec, Proc: NewProcess(0, 1)}
	if _, err := r.Renew(context.Background(), Lease{Key: "k"}, time.Second); !errors.Is(err, ErrNoRenewal) || rec.Len() != 0 {
		t.Fatalf("renewal without a Renewer: err %v, %d ops recorded", err, rec.Len())
	}
}

func TestRecordedAcquireWaitNeedsAWaiter(t *testing.T) {
	rec := history.NewRecorder()
	r := &Recorded{Locker: &scriptedLocker{}, Rec: rec, Proc: NewProcess(0, 1)}
	if _, err := r.AcquireWait(context.Background(), "k", time.Second, time.Second); !errors.Is(err, ErrNoWait) || rec.Len() != 0 {
		t.Fatalf("waiting acquire without a Waiter: err %v, %d ops recorded", err, rec.Len())
	}
}
