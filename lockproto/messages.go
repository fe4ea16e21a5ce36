// Package lockproto owns the lock-client protocol of docs/lock-protocol.md:
// its messages, a client process that speaks it (Process: start, init,
// requests and replies, pauses, crashes) and the conformance checks of
// `jepsen-lite protocol-test` (Conform). It knows nothing of the history or
// of the lock algorithms; the clients package's exec algorithm builds a
// Locker on a Process.
package lockproto

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Version is the protocol version this package speaks.
const Version = 1

// The abilities a client may claim in its init_ok (docs/lock-protocol.md §2).
const (
	AbilityRenew         = "renew"
	AbilityWait          = "wait"
	AbilityAfterResponse = "after-response"
	AbilityLost          = "lost"
	AbilityQueue         = "queue"
)

// Abilities lists every ability of the protocol, in the documented order.
var Abilities = []string{AbilityRenew, AbilityWait, AbilityAfterResponse, AbilityLost, AbilityQueue}

// The message types.
const (
	TypeInit          = "init"
	TypeInitOK        = "init_ok"
	TypeAcquire       = "acquire"
	TypeRelease       = "release"
	TypeRenew         = "renew"
	TypeSetup         = "setup"
	TypeCapture       = "capture"
	TypeSetStatus     = "set-status"
	TypeReap          = "reap"
	TypeOK            = "ok"
	TypeNotAcquired   = "not-acquired"
	TypeNotHeld       = "not-held"
	TypeNotCaptured   = "not-captured"
	TypeNoOp          = "no-op"
	TypeError         = "error"
	TypeLost          = "lost"
	TypeAfterResponse = "after-response"
	TypeContinue      = "continue"
)

// replies lists, per request type, the reply types a client may give.
var replies = map[string][]string{
	TypeAcquire:   {TypeOK, TypeNotAcquired, TypeError},
	TypeRelease:   {TypeOK, TypeNotHeld, TypeNoOp, TypeError},
	TypeRenew:     {TypeOK, TypeNotHeld, TypeError},
	TypeSetup:     {TypeOK, TypeError},
	TypeCapture:   {TypeOK, TypeNotCaptured, TypeError},
	TypeSetStatus: {TypeOK, TypeNotHeld, TypeError},
	TypeReap:      {TypeOK, TypeError},
}

// ErrProtocol reports a client that broke the protocol: a line that is not
// a message, a reply the request does not allow, a client that exited while
// it was needed or did not answer init. It gets no verdict, only an error
// (docs/lock-protocol.md §4).
var ErrProtocol = errors.New("lockproto: protocol error")

// Endpoint is one node as the client's worker reaches it.
type Endpoint struct {
	Name string `json:"name"`
	Role string `json:"role"`
	Addr string `json:"addr"`
}

// Init is the first message to every process.
type Init struct {
	Type      string            `json:"type"`
	Protocol  int               `json:"protocol"`
	Worker    int               `json:"worker"`
	Process   int               `json:"process"`
	System    string            `json:"system"`
	Endpoints []Endpoint        `json:"endpoints"`
	Options   map[string]string `json:"options"`
	Seed      uint64            `json:"seed,string"`
}

// Env returns the environment that says what init says
// (docs/lock-protocol.md §1, "Environment").
func (i Init) Env() []string {
	var eps []string
	for _, e := range i.Endpoints {
		eps = append(eps, e.Name+"="+e.Role+"@"+e.Addr)
	}
	opts, _ := json.Marshal(i.Options) // a map of strings always encodes
	return []string{
		"JEPSEN_LITE_PROTOCOL=" + strconv.Itoa(Version),
		"JEPSEN_LITE_SYSTEM=" + i.System,
		"JEPSEN_LITE_WORKER=" + strconv.Itoa(i.Worker),
		"JEPSEN_LITE_PROCESS=" + strconv.Itoa(i.Process),
		"JEPSEN_LITE_ENDPOINTS=" + strings.Join(eps, ","),
		"JEPSEN_LITE_OPTIONS=" + string(opts),
	}
}

// Request is every request but init; fields a type does not use are left
// out of its line.
type Request struct {
	Type      string     `json:"type"`
	ID        uint64     `json:"id"`
	Key       string     `json:"key,omitempty"`
	Owner     string     `json:"owner,omitempty"`
	Token     uint64     `json:"token,omitempty"`
	TTLMS     float64    `json:"ttl_ms,omitempty"`
	WaitMS    float64    `json:"wait_ms,omitempty"`
	Queue     string     `json:"queue,omitempty"`
	Limit     int        `json:"limit,omitempty"`
	Task      string     `json:"task,omitempty"`
	Status    string     `json:"status,omitempty"`
	Queues    []string   `json:"queues,omitempty"`
	TimeoutMS *float64   `json:"timeout_ms,omitempty"` // reap: present, 0 included
	Tasks     []TaskSpec `json:"tasks,omitempty"`
}

// TaskSpec is one task of a setup request.
type TaskSpec struct {
	Task   string `json:"task"`
	Queue  string `json:"queue"`
	Budget int    `json:"budget,omitempty"`
}

// Task is one task a capture returned.
type Task struct {
	Task        string `json:"task"`
	Queue       string `json:"queue"`
	Token       uint64 `json:"token,omitempty"`
	RetriesLeft *int   `json:"retries_left,omitempty"`
}

// Reply is a line from the client: a reply, an init_ok, a lost notice or
// an after-response handshake. Pointer fields are absent when nil.
type Reply struct {
	Type      string          `json:"type"`
	ID        *uint64         `json:"id"`
	NowMS     *float64        `json:"now_ms"`
	RecvMS    *float64        `json:"received_ms"`
	WallMS    *float64        `json:"wall_ms"`
	Client    string          `json:"client"`
	Abilities []string        `json:"abilities"`
	Owner     *string         `json:"owner"`
	Token     *uint64         `json:"token"`
	UntilMS   *float64        `json:"until_ms"`
	LeaseMS   *float64        `json:"lease_ms"`
	Session   bool            `json:"session"`
	Never     bool            `json:"never"`
	Key       string          `json:"key"`
	Message   string          `json:"message"`
	Tasks     json.RawMessage `json:"tasks"`
	// Unmarked is set by Process.Call on an acquire's ok from a client
	// that claimed after-response but sent no after-response before it: a
	// pause armed at that point could not stop it (docs/lock-protocol.md
	// §2, "The after-response handshake").
	Unmarked bool `json:"-"`
}

// parseLine decodes one line of the client's output. It checks what every
// line must have: one JSON object with a known type.
func parseLine(line []byte) (Reply, error) {
	r, fast := parseReplyFast(line)
	if !fast {
		var err error
		r, err = decodeReply(line)
		if err != nil {
			return r, err
		}
	}
	return checkType(r)
}

// decodeReply decodes line with encoding/json, giving errors a client's
// author can act on.
func decodeReply(line []byte) (Reply, error) {
	var r Reply
	if err := json.Unmarshal(line, &r); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &typ):
			return r, fmt.Errorf("field %s: want %s, got a JSON %s", typ.Field, typ.Type, typ.Value)
		case errors.As(err, &syn), len(line) == 0 || line[0] != '{':
			return r, errors.New("not a JSON object")
		default:
			return r, err
		}
	}
	return r, nil
}

// checkType checks that r has a type, and one the protocol knows.
func checkType(r Reply) (Reply, error) {
	switch r.Type {
	case "":
		return r, errors.New(`no "type"`)
	case TypeInitOK, TypeOK, TypeNotAcquired, TypeNotHeld, TypeNotCaptured, TypeNoOp, TypeError, TypeLost, TypeAfterResponse:
	default:
		return r, fmt.Errorf("unknown type %q", r.Type)
	}
	return r, nil
}

// checkReply checks that r answers req: the same id, a type the request
// allows, and the fields its type requires.
func checkReply(req Request, r Reply) error {
	if r.ID == nil {
		return fmt.Errorf(`%s reply has no "id" (the %s request's id is %d)`, r.Type, req.Type, req.ID)
	}
	if *r.ID != req.ID {
		return fmt.Errorf("%s reply has id %d, but the request in flight is %s id %d", r.Type, *r.ID, req.Type, req.ID)
	}
	if !slices.Contains(replies[req.Type], r.Type) {
		return fmt.Errorf("%q is no reply to %s (allowed: %v)", r.Type, req.Type, replies[req.Type])
	}
	if r.Type != TypeOK {
		return nil
	}
	switch req.Type {
	case TypeAcquire:
		if r.Owner == nil || *r.Owner == "" {
			return errors.New(`acquire ok has no "owner"`)
		}
		fallthrough
	case TypeRenew:
		if r.Token != nil && *r.Token == 0 {
			return errors.New(`"token" 0: a token is a positive integer; leave it out when the lock has none`)
		}
		if err := checkMS("until_ms", r.UntilMS); err != nil {
			return err
		}
		if err := checkMS("lease_ms", r.LeaseMS); err != nil {
			return err
		}
		if r.Never && r.LeaseMS != nil {
			return errors.New(`both "never" and "lease_ms": a lease either ends or never does`)
		}
	case TypeCapture:
		var tasks []Task
		if err := json.Unmarshal(r.Tasks, &tasks); err != nil || r.Tasks == nil {
			return errors.New(`capture ok needs "tasks": a list of {"task","queue","token"?,"retries_left"?}`)
		}
	case TypeReap:
		var ids []string
		if err := json.Unmarshal(r.Tasks, &ids); err != nil || r.Tasks == nil {
			return errors.New(`reap ok needs "tasks": a list of task ids`)
		}
	}
	return nil
}

// checkInitOK checks the init_ok's required fields.
func checkInitOK(r Reply) error {
	switch {
	case r.Type != TypeInitOK:
		return fmt.Errorf("the answer to init is %q, want %q", r.Type, TypeInitOK)
	case r.NowMS == nil || *r.NowMS < 0:
		return errors.New(`init_ok has no "now_ms" (ms since the client read init)`)
	case r.WallMS == nil:
		return errors.New(`init_ok has no "wall_ms" (the client's wall clock, Unix ms)`)
	case r.Client == "":
		return errors.New(`init_ok has no "client" (library, version, lock, language)`)
	}
	for _, a := range r.Abilities {
		if !slices.Contains(Abilities, a) {
			return fmt.Errorf("init_ok names unknown ability %q (known: %v)", a, Abilities)
		}
	}
	return nil
}

// checkMS checks an optional number of milliseconds.
func checkMS(name string, v *float64) error {
	if v != nil && (math.IsNaN(*v) || math.IsInf(*v, 0) || *v < 0) {
		return fmt.Errorf("%q is %v: want a non-negative number of ms", name, *v)
	}
	return nil
}
