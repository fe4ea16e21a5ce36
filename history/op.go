// Package history owns the record of a run: the Op type, the concurrent
// Recorder that stamps every op from one monotonic clock, the streaming JSON
// Lines writer, the decoder, and the well-formedness rules of a history.
//
// A history is a sequence of ops in recording order. Each op is an invoke or a
// completion (ok, fail, info) of one logical process; the nemesis is process
// -1. The format is docs/history.md; it never changes meaning between
// versions, so a stored history can be re-checked years later.
package history

import (
	"encoding/json"
	"strconv"
	"time"
)

// Type is the kind of an op: an invocation or one of the three completions.
type Type string

// The four op types. Fail means the operation certainly did not take effect;
// Info means it may or may not have, and the process is then considered
// crashed.
const (
	Invoke Type = "invoke"
	OK     Type = "ok"
	Fail   Type = "fail"
	Info   Type = "info"
)

// NemesisProcess is the process number of every op the nemesis records.
const NemesisProcess = -1

// NoLease is the Lease of a lock that the service never frees on its own.
const NoLease time.Duration = -1

// The f values that the workload records. Nemesis ops use the fault's name.
const (
	FAcquire   = "acquire"
	FRelease   = "release"
	FRenew     = "renew"
	FRead      = "read"
	FWrite     = "write"
	FLeaseLost = "lease-lost"
)

// Op is one line of a history. Times are durations since the run started, on
// the harness's monotonic clock; a zero TTL, Until, Lease, Token or Applied, a
// false Session or Kept, a nil Due, and an empty Heal, Class, Key, Value, Node
// or Error, are absent from the JSON encoding. Client is written for every op of a worker and omitted for
// nemesis ops.
//
// Lease is the server-side lease of an acquire ok or renew ok, counted from
// that op's invoke: the shortest time after which the service may free the
// lock on its own (NoLease when it never does). Session is true on an acquire
// ok when closing the client frees the lock.
//
// Heal and Class are written on a fault op of the nemesis (format version 6
// on): Heal is the f of the heal op that ends the fault, empty for a moment
// (a fault that acts at once and has no heal); Class is the fault's class
// (FaultClass). Readers take both through FaultOf, which in a history of an
// earlier version, whose ops have neither, reads them from the fault's name.
//
// Due is written on a nemesis fault or heal op (format version 7 on) whose
// step did not run as written: the harness time at which its schedule said
// it was due. On a fail op the step was never reached before the run ended
// (NotRun); on an info op the fault or heal took effect late (docs/history.md
// §1, "Steps that did not run as written"). Nil when absent; a step due at 0
// has a Due of 0.
//
// Kept is true on an info when the worker kept its lock client after it (the
// scenario's lock.on-error: keep-client, an application that logs the error
// and calls again on the same connection): the process ends as every info
// ends it, but its client, and every session of that client, lives on under
// the worker's next process until a later crash closes it.
type Op struct {
	Index   int             `json:"index"`
	Time    time.Duration   `json:"time"`
	Process int             `json:"process"`
	Client  int             `json:"client"`
	Type    Type            `json:"type"`
	F       string          `json:"f"`
	Heal    string          `json:"heal,omitempty"`
	Class   FaultClass      `json:"class,omitempty"`
	Due     *time.Duration  `json:"due,omitempty"`
	Key     string          `json:"key,omitempty"`
	TTL     time.Duration   `json:"ttl,omitempty"`
	Until   time.Duration   `json:"until,omitempty"`
	Lease   time.Duration   `json:"lease,omitempty"`
	Session bool            `json:"session,omitempty"`
	Kept    bool            `json:"kept,omitempty"`
	Token   uint64          `json:"token,omitempty"`
	Value   json.RawMessage `json:"value,omitempty"`
	Applied time.Duration   `json:"applied,omitempty"`
	Node    string          `json:"node,omitempty"`
	Error   string          `json:"error,omitempty"`
}

// IsNemesis reports whether the op was recorded by the nemesis.
func (o Op) IsNemesis() bool { return o.Process == NemesisProcess }

// NotRun reports whether the nemesis op o records a step of the schedule
// that was never reached before the run ended: a fail op with a Due.
func (o Op) NotRun() bool { return o.IsNemesis() && o.Type == Fail && o.Due != nil }

// LateBy returns how long after its Due the nemesis op o, a fault or heal
// that took effect late, took effect (its time less its Due), and whether
// it is one: an op other than fail with a Due.
func (o Op) LateBy() (time.Duration, bool) {
	if !o.IsNemesis() || o.Type == Fail || o.Due == nil {
		return 0, false
	}
	return o.Time - *o.Due, true
}

// IsInvoke reports whether the op is an invocation.
func (o Op) IsInvoke() bool { return o.Type == Invoke }

// Int returns the op's value as an integer and whether it is one.
func (o Op) Int() (int64, bool) {
	if len(o.Value) == 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(string(o.Value), 10, 64)
	return n, err == nil
}

// IntValue encodes n as an op value.
func IntValue(n int64) json.RawMessage {
	return json.RawMessage(strconv.AppendInt(nil, n, 10))
}

// JSONValue encodes v as an op value; a value that cannot be encoded becomes
// its quoted Go representation, so recording never fails.
func JSONValue(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(err.Error())
	}
	return b
}

// History is a sequence of ops in recording order.
type History []Op
