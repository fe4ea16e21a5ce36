package clients

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ErrBadOption reports an algorithm option that is unknown to the algorithm or
// whose value cannot be parsed.
var ErrBadOption = errors.New("clients: bad option")

// optionReader reads an algorithm's options from Target.Options, remembering
// which names the algorithm knows so that a misspelt option is an error rather
// than silently ignored.
type optionReader struct {
	algorithm string
	options   map[string]string
	known     []string
	err       error
}

func newOptionReader(algorithm string, options map[string]string) *optionReader {
	return &optionReader{algorithm: algorithm, options: options}
}

func (r *optionReader) fail(name, value string, err error) {
	if r.err == nil {
		r.err = fmt.Errorf("clients: %s: option %s=%q: %w: %v", r.algorithm, name, value, ErrBadOption, err)
	}
}

// duration reads a positive Go duration ("50ms", "2s").
func (r *optionReader) duration(name string, def time.Duration) time.Duration {
	r.known = append(r.known, name)
	v, ok := r.options[name]
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		r.fail(name, v, err)
		return def
	}
	if d < 0 {
		r.fail(name, v, errors.New("must not be negative"))
		return def
	}
	return d
}

// positiveInt reads an integer of at least 1.
func (r *optionReader) positiveInt(name string, def int) int {
	r.known = append(r.known, name)
	v, ok := r.options[name]
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		r.fail(name, v, err)
		return def
	}
	if n < 1 {
		r.fail(name, v, errors.New("must be at least 1"))
		return def
	}
	return n
}

// fraction reads a float in [0, 1).
func (r *optionReader) fraction(name string, def float64) float64 {
	r.known = append(r.known, name)
	v, ok := r.options[name]
	if !ok {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		r.fail(name, v, err)
		return def
	}
	if f < 0 || f >= 1 {
		r.fail(name, v, errors.New("must be in [0, 1)"))
		return def
	}
	return f
}

// str reads a non-empty string.
func (r *optionReader) str(name, def string) string {
	r.known = append(r.known, name)
	v, ok := r.options[name]
	if !ok {
		return def
	}
	if v == "" {
		r.fail(name, v, errors.New("must not be empty"))
		return def
	}
	return v
}

// done returns the first parse error, or an error naming an option the
// algorithm does not know.
func (r *optionReader) done() error {
	if r.err != nil {
		return r.err
	}
	var unknown []string
	for name := range r.options {
		if !slices.Contains(r.known, name) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		known := slices.Clone(r.known)
		slices.Sort(known)
		if len(known) == 0 {
			known = []string{"none"}
		}
		return fmt.Errorf("clients: %s: %w: unknown %s (known: %s)", r.algorithm, ErrBadOption,
			strings.Join(unknown, ", "), strings.Join(known, ", "))
	}
	return nil
}

// ownerValues makes the random values that identify one acquisition. They
// come from the worker's own source so that a run replays from its seed.
type ownerValues struct {
	worker int
	rand   *rand.Rand
}

func newOwnerValues(algorithm string, t Target) (ownerValues, error) {
	if t.Rand == nil {
		return ownerValues{}, fmt.Errorf("clients: %s: target has no random source", algorithm)
	}
	return ownerValues{worker: t.Worker, rand: t.Rand}, nil
}

// next returns a fresh value such as "w3-9f1c2a7d0b3e4f55a1b2c3d4e5f60718".
func (o ownerValues) next() string {
	return fmt.Sprintf("w%d-%016x%016x", o.worker, o.rand.Uint64(), o.rand.Uint64())
}

// redisPrimaryTarget reads the one option of a single-node Redis client,
// "timeout" (per request, DefaultRedisTimeout by default), and returns it
// with the target's primary endpoint. Options are read first, so that
// CheckOptions, whose target has no endpoints, sees a bad option.
func redisPrimaryTarget(name string, t Target) (Endpoint, time.Duration, error) {
	opts := newOptionReader(name, t.Options)
	timeout := opts.duration("timeout", DefaultRedisTimeout)
	if err := opts.done(); err != nil {
		return Endpoint{}, 0, err
	}
	ep, err := primaryEndpoint(name, t.Endpoints)
	return ep, timeout, err
}

// primaryEndpoint returns the first endpoint whose role is "primary", or else
// the first endpoint.
func primaryEndpoint(algorithm string, eps []Endpoint) (Endpoint, error) {
	if len(eps) == 0 {
		return Endpoint{}, fmt.Errorf("clients: %s: target has no endpoints", algorithm)
	}
	for _, ep := range eps {
		if ep.Role == "primary" {
			return ep, nil
		}
	}
	return eps[0], nil
}

// peerEndpoints returns every endpoint that is not a sentinel or replica: the
// masters of a Redlock, the members of an ensemble.
func peerEndpoints(algorithm string, eps []Endpoint) ([]Endpoint, error) {
	var peers []Endpoint
	for _, ep := range eps {
		if ep.Role == "sentinel" || ep.Role == "replica" {
			continue
		}
		peers = append(peers, ep)
	}
	if len(peers) == 0 {
		return nil, fmt.Errorf("clients: %s: target has no primary or peer endpoints", algorithm)
	}
	return peers, nil
}

// validUntil is start + ttl − drift: the client-side end of a lease whose
// clock started before the acquire request was sent.
func validUntil(start time.Time, ttl, drift time.Duration) time.Time {
	return start.Add(ttl - drift)
}

// CheckOptions checks options against the algorithm called algorithm (a
// lock algorithm or a queue implementation: their names are distinct), as
// its factory will when the run starts: an unknown option, or a value that
// does not parse or is out of range, is an error wrapping ErrBadOption (an
// unknown algorithm, one wrapping ErrUnknownAlgorithm). It starts nothing
// and connects to nothing: every factory reads its options before it looks
// at its target's endpoints, so it is called with a target that has none.
func CheckOptions(algorithm string, options map[string]string) error {
	t := Target{Options: options, Rand: rand.New(rand.NewPCG(0, 0)), Clock: wallClock{}}
	var err error
	if alg, lerr := Lookup(algorithm); lerr == nil {
		var l Locker
		if l, err = alg.New(context.Background(), t); err == nil {
			_ = l.Close() // not reached by the factories of Algorithms
		}
	} else if q, qerr := LookupQueue(algorithm); qerr == nil {
		var c Queue
		if c, err = q.New(context.Background(), t); err == nil {
			_ = c.Close() // not reached by the factories of QueueAlgorithms
		}
	} else {
		return lerr
	}
	if errors.Is(err, ErrBadOption) {
		return err
	}
	return nil
}

// wallClock is a worker clock without skew. CheckOptions hands it to the
// factories that need a clock; none reads it before failing for want of
// endpoints.
type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }
