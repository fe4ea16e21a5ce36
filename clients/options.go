package clients

import (
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

// Option is one option an algorithm reads from Target.Options, declared once:
// its name, its default, what it does and the rule its value must follow.
// An algorithm's declaration lists its options (Algorithm.Options), and its
// factory reads each value through the same Option (readOptions), so that
// validation, `jepsen-lite list --algorithms` and the factory agree.
type Option struct {
	Name string
	// Default is the value when the option is absent, as a user writes it;
	// empty when the option is required.
	Default string
	Doc     string
	// check returns why value breaks the option's rule, or nil.
	check func(value string) error
	kind  optionKind
}

// optionKind is how an option's value is read.
type optionKind uint8

const (
	textOption optionKind = iota
	durationOption
	fractionOption
)

// Required reports whether the option has no default and must be given.
func (o Option) Required() bool { return o.Default == "" }

// durationOpt declares an option whose value is a Go duration ("50ms",
// "2s") that is not negative.
func durationOpt(name string, def time.Duration, doc string) Option {
	return Option{Name: name, Default: def.String(), Doc: doc, kind: durationOption, check: func(v string) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			return err
		}
		if d < 0 {
			return errors.New("must not be negative")
		}
		return nil
	}}
}

// fractionOpt declares an option whose value is a number in [0, 1).
func fractionOpt(name string, def float64, doc string) Option {
	return Option{Name: name, Default: strconv.FormatFloat(def, 'g', -1, 64), Doc: doc, kind: fractionOption, check: func(v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return err
		}
		if f < 0 || f >= 1 {
			return errors.New("must be in [0, 1)")
		}
		return nil
	}}
}

// textOpt declares an option whose value is text that is not blank and,
// when choices are given, one of them. An empty def makes it required.
func textOpt(name, def, doc string, choices ...string) Option {
	return Option{Name: name, Default: def, Doc: doc, kind: textOption, check: func(v string) error {
		if strings.TrimSpace(v) == "" {
			return errors.New("must not be empty")
		}
		if len(choices) > 0 && !slices.Contains(choices, v) {
			return fmt.Errorf("must be %s", strings.Join(quoted(choices), " or "))
		}
		return nil
	}}
}

func quoted(s []string) []string {
	var out []string
	for _, v := range s {
		out = append(out, strconv.Quote(v))
	}
	return out
}

// options are an algorithm's option values, checked against its declared
// options by readOptions, defaults filled in.
type options struct {
	algorithm string
	values    map[string]string
}

// readOptions checks given against declared, the options of algorithm: a
// required option that is missing, an option whose value breaks its rule or,
// unless others is set (the options are handed on to an external client), an
// option that is not declared is an error wrapping ErrBadOption. It returns
// the values of the declared options, defaults filled in.
func readOptions(algorithm string, given map[string]string, declared []Option, others bool) (options, error) {
	o := options{algorithm: algorithm, values: map[string]string{}}
	var known []string
	for _, d := range declared {
		known = append(known, d.Name)
		v, ok := given[d.Name]
		if !ok {
			if d.Required() {
				return o, fmt.Errorf("clients: %s: %w: %s is required: %s", algorithm, ErrBadOption, d.Name, d.Doc)
			}
			v = d.Default
		} else if err := d.check(v); err != nil {
			return o, fmt.Errorf("clients: %s: option %s=%q: %w: %v", algorithm, d.Name, v, ErrBadOption, err)
		}
		o.values[d.Name] = v
	}
	if others {
		return o, nil
	}
	var unknown []string
	for name := range given {
		if !slices.Contains(known, name) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		slices.Sort(known)
		if len(known) == 0 {
			known = []string{"none"}
		}
		return o, fmt.Errorf("clients: %s: %w: unknown %s (known: %s)", algorithm, ErrBadOption,
			strings.Join(unknown, ", "), strings.Join(known, ", "))
	}
	return o, nil
}

// value returns the checked value of opt; an option the algorithm did not
// declare is a fault of its factory, which every algorithm's tests run.
func (o options) value(opt Option, kind optionKind) string {
	v, ok := o.values[opt.Name]
	if !ok || opt.kind != kind {
		panic(fmt.Sprintf("clients: %s reads option %s, which its declaration does not list as one of that kind", o.algorithm, opt.Name))
	}
	return v
}

// duration returns the value of a duration option (durationOpt).
func (o options) duration(opt Option) time.Duration {
	d, _ := time.ParseDuration(o.value(opt, durationOption)) // checked by readOptions
	return d
}

// fraction returns the value of a fraction option (fractionOpt).
func (o options) fraction(opt Option) float64 {
	f, _ := strconv.ParseFloat(o.value(opt, fractionOption), 64) // checked by readOptions
	return f
}

// text returns the value of a text option (textOpt).
func (o options) text(opt Option) string { return o.value(opt, textOption) }

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

// redisPrimaryTarget reads the options of a single-node Redis client
// (redisNodeOptions) and returns its timeout with the target's primary
// endpoint.
func redisPrimaryTarget(name string, t Target) (Endpoint, time.Duration, error) {
	opts, err := readOptions(name, t.Options, redisNodeOptions, false)
	if err != nil {
		return Endpoint{}, 0, err
	}
	timeout := opts.duration(optRedisTimeout)
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

// CheckOptions checks options against the declared options of the
// algorithm called algorithm (a lock algorithm or a queue implementation:
// their names are distinct), as its factory will when the run starts: a
// missing required option, an unknown option, or a value that does not parse
// or is out of range, is an error wrapping ErrBadOption (an unknown
// algorithm, one wrapping ErrUnknownAlgorithm). It starts nothing and
// connects to nothing.
func CheckOptions(algorithm string, given map[string]string) error {
	if alg, err := Lookup(algorithm); err == nil {
		_, err = readOptions(alg.Name, given, alg.Options, alg.OtherOptions != "")
		return err
	}
	q, err := LookupQueue(algorithm)
	if err != nil {
		_, lerr := Lookup(algorithm)
		return lerr
	}
	_, err = readOptions(q.Name, given, q.Options, q.OtherOptions != "")
	return err
}
