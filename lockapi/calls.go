package lockapi

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// loop answers requests until the input ends.
func (s *server) loop() error {
	for s.in.Scan() {
		received := time.Now()
		var r request
		if err := json.Unmarshal(s.in.Bytes(), &r); err != nil {
			return fmt.Errorf("lockapi: a line that is no request: %w", err)
		}
		rep, granted := s.call(r, received)
		rep.ReceivedMS, rep.NowMS = s.msp(received), s.msp(time.Now())
		if err := s.write(rep); err != nil {
			return err
		}
		if granted != nil && r.Type == "acquire" {
			s.watch(granted)
		}
	}
	if err := s.in.Err(); err != nil {
		return fmt.Errorf("lockapi: reading requests: %w", err)
	}
	return nil
}

// call performs request r, read at received, and returns its reply, and
// the hold when r granted or renewed one.
func (s *server) call(r request, received time.Time) (reply, *hold) {
	switch r.Type {
	case "acquire":
		return s.acquire(r, received)
	case "release":
		return s.release(r), nil
	case "renew":
		return s.renew(r, received)
	}
	return errorReply(r.ID, "error", fmt.Errorf("lockapi: no %q: this client serves acquire, release and renew", r.Type)), nil
}

// acquire takes the lock, waiting when r asks to; the call's context is
// the hold's.
func (s *server) acquire(r request, received time.Time) (reply, *hold) {
	ctx, end := context.WithCancelCause(s.ctx)
	var l Lease
	var err error
	if r.WaitMS > 0 {
		w, ok := s.locker.(Waiter)
		if !ok {
			end(nil)
			return errorReply(r.ID, "error", fmt.Errorf("lockapi: a waiting acquire, and the Locker is no Waiter")), nil
		}
		l, err = w.AcquireWait(ctx, r.Key, r.ttl(), r.wait())
	} else {
		l, err = s.locker.Acquire(ctx, r.Key, r.ttl())
	}
	if err != nil {
		end(err)
		return failure(r, err), nil
	}
	h := &hold{lease: l, ctx: ctx, end: end}
	s.mu.Lock()
	if old, ok := s.holds[holdKey{l.Key, l.Owner}]; ok {
		old.end(ErrHoldEnded)
	}
	s.holds[holdKey{l.Key, l.Owner}] = h
	s.mu.Unlock()
	return s.granted(r.ID, l, received), h
}

// granted is the ok reply for lease l, received at received.
func (s *server) granted(id uint64, l Lease, received time.Time) reply {
	owner := l.Owner
	rep := reply{Type: "ok", ID: &id, Owner: &owner, Token: l.Token, Never: l.Never, Session: l.Session}
	if !l.Until.IsZero() {
		rep.UntilMS = s.msp(l.Until)
	}
	if !l.Never && !l.Expires.IsZero() {
		lease := max(0, float64(l.Expires.Sub(received))/float64(time.Millisecond))
		rep.LeaseMS = &lease
	}
	return rep
}

// release gives back the lease r names: the one Serve granted under its
// key and owner, else one made of r's key, owner and token. Once Release
// has returned, the hold's context ends with ErrHoldEnded.
func (s *server) release(r request) reply {
	h := s.held(r)
	err := s.locker.Release(s.ctx, h.lease)
	s.mu.Lock()
	if s.holds[holdKey{r.Key, r.Owner}] == h {
		delete(s.holds, holdKey{r.Key, r.Owner})
	}
	s.mu.Unlock()
	h.end(ErrHoldEnded)
	if err != nil {
		return failure(r, err)
	}
	id := r.ID
	return reply{Type: "ok", ID: &id}
}

// renew extends the lease r names.
func (s *server) renew(r request, received time.Time) (reply, *hold) {
	rn, ok := s.locker.(Renewer)
	if !ok {
		return errorReply(r.ID, "error", fmt.Errorf("lockapi: a renewal, and the Locker is no Renewer")), nil
	}
	h := s.held(r)
	l, err := rn.Renew(s.ctx, h.lease, r.ttl())
	if err != nil {
		return failure(r, err), nil
	}
	s.mu.Lock()
	if s.holds[holdKey{r.Key, r.Owner}] == h {
		delete(s.holds, holdKey{r.Key, r.Owner})
		h.lease = l
		s.holds[holdKey{l.Key, l.Owner}] = h
	}
	s.mu.Unlock()
	return s.granted(r.ID, l, received), h
}

// held is the hold r names: the one Serve granted, else one of r's key,
// owner and token whose context is already over.
func (s *server) held(r request) *hold {
	s.mu.Lock()
	h, ok := s.holds[holdKey{r.Key, r.Owner}]
	s.mu.Unlock()
	if ok {
		return h
	}
	ctx, end := context.WithCancelCause(s.ctx)
	end(ErrNotHeld)
	return &hold{lease: Lease{Key: r.Key, Owner: r.Owner, Token: r.Token}, ctx: ctx, end: end}
}

// watch sends a lost notice when a LeaseWatcher says h's lease is lost
// while h is still held.
func (s *server) watch(h *hold) {
	w, ok := s.locker.(LeaseWatcher)
	if !ok {
		return
	}
	lost := w.Lost(h.lease)
	go func() {
		select {
		case <-lost:
		case <-h.ctx.Done():
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.holds[holdKey{h.lease.Key, h.lease.Owner}] != h {
			return
		}
		if err := s.writeLocked(reply{Type: "lost", Key: h.lease.Key, Owner: &h.lease.Owner}); err != nil {
			fmt.Fprintf(os.Stderr, "%v\n", err)
		}
	}()
}
