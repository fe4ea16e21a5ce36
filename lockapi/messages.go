package lockapi

import (
	"encoding/json"
	"errors"
	"time"
)

// ProtocolVersion is the version of the lock-client protocol
// (docs/lock-protocol.md) that Serve speaks.
const ProtocolVersion = 1

// maxLine is the longest line Serve reads, as the harness's reader bounds
// its own (docs/lock-protocol.md §4).
const maxLine = 1 << 20

// initMsg is the harness's init (docs/lock-protocol.md §2).
type initMsg struct {
	Type      string            `json:"type"`
	Protocol  int               `json:"protocol"`
	Worker    int               `json:"worker"`
	Process   int               `json:"process"`
	System    string            `json:"system"`
	Endpoints []endpointMsg     `json:"endpoints"`
	Options   map[string]string `json:"options"`
	Seed      uint64            `json:"seed,string"`
}

// endpointMsg is one entry of init's endpoints.
type endpointMsg struct {
	Name string `json:"name"`
	Role string `json:"role"`
	Addr string `json:"addr"`
}

// request is an acquire, release or renew of the harness, or any other
// request Serve answers with an error.
type request struct {
	Type   string  `json:"type"`
	ID     uint64  `json:"id"`
	Key    string  `json:"key"`
	Owner  string  `json:"owner"`
	Token  uint64  `json:"token"`
	TTLMS  float64 `json:"ttl_ms"`
	WaitMS float64 `json:"wait_ms"`
}

// ttl is the request's ttl_ms as a duration.
func (r request) ttl() time.Duration { return msDuration(r.TTLMS) }

// wait is the request's wait_ms as a duration.
func (r request) wait() time.Duration { return msDuration(r.WaitMS) }

// msDuration is ms milliseconds, fractions kept.
func msDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

// initOK is Serve's answer to init.
type initOK struct {
	Type      string   `json:"type"`
	NowMS     float64  `json:"now_ms"`
	WallMS    float64  `json:"wall_ms"`
	Client    string   `json:"client"`
	Abilities []string `json:"abilities"`
}

// reply is Serve's reply to a request, or its lost notice (no id).
type reply struct {
	Type       string   `json:"type"`
	ID         *uint64  `json:"id,omitempty"`
	Key        string   `json:"key,omitempty"`
	Owner      *string  `json:"owner,omitempty"`
	Token      uint64   `json:"token,omitempty"`
	UntilMS    *float64 `json:"until_ms,omitempty"`
	LeaseMS    *float64 `json:"lease_ms,omitempty"`
	Never      bool     `json:"never,omitempty"`
	Session    bool     `json:"session,omitempty"`
	Message    string   `json:"message,omitempty"`
	ReceivedMS *float64 `json:"received_ms,omitempty"`
	NowMS      *float64 `json:"now_ms,omitempty"`
}

// errorReply is the reply of type typ to request id with err's text.
func errorReply(id uint64, typ string, err error) reply {
	return reply{Type: typ, ID: &id, Message: err.Error()}
}

// failure is the reply to request r that failed with err: not-acquired for
// an acquire's ErrNotAcquired, not-held for a release's or renewal's
// ErrNotHeld, no-op for a release's ErrReleaseNoOp, error for anything else.
func failure(r request, err error) reply {
	switch {
	case r.Type == "acquire" && errors.Is(err, ErrNotAcquired):
		return errorReply(r.ID, "not-acquired", err)
	case (r.Type == "release" || r.Type == "renew") && errors.Is(err, ErrNotHeld):
		return errorReply(r.ID, "not-held", err)
	case r.Type == "release" && errors.Is(err, ErrReleaseNoOp):
		return errorReply(r.ID, "no-op", err)
	}
	return errorReply(r.ID, "error", err)
}

// encode is m as one line of the protocol.
func encode(m any) ([]byte, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
