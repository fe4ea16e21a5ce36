package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/rs/zerolog"
)

// ErrNoLink reports that a link name is not known to the Network.
var ErrNoLink = errors.New("cluster: no such link")

// ErrNetworkClosed reports a use of a Network after Close.
var ErrNetworkClosed = errors.New("cluster: network closed")

// LinkSeparator separates the two ends of a link name: "w3->n1" is worker 3's
// link to node n1, "n2->n1" is node n2's link to node n1. When one pair of
// ends needs several links (a ZooKeeper server reaches a peer on a quorum
// port and an election port), the extra ones carry a purpose after
// LinkPurposeSeparator: "n2->n1/election".
const LinkSeparator = "->"

// LinkPurposeSeparator separates a link's "to" end from its purpose.
const LinkPurposeSeparator = "/"

// LinkName returns the conventional name of the link from one end to another,
// for instance LinkName("w3", "n1") == "w3->n1".
func LinkName(from, to string) string { return from + LinkSeparator + to }

// SplitLinkName returns the two ends of a link name, without the purpose
// ("n2->n1/election" gives "n2", "n1"); ok is false when the name does not
// follow the "from->to" convention.
func SplitLinkName(name string) (from, to string, ok bool) {
	from, to, ok = strings.Cut(name, LinkSeparator)
	to, _, _ = strings.Cut(to, LinkPurposeSeparator)
	return from, to, ok
}

// FaultKind names what a Fault does to a link.
type FaultKind string

// The fault kinds a Network can apply.
const (
	// FaultCut holds every connection of the link open and silently drops
	// the data flowing in both directions, as a cut cable would; new
	// connections are accepted and then hang the same way. Healing closes
	// the connections that lived through the cut (their streams lost data).
	FaultCut FaultKind = "cut"
	// FaultReset resets (TCP RST) every connection of the link as soon as
	// data flows on it, until healed.
	FaultReset FaultKind = "reset"
	// FaultLatency delays the data the upstream sends back (replies) by
	// Delay ± Jitter, so a request/reply round trip gains about Delay.
	FaultLatency FaultKind = "latency"
)

// Fault is a network fault applied to a set of links until healed.
type Fault struct {
	Kind   FaultKind
	Delay  time.Duration // FaultLatency: the added delay
	Jitter time.Duration // FaultLatency: the random variation of the delay
}

// toxicPrefix marks the toxics this package adds, so Heal removes exactly those.
const toxicPrefix = "jepsen-lite-"

// toxicSpec is one toxiproxy toxic in the JSON form toxiproxy parses.
type toxicSpec struct {
	Name       string         `json:"name"`
	Type       string         `json:"type"`
	Stream     string         `json:"stream"`
	Toxicity   float32        `json:"toxicity"`
	Attributes map[string]any `json:"attributes"`
}

// toxics returns the toxiproxy toxics that implement the fault.
func (f Fault) toxics() ([]toxicSpec, error) {
	both := func(typ string, attrs map[string]any) []toxicSpec {
		var out []toxicSpec
		for _, stream := range []string{"upstream", "downstream"} {
			out = append(out, toxicSpec{
				Name: toxicPrefix + typ + "-" + stream, Type: typ, Stream: stream,
				Toxicity: 1, Attributes: attrs,
			})
		}
		return out
	}
	switch f.Kind {
	case FaultCut:
		// A timeout toxic with timeout 0 drops all data and never closes.
		return both("timeout", map[string]any{"timeout": 0}), nil
	case FaultReset:
		return both("reset_peer", map[string]any{"timeout": 0}), nil
	case FaultLatency:
		if f.Delay < 0 || f.Jitter < 0 {
			return nil, fmt.Errorf("cluster: latency fault with negative delay %v or jitter %v", f.Delay, f.Jitter)
		}
		return []toxicSpec{{
			Name: toxicPrefix + "latency-downstream", Type: "latency", Stream: "downstream", Toxicity: 1,
			Attributes: map[string]any{"latency": f.Delay.Milliseconds(), "jitter": f.Jitter.Milliseconds()},
		}}, nil
	default:
		return nil, fmt.Errorf("cluster: unknown fault kind %q", f.Kind)
	}
}

// Network is the proxied network of a cluster: one TCP proxy per link
// (client to node, node to node), embedded in the harness process, through
// which faults are injected. Its methods are safe for concurrent use.
type Network struct {
	mu      sync.Mutex
	server  *toxiproxy.ApiServer
	proxies map[string]*toxiproxy.Proxy
	closed  bool
}

// NewNetwork returns an empty Network with toxiproxy's logging silenced.
func NewNetwork() (*Network, error) {
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	return &Network{server: server, proxies: map[string]*toxiproxy.Proxy{}}, nil
}

// Link starts a proxy named name that listens on 127.0.0.1 on a free port and
// forwards to upstream, and returns the address it listens on. Names are
// unique; by convention they are LinkName(from, to).
func (n *Network) Link(name, upstream string) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return "", ErrNetworkClosed
	}
	if name == "" || upstream == "" {
		return "", fmt.Errorf("cluster: link needs a name and an upstream (got %q, %q)", name, upstream)
	}
	if _, ok := n.proxies[name]; ok {
		return "", fmt.Errorf("cluster: link %q already exists", name)
	}
	p := toxiproxy.NewProxy(n.server, name, "127.0.0.1:0", upstream)
	if err := n.server.Collection.Add(p, true); err != nil {
		return "", fmt.Errorf("cluster: start link %q: %w", name, err)
	}
	n.proxies[name] = p
	return p.Listen, nil
}

// Addr returns the address the link listens on, or "" for an unknown link.
func (n *Network) Addr(name string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if p, ok := n.proxies[name]; ok {
		p.Lock()
		defer p.Unlock()
		return p.Listen
	}
	return ""
}

// Upstream returns the address the link forwards to, or "" for an unknown link.
func (n *Network) Upstream(name string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if p, ok := n.proxies[name]; ok {
		p.Lock()
		defer p.Unlock()
		return p.Upstream
	}
	return ""
}

// SetUpstream points the link at a new upstream, keeping its listening
// address and its faults. Existing connections are closed; new ones go to
// the new upstream.
func (n *Network) SetUpstream(name, upstream string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	p, err := n.proxy(name)
	if err != nil {
		return err
	}
	p.Lock()
	listen := p.Listen
	p.Unlock()
	in := &toxiproxy.Proxy{Name: name, Listen: listen, Upstream: upstream, Enabled: true}
	if err := p.Update(in); err != nil {
		return fmt.Errorf("cluster: set upstream of link %q to %s: %w", name, upstream, err)
	}
	return nil
}

// Remove stops the link and forgets it.
func (n *Network) Remove(name string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, err := n.proxy(name); err != nil {
		return err
	}
	delete(n.proxies, name)
	if err := n.server.Collection.Remove(name); err != nil {
		return fmt.Errorf("cluster: remove link %q: %w", name, err)
	}
	return nil
}

// Links returns the names of all links, sorted.
func (n *Network) Links() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]string, 0, len(n.proxies))
	for name := range n.proxies {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// LinksFrom returns the sorted names of the links whose "from" end is from
// (LinksFrom("w3") gives "w3->n1", "w3->n2", ...).
func (n *Network) LinksFrom(from string) []string {
	var out []string
	for _, name := range n.Links() {
		if f, _, ok := SplitLinkName(name); ok && f == from {
			out = append(out, name)
		}
	}
	return out
}

// LinksTo returns the sorted names of the links whose "to" end is node
// (LinksTo("n1") gives "n2->n1", "w1->n1", ...).
func (n *Network) LinksTo(node string) []string {
	var out []string
	for _, name := range n.Links() {
		if _, t, ok := SplitLinkName(name); ok && t == node {
			out = append(out, name)
		}
	}
	return out
}

// Apply applies the fault to every named link. A fault of a kind already
// applied to a link replaces it (latency) or stays as it is (cut, reset).
// Unknown names are an error and nothing is applied then.
func (n *Network) Apply(f Fault, names ...string) error {
	specs, err := f.toxics()
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	var ps []*toxiproxy.Proxy
	for _, name := range names {
		p, err := n.proxy(name)
		if err != nil {
			return err
		}
		ps = append(ps, p)
	}
	for i, p := range ps {
		for _, s := range specs {
			if p.Toxics.GetToxic(s.Name) != nil {
				if f.Kind != FaultLatency {
					continue
				}
				if err := p.Toxics.RemoveToxic(context.Background(), s.Name); err != nil {
					return fmt.Errorf("cluster: replace %s on link %q: %w", f.Kind, names[i], err)
				}
			}
			body, err := json.Marshal(s)
			if err != nil {
				return fmt.Errorf("cluster: encode toxic: %w", err)
			}
			if _, err := p.Toxics.AddToxicJson(bytes.NewReader(body)); err != nil {
				return fmt.Errorf("cluster: apply %s to link %q: %w", f.Kind, names[i], err)
			}
		}
	}
	return nil
}

// Cut partitions the named links: connections stay open, data is dropped.
func (n *Network) Cut(names ...string) error { return n.Apply(Fault{Kind: FaultCut}, names...) }

// Reset makes the named links reset their connections as soon as data flows.
func (n *Network) Reset(names ...string) error { return n.Apply(Fault{Kind: FaultReset}, names...) }

// Latency delays the replies on the named links by delay ± jitter.
func (n *Network) Latency(names []string, delay, jitter time.Duration) error {
	return n.Apply(Fault{Kind: FaultLatency, Delay: delay, Jitter: jitter}, names...)
}

// Heal removes every fault this package applied to the named links.
func (n *Network) Heal(names ...string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	var errs []error
	for _, name := range names {
		p, err := n.proxy(name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, heal(p))
	}
	return errors.Join(errs...)
}

// HealAll removes every fault this package applied, from every link.
func (n *Network) HealAll() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	var errs []error
	for _, p := range n.proxies {
		errs = append(errs, heal(p))
	}
	return errors.Join(errs...)
}

// Faulty returns the sorted names of the links that currently carry a fault.
func (n *Network) Faulty() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for name, p := range n.proxies {
		if len(ourToxics(p)) > 0 {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// Close stops and removes every link; no listening port remains. It is safe
// to call more than once.
func (n *Network) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil
	}
	n.closed = true
	n.proxies = map[string]*toxiproxy.Proxy{}
	if err := n.server.Collection.Clear(); err != nil {
		return fmt.Errorf("cluster: close network: %w", err)
	}
	return nil
}

// proxy returns the named proxy; the caller holds n.mu.
func (n *Network) proxy(name string) (*toxiproxy.Proxy, error) {
	if n.closed {
		return nil, ErrNetworkClosed
	}
	p, ok := n.proxies[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrNoLink, name)
	}
	return p, nil
}

// ourToxics returns the names of the toxics this package added to p.
func ourToxics(p *toxiproxy.Proxy) []string {
	var out []string
	for _, t := range p.Toxics.GetToxicArray() {
		if w, ok := t.(*toxics.ToxicWrapper); ok && strings.HasPrefix(w.Name, toxicPrefix) {
			out = append(out, w.Name)
		}
	}
	return out
}

// heal removes this package's toxics from p.
func heal(p *toxiproxy.Proxy) error {
	var errs []error
	for _, name := range ourToxics(p) {
		if err := p.Toxics.RemoveToxic(context.Background(), name); err != nil {
			errs = append(errs, fmt.Errorf("cluster: heal link %q: %w", p.Name, err))
		}
	}
	return errors.Join(errs...)
}
