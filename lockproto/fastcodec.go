package lockproto

import (
	"encoding/json"
	"math"
	"strconv"
)

// The codec's fast paths. A call's request and reply are small flat JSON
// objects; encoding/json's reflection is most of the harness's own work
// per call (BenchmarkCodec). appendRequest and parseReplyFast handle the
// common shapes by hand and decline everything else, which then takes
// encoding/json's path; a fast path never gives a result that
// encoding/json would not (FuzzParseReply and TestAppendRequest compare
// them).

// appendRequest appends req as one JSON line to buf. It reports false, and
// appends nothing, for a request it does not handle: one with a queue
// field, or a string that needs escaping, or a number JSON cannot carry.
func appendRequest(buf []byte, req Request) ([]byte, bool) {
	if req.Queue != "" || req.Limit != 0 || req.Task != "" || req.Status != "" ||
		req.Queues != nil || req.TimeoutMS != nil || req.Tasks != nil ||
		!plain(req.Type) || !plain(req.Key) || !plain(req.Owner) ||
		!finite(req.TTLMS) || !finite(req.WaitMS) {
		return buf, false
	}
	buf = append(buf, `{"type":"`...)
	buf = append(buf, req.Type...)
	buf = append(buf, `","id":`...)
	buf = strconv.AppendUint(buf, req.ID, 10)
	if req.Key != "" {
		buf = append(buf, `,"key":"`...)
		buf = append(buf, req.Key...)
		buf = append(buf, '"')
	}
	if req.Owner != "" {
		buf = append(buf, `,"owner":"`...)
		buf = append(buf, req.Owner...)
		buf = append(buf, '"')
	}
	if req.Token != 0 {
		buf = append(buf, `,"token":`...)
		buf = strconv.AppendUint(buf, req.Token, 10)
	}
	if req.TTLMS != 0 {
		buf = append(buf, `,"ttl_ms":`...)
		buf = strconv.AppendFloat(buf, req.TTLMS, 'f', -1, 64)
	}
	if req.WaitMS != 0 {
		buf = append(buf, `,"wait_ms":`...)
		buf = strconv.AppendFloat(buf, req.WaitMS, 'f', -1, 64)
	}
	return append(buf, "}\n"...), true
}

// plain reports whether s is printable ASCII that JSON carries unescaped.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// encodeRequest is one JSON line for req, by the fast path where it can.
func encodeRequest(buf []byte, req Request) ([]byte, error) {
	if out, ok := appendRequest(buf, req); ok {
		return out, nil
	}
	line, err := json.Marshal(req)
	if err != nil {
		return buf, err
	}
	return append(append(buf, line...), '\n'), nil
}

// replyScanner reads one flat JSON object: keys, then scalar values.
type replyScanner struct {
	b []byte
	i int
}

func (s *replyScanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *replyScanner) eat(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// str reads a string of printable ASCII without escapes.
func (s *replyScanner) str() ([]byte, bool) {
	if !s.eat('"') {
		return nil, false
	}
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return s.b[start : s.i-1], true
		case c < 0x20 || c > 0x7e || c == '\\':
			return nil, false
		}
		s.i++
	}
	return nil, false
}

// number reads a JSON number, by JSON's grammar exactly.
func (s *replyScanner) number() ([]byte, bool) {
	s.space()
	start := s.i
	digits := func() int {
		n := 0
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	first := s.i
	if n := digits(); n == 0 || (n > 1 && s.b[first] == '0') {
		return nil, false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return nil, false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return nil, false
		}
	}
	return s.b[start:s.i], true
}

// literal reads true, false or null.
func (s *replyScanner) literal(word string) bool {
	s.space()
	if len(s.b)-s.i >= len(word) && string(s.b[s.i:s.i+len(word)]) == word {
		s.i += len(word)
		return true
	}
	return false
}

// value classes the next value: '"', '0' (number), 't', 'f', 'n', or 0
// for anything else (an object, an array, bad input).
func (s *replyScanner) peek() byte {
	s.space()
	if s.i >= len(s.b) {
		return 0
	}
	switch c := s.b[s.i]; {
	case c == '"', c == 't', c == 'f', c == 'n':
		return c
	case c == '-' || (c >= '0' && c <= '9'):
		return '0'
	}
	return 0
}

// parseReplyFast decodes a reply that is one flat object whose keys are
// Reply's own (spelt exactly) and whose values are plain strings, numbers,
// booleans and nulls of the right kinds. It reports false for any other
// line, which encoding/json then decodes (its results and its errors).
func parseReplyFast(line []byte) (Reply, bool) {
	var r Reply
	s := replyScanner{b: line}
	if !s.eat('{') {
		return r, false
	}
	if s.eat('}') {
		s.space()
		return r, s.i == len(s.b)
	}
	for {
		key, ok := s.str()
		if !ok || !s.eat(':') {
			return r, false
		}
		if !s.field(&r, string(key)) {
			return r, false
		}
		if s.eat(',') {
			continue
		}
		if !s.eat('}') {
			return r, false
		}
		s.space()
		return r, s.i == len(s.b)
	}
}

// field reads the value of key into r.
func (s *replyScanner) field(r *Reply, key string) bool {
	switch key {
	case "type":
		return s.text(&r.Type)
	case "client":
		return s.text(&r.Client)
	case "key":
		return s.text(&r.Key)
	case "message":
		return s.text(&r.Message)
	case "owner":
		return s.textPtr(&r.Owner)
	case "id":
		return s.uintPtr(&r.ID)
	case "token":
		return s.uintPtr(&r.Token)
	case "now_ms":
		return s.floatPtr(&r.NowMS)
	case "received_ms":
		return s.floatPtr(&r.RecvMS)
	case "wall_ms":
		return s.floatPtr(&r.WallMS)
	case "until_ms":
		return s.floatPtr(&r.UntilMS)
	case "lease_ms":
		return s.floatPtr(&r.LeaseMS)
	case "session":
		return s.boolean(&r.Session)
	case "never":
		return s.boolean(&r.Never)
	}
	return false
}

// encoding/json leaves a non-pointer field as it was on null and sets a
// pointer field to nil; the readers below do the same.

func (s *replyScanner) text(dst *string) bool {
	switch s.peek() {
	case 'n':
		return s.literal("null")
	case '"':
		v, ok := s.str()
		*dst = string(v)
		return ok
	}
	return false
}

func (s *replyScanner) textPtr(dst **string) bool {
	switch s.peek() {
	case 'n':
		*dst = nil
		return s.literal("null")
	case '"':
		v, ok := s.str()
		str := string(v)
		*dst = &str
		return ok
	}
	return false
}

func (s *replyScanner) uintPtr(dst **uint64) bool {
	switch s.peek() {
	case 'n':
		*dst = nil
		return s.literal("null")
	case '0':
		v, ok := s.number()
		if !ok {
			return false
		}
		n, err := strconv.ParseUint(string(v), 10, 64)
		if err != nil {
			return false
		}
		*dst = &n
		return true
	}
	return false
}

func (s *replyScanner) floatPtr(dst **float64) bool {
	switch s.peek() {
	case 'n':
		*dst = nil
		return s.literal("null")
	case '0':
		v, ok := s.number()
		if !ok {
			return false
		}
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			return false
		}
		*dst = &f
		return true
	}
	return false
}

func (s *replyScanner) boolean(dst *bool) bool {
	switch s.peek() {
	case 'n':
		return s.literal("null")
	case 't':
		*dst = true
		return s.literal("true")
	case 'f':
		*dst = false
		return s.literal("false")
	}
	return false
}
