package linknet

import (
	"errors"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
)

// faultLog is a Faulter that records the calls it gets; the links of one
// fault call their Faulters at once (eachRemote).
type faultLog struct {
	mu    sync.Mutex
	calls []string
}

// Fault records the call as "forward on", "back off", ...
func (f *faultLog) Fault(dir Direction, on bool) error {
	f.record("", dir, on)
	return nil
}

// record records a call, its kind (what) first.
func (f *faultLog) record(what string, dir Direction, on bool) {
	state := "off"
	if on {
		state = "on"
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, what+string(dir)+" "+state)
}

// resetLog is a Faulter and Resetter that records the calls it gets.
type resetLog struct{ faultLog }

// Reset records the call as "reset forward on", ...
func (r *resetLog) Reset(dir Direction, on bool) error {
	r.record("reset ", dir, on)
	return nil
}

// take returns the calls recorded since the last take.
func (f *faultLog) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.calls
	f.calls = nil
	return out
}

// TestLinkOnFaults checks that the cuts of a link between two other hosts
// go to its Faulter, once per direction, that heals, HealAll and Remove
// take back exactly what is on, and that what it cannot carry (reset,
// latency, a new upstream) is refused: a reset, unless the Faulter is a
// Resetter.
func TestLinkOnFaults(t *testing.T) {
	n, err := New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	log := &faultLog{}
	addr, err := n.LinkOn("n2->n1", "10.9.9.1:6379", log)
	if err != nil || addr != "10.9.9.1:6379" || n.Addr("n2->n1") != addr {
		t.Fatalf("LinkOn = %q, %v; Addr %q", addr, err, n.Addr("n2->n1"))
	}
	steps := []struct {
		do   func() error
		want []string
	}{
		{func() error { return n.Apply(Fault{Kind: FaultCut, Direction: DirectionForward}, "n2->n1") }, []string{"forward on"}},
		{func() error { return n.Cut("n2->n1") }, []string{"back on"}},
		{func() error { return n.Heal("n2->n1") }, []string{"forward off", "back off"}},
		{func() error { return n.Apply(Fault{Kind: FaultCut, Direction: DirectionBack}, "n2->n1") }, []string{"back on"}},
		{func() error { return n.HealAll() }, []string{"back off"}},
		{func() error { return n.Cut("n2->n1") }, []string{"forward on", "back on"}},
		{func() error { return n.Remove("n2->n1") }, []string{"forward off", "back off"}},
	}
	for i, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := log.take(); !slices.Equal(got, s.want) {
			t.Errorf("step %d: Faulter got %v, want %v", i, got, s.want)
		}
	}
	if _, err := n.LinkOn("n3->n1", "10.9.9.1:6379", log); err != nil {
		t.Fatal(err)
	}
	if err := n.Reset("n3->n1"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Reset of a link between hosts: %v, want ErrUnavailable", err)
	}
	if err := n.SetUpstream("n3->n1", "10.9.9.2:6379"); err == nil {
		t.Error("SetUpstream of a link between hosts succeeded")
	}
	if got := log.take(); len(got) != 0 {
		t.Errorf("refused faults reached the Faulter: %v", got)
	}
}

// TestLinkOnResets checks that the resets of a link between two other
// hosts go to its Faulter's Reset, once per direction, beside its cuts,
// and that heals, HealAll and Remove take back exactly what is on.
func TestLinkOnResets(t *testing.T) {
	n, err := New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	log := &resetLog{}
	if _, err := n.LinkOn("n2->n1", "10.9.9.1:6379", log); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		do   func() error
		want []string
	}{
		{func() error { return n.Apply(Fault{Kind: FaultReset, Direction: DirectionForward}, "n2->n1") }, []string{"reset forward on"}},
		{func() error { return n.Reset("n2->n1") }, []string{"reset back on"}},
		{func() error { return n.Cut("n2->n1") }, []string{"forward on", "back on"}},
		{func() error { return n.Heal("n2->n1") }, []string{"forward off", "back off", "reset forward off", "reset back off"}},
		{func() error { return n.Apply(Fault{Kind: FaultReset, Direction: DirectionBack}, "n2->n1") }, []string{"reset back on"}},
		{func() error { return n.HealAll() }, []string{"reset back off"}},
		{func() error { return n.Reset("n2->n1") }, []string{"reset forward on", "reset back on"}},
		{func() error { return n.Remove("n2->n1") }, []string{"reset forward off", "reset back off"}},
	}
	for i, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := log.take(); !slices.Equal(got, s.want) {
			t.Errorf("step %d: Faulter got %v, want %v", i, got, s.want)
		}
	}
}

// endLog is an EndCloser that records the ends it is given.
type endLog struct{ ends []End }

// CloseEnds records the ends.
func (e *endLog) CloseEnds(ends []End) error {
	e.ends = append(e.ends, ends...)
	return nil
}

// TestAwayLinkResetSets checks that a reset of a link whose target is on
// another host is refused without an EndCloser, and otherwise puts the
// link's mark in the resets' sets of such links (whose rules answer in
// the output hook and record what they answer), not in those of the
// links on this host, and that the heal takes it out.
func TestAwayLinkResetSets(t *testing.T) {
	n, err := New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	if _, err := n.Link("w1->n1", "10.9.9.1:6379"); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Link("w1->n2", "127.0.0.1:6379"); err != nil {
		t.Fatal(err)
	}
	if err := n.Reset("w1->n1"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Reset of a link to another host without an EndCloser: %v, want ErrUnavailable", err)
	}
	n.SetEndCloser(&endLog{})
	if err := n.Apply(Fault{Kind: FaultReset, Direction: DirectionForward}, "w1->n1", "w1->n2"); err != nil {
		t.Fatal(err)
	}
	n.mu.Lock()
	away, here := n.links["w1->n1"].mark(), n.links["w1->n2"].mark()
	n.mu.Unlock()
	sets := func() map[string]string {
		out := map[string]string{}
		for _, set := range []string{"reset_forward", "reset_away_forward", "reset_back", "reset_away_back"} {
			b, err := exec.Command("nft", "list", "set", "ip", n.Table(), set).Output()
			if err != nil {
				t.Fatal(err)
			}
			out[set] = string(b)
		}
		return out
	}
	got := sets()
	for set, want := range map[string]string{"reset_away_forward": away, "reset_forward": here} {
		if !strings.Contains(got[set], want) {
			t.Errorf("%s lacks %s:\n%s", set, want, got[set])
		}
	}
	for set, not := range map[string]string{"reset_away_forward": here, "reset_forward": away, "reset_back": away, "reset_away_back": away} {
		if strings.Contains(got[set], not) {
			t.Errorf("%s holds %s:\n%s", set, not, got[set])
		}
	}
	if err := n.Heal("w1->n1", "w1->n2"); err != nil {
		t.Fatal(err)
	}
	for set, listing := range sets() {
		if strings.Contains(listing, away) || strings.Contains(listing, here) {
			t.Errorf("%s after the heal:\n%s", set, listing)
		}
	}
}

// TestRemoveExisting checks that RemoveExisting removes the links that
// exist, skips a name without one, and does nothing on a nil or closed
// Network, while Remove calls an unknown name an error.
func TestRemoveExisting(t *testing.T) {
	var none *Network
	if err := none.RemoveExisting("n2->n1"); err != nil {
		t.Errorf("RemoveExisting on a nil Network = %v, want nil", err)
	}
	n, err := New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	log := &faultLog{}
	for _, name := range []string{"n2->n1", "n3->n1"} {
		if _, err := n.LinkOn(name, "10.9.9.1:6379", log); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.Cut("n2->n1"); err != nil {
		t.Fatal(err)
	}
	log.take()
	if err := n.RemoveExisting("gone", "n2->n1"); err != nil {
		t.Errorf("RemoveExisting(gone, n2->n1) = %v, want nil", err)
	}
	if got := log.take(); !slices.Equal(got, []string{"forward off", "back off"}) && !slices.Equal(got, []string{"back off", "forward off"}) {
		t.Errorf("RemoveExisting took back %v, want both directions of the cut", got)
	}
	if n.Addr("n2->n1") != "" || n.Addr("n3->n1") == "" {
		t.Errorf("after RemoveExisting: n2->n1 at %q, n3->n1 at %q; want the first gone, the second kept", n.Addr("n2->n1"), n.Addr("n3->n1"))
	}
	if err := n.Remove("gone", "n3->n1"); !errors.Is(err, ErrNoLink) || n.Addr("n3->n1") != "" {
		t.Errorf("Remove(gone, n3->n1) = %v, n3->n1 at %q; want ErrNoLink and the link removed", err, n.Addr("n3->n1"))
	}
	n.Close()
	if err := n.RemoveExisting("n3->n1"); err != nil {
		t.Errorf("RemoveExisting on a closed Network = %v, want nil", err)
	}
}
