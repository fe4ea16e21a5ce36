package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"time"
	"unicode/utf8"
)

// AppendJSON appends the JSON encoding of op (one object, no newline) to b
// and returns the extended slice. Fields are written in the order of the
// example in docs/history.md (index, time, process, client, type, f, heal,
// class, due, key, ttl, token, until, lease, session, kept, value, applied,
// node, error); zero TTL, Until, Lease, Token, Applied, a false Session or
// Kept, a nil Due and empty Heal, Class, Key, Value, Node, Error are left out; Client is written for every worker op (even 0) and left out for
// nemesis ops. A Value that is not valid JSON is written as a JSON string of
// its bytes, so the output is always valid JSON.
func AppendJSON(b []byte, op Op) []byte {
	b = append(b, `{"index":`...)
	b = strconv.AppendInt(b, int64(op.Index), 10)
	b = append(b, `,"time":`...)
	b = strconv.AppendInt(b, int64(op.Time), 10)
	b = append(b, `,"process":`...)
	b = strconv.AppendInt(b, int64(op.Process), 10)
	if op.Process != NemesisProcess {
		b = append(b, `,"client":`...)
		b = strconv.AppendInt(b, int64(op.Client), 10)
	}
	b = append(b, `,"type":`...)
	b = appendString(b, string(op.Type))
	b = append(b, `,"f":`...)
	b = appendString(b, op.F)
	if op.Heal != "" {
		b = append(b, `,"heal":`...)
		b = appendString(b, op.Heal)
	}
	if op.Class != "" {
		b = append(b, `,"class":`...)
		b = appendString(b, string(op.Class))
	}
	if op.Due != nil {
		b = append(b, `,"due":`...)
		b = strconv.AppendInt(b, int64(*op.Due), 10)
	}
	if op.Key != "" {
		b = append(b, `,"key":`...)
		b = appendString(b, op.Key)
	}
	if op.TTL != 0 {
		b = append(b, `,"ttl":`...)
		b = strconv.AppendInt(b, int64(op.TTL), 10)
	}
	if op.Token != 0 {
		b = append(b, `,"token":`...)
		b = strconv.AppendUint(b, op.Token, 10)
	}
	if op.Until != 0 {
		b = append(b, `,"until":`...)
		b = strconv.AppendInt(b, int64(op.Until), 10)
	}
	if op.Lease != 0 {
		b = append(b, `,"lease":`...)
		b = strconv.AppendInt(b, int64(op.Lease), 10)
	}
	if op.Session {
		b = append(b, `,"session":true`...)
	}
	if op.Kept {
		b = append(b, `,"kept":true`...)
	}
	if len(op.Value) != 0 {
		b = append(b, `,"value":`...)
		b = appendRaw(b, op.Value)
	}
	if op.Applied != 0 {
		b = append(b, `,"applied":`...)
		b = strconv.AppendInt(b, int64(op.Applied), 10)
	}
	if op.Node != "" {
		b = append(b, `,"node":`...)
		b = appendString(b, op.Node)
	}
	if op.Error != "" {
		b = append(b, `,"error":`...)
		b = appendString(b, op.Error)
	}
	return append(b, '}')
}

// MarshalJSON encodes op as AppendJSON does.
func (o Op) MarshalJSON() ([]byte, error) {
	return AppendJSON(make([]byte, 0, 128), o), nil
}

// UnmarshalJSON decodes one op; it accepts every encoding AppendJSON writes
// and any other valid JSON object with the same field names (unknown fields
// are ignored, absent fields are zero).
func (o *Op) UnmarshalJSON(b []byte) error {
	var d decoder
	op, err := d.decode(b)
	if err != nil {
		return err
	}
	*o = op
	return nil
}

// appendRaw appends a raw JSON value: integers and other valid JSON as is,
// anything else as a string.
func appendRaw(b []byte, v json.RawMessage) []byte {
	if isInt(v) || json.Valid(v) {
		return append(b, v...)
	}
	return appendString(b, string(v))
}

func isInt(v []byte) bool {
	if len(v) > 0 && v[0] == '-' {
		v = v[1:]
	}
	if len(v) == 0 || len(v) > 19 || (v[0] == '0' && len(v) > 1) {
		return false
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// appendString appends s as a JSON string. Plain printable ASCII is copied;
// anything else goes through encoding/json, which escapes it correctly.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// wireOp is the shape encoding/json decodes when the fast decoder declines a
// line; its errors are encoding/json's own messages.
type wireOp struct {
	Index   int64           `json:"index"`
	Time    int64           `json:"time"`
	Process int64           `json:"process"`
	Client  int64           `json:"client"`
	Type    string          `json:"type"`
	F       string          `json:"f"`
	Heal    string          `json:"heal"`
	Class   string          `json:"class"`
	Due     *int64          `json:"due"`
	Key     string          `json:"key"`
	TTL     int64           `json:"ttl"`
	Until   int64           `json:"until"`
	Lease   int64           `json:"lease"`
	Session bool            `json:"session"`
	Kept    bool            `json:"kept"`
	Token   uint64          `json:"token"`
	Value   json.RawMessage `json:"value"`
	Applied int64           `json:"applied"`
	Node    string          `json:"node"`
	Error   string          `json:"error"`
}

var errNotObject = errors.New("a history line must be a JSON object")

// decoder decodes op lines. It interns the short strings that repeat on
// every line (type, f, key, node) and carves values out of a shared arena,
// so decoding a line allocates almost nothing.
type decoder struct {
	strs  map[string]string
	arena []byte
}

func (d *decoder) intern(b []byte) string {
	if d.strs == nil {
		d.strs = map[string]string{}
	}
	if s, ok := d.strs[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(d.strs) < 4096 {
		d.strs[s] = s
	}
	return s
}

func (d *decoder) raw(b []byte) json.RawMessage {
	if len(b) > 1024 {
		return append(json.RawMessage(nil), b...)
	}
	if len(d.arena)+len(b) > cap(d.arena) {
		d.arena = make([]byte, 0, 64*1024)
	}
	n := len(d.arena)
	d.arena = append(d.arena, b...)
	return json.RawMessage(d.arena[n : n+len(b) : n+len(b)])
}

// decode decodes one line (without its newline). Lines the fast path does
// not fully understand (escapes in strings, numbers in exponent form,
// malformed input) are decoded by encoding/json, so the accepted language
// and the error messages are encoding/json's.
func (d *decoder) decode(line []byte) (Op, error) {
	if op, ok := d.fast(line); ok {
		return op, nil
	}
	return d.slow(line)
}

func (d *decoder) slow(line []byte) (Op, error) {
	var w wireOp
	if err := json.Unmarshal(line, &w); err != nil {
		return Op{}, err
	}
	// encoding/json accepts null for a struct; a history line must be an
	// object.
	i := skipSpace(line, 0)
	if i >= len(line) || line[i] != '{' {
		return Op{}, errNotObject
	}
	op := Op{
		Index: int(w.Index), Time: time.Duration(w.Time), Process: int(w.Process), Client: int(w.Client),
		Type: Type(d.intern([]byte(w.Type))), F: d.intern([]byte(w.F)),
		Heal: d.intern([]byte(w.Heal)), Class: FaultClass(d.intern([]byte(w.Class))), Key: d.intern([]byte(w.Key)),
		TTL: time.Duration(w.TTL), Until: time.Duration(w.Until), Lease: time.Duration(w.Lease), Session: w.Session, Kept: w.Kept, Token: w.Token,
		Applied: time.Duration(w.Applied), Node: d.intern([]byte(w.Node)), Error: w.Error,
	}
	if w.Due != nil {
		due := time.Duration(*w.Due)
		op.Due = &due
	}
	if len(w.Value) != 0 && string(w.Value) != "null" {
		op.Value = d.raw(w.Value)
	}
	return op, nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// fast decodes the common case of a line; ok is false when the line needs
// encoding/json.
func (d *decoder) fast(b []byte) (op Op, ok bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return op, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return op, skipSpace(b, i+1) == len(b)
	}
	for {
		// key
		if i >= len(b) || b[i] != '"' {
			return op, false
		}
		ks, ke, ok := plainString(b, i)
		if !ok {
			return op, false
		}
		i = skipSpace(b, ke+1)
		if i >= len(b) || b[i] != ':' {
			return op, false
		}
		i = skipSpace(b, i+1)
		if i >= len(b) {
			return op, false
		}
		if i, ok = d.field(&op, b[ks:ke], b, i); !ok {
			return op, false
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return op, false
		}
		if b[i] == '}' {
			return op, skipSpace(b, i+1) == len(b)
		}
		if b[i] != ',' {
			return op, false
		}
		i = skipSpace(b, i+1)
	}
}

// field decodes into op the value at b[i] (i < len(b)) of the field key
// and returns where the value ends; ok is false for a key or a value the
// fast path does not take.
func (d *decoder) field(op *Op, key, b []byte, i int) (end int, ok bool) {
	var n int64
	switch string(key) {
	case "index":
		n, i, ok = plainInt(b, i)
		op.Index = int(n)
	case "time":
		n, i, ok = plainInt(b, i)
		op.Time = time.Duration(n)
	case "process":
		n, i, ok = plainInt(b, i)
		op.Process = int(n)
	case "client":
		n, i, ok = plainInt(b, i)
		op.Client = int(n)
	case "ttl":
		n, i, ok = plainInt(b, i)
		op.TTL = time.Duration(n)
	case "until":
		n, i, ok = plainInt(b, i)
		op.Until = time.Duration(n)
	case "lease":
		n, i, ok = plainInt(b, i)
		op.Lease = time.Duration(n)
	case "applied":
		n, i, ok = plainInt(b, i)
		op.Applied = time.Duration(n)
	case "due":
		n, i, ok = plainInt(b, i)
		due := time.Duration(n)
		op.Due = &due
	case "session":
		op.Session, i, ok = plainBool(b, i)
	case "kept":
		op.Kept, i, ok = plainBool(b, i)
	case "token":
		op.Token, i, ok = plainUint(b, i)
	case "type", "f", "heal", "class", "key", "node", "error":
		return d.stringField(op, key, b, i)
	case "value":
		return d.value(op, b, i)
	}
	return i, ok
}

// stringField decodes the plain string at b[i] of a string field, interning
// every one but the error, and returns where it ends.
func (d *decoder) stringField(op *Op, key, b []byte, i int) (int, bool) {
	if b[i] != '"' {
		return i, false
	}
	ss, se, ok := plainString(b, i)
	if !ok {
		return i, false
	}
	s := b[ss:se]
	switch string(key) {
	case "type":
		op.Type = d.opType(s)
	case "f":
		op.F = d.intern(s)
	case "heal":
		op.Heal = d.intern(s)
	case "class":
		op.Class = FaultClass(d.intern(s))
	case "key":
		op.Key = d.intern(s)
	case "node":
		op.Node = d.intern(s)
	case "error":
		op.Error = string(s)
	}
	return se + 1, true
}

// opType is the Type named s, one of the four constants without a lookup.
func (d *decoder) opType(s []byte) Type {
	switch string(s) {
	case "invoke":
		return Invoke
	case "ok":
		return OK
	case "fail":
		return Fail
	case "info":
		return Info
	}
	return Type(d.intern(s))
}

// value keeps the raw JSON value at b[i] as op's value, none for null, and
// returns where it ends.
func (d *decoder) value(op *Op, b []byte, i int) (int, bool) {
	end, ok := skipValue(b, i, 0)
	if !ok {
		return i, false
	}
	if string(b[i:end]) != "null" {
		op.Value = d.raw(b[i:end])
	}
	return end, true
}

// plainBool parses the JSON true or false at b[i].
func plainBool(b []byte, i int) (v bool, end int, ok bool) {
	switch {
	case bytes.HasPrefix(b[i:], []byte("true")):
		return true, i + 4, true
	case bytes.HasPrefix(b[i:], []byte("false")):
		return false, i + 5, true
	}
	return false, i, false
}

// plainString returns the bounds of the contents of the string starting at
// b[i] == '"' when it holds no escapes and no control characters.
func plainString(b []byte, i int) (start, end int, ok bool) {
	start = i + 1
	for j := start; j < len(b); j++ {
		c := b[j]
		switch {
		case c == '"':
			return start, j, true
		case c == '\\' || c < 0x20 || c >= utf8.RuneSelf:
			return 0, 0, false
		}
	}
	return 0, 0, false
}

// plainInt parses a JSON integer without fraction or exponent that fits in
// an int64.
func plainInt(b []byte, i int) (int64, int, bool) {
	neg := false
	if i < len(b) && b[i] == '-' {
		neg = true
		i++
	}
	u, j, ok := plainUint(b, i)
	if !ok || u > 1<<63 || (!neg && u == 1<<63) {
		return 0, 0, false
	}
	if neg {
		return -int64(u), j, true
	}
	return int64(u), j, true
}

func plainUint(b []byte, i int) (uint64, int, bool) {
	start := i
	var u uint64
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		if i-start >= 19 {
			return 0, 0, false
		}
		u = u*10 + uint64(b[i]-'0')
		i++
	}
	if i == start || (b[start] == '0' && i-start > 1) {
		return 0, 0, false
	}
	if i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E') {
		return 0, 0, false
	}
	return u, i, true
}

// skipValue returns the end of the JSON value starting at b[i]; ok is false
// when the fast path cannot vouch for it (it then goes to encoding/json).
func skipValue(b []byte, i, depth int) (int, bool) {
	if depth > 64 || i >= len(b) {
		return 0, false
	}
	switch c := b[i]; {
	case c == '"':
		_, e, ok := plainString(b, i)
		return e + 1, ok
	case c == '-' || (c >= '0' && c <= '9'):
		_, j, ok := plainInt(b, i)
		return j, ok
	case c == 't':
		return i + 4, len(b) >= i+4 && string(b[i:i+4]) == "true"
	case c == 'f':
		return i + 5, len(b) >= i+5 && string(b[i:i+5]) == "false"
	case c == 'n':
		return i + 4, len(b) >= i+4 && string(b[i:i+4]) == "null"
	case c == '[' || c == '{':
		closer := byte(']')
		if c == '{' {
			closer = '}'
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == closer {
			return i + 1, true
		}
		for {
			if c == '{' {
				if i >= len(b) || b[i] != '"' {
					return 0, false
				}
				_, e, ok := plainString(b, i)
				if !ok {
					return 0, false
				}
				i = skipSpace(b, e+1)
				if i >= len(b) || b[i] != ':' {
					return 0, false
				}
				i = skipSpace(b, i+1)
			}
			j, ok := skipValue(b, i, depth+1)
			if !ok {
				return 0, false
			}
			i = skipSpace(b, j)
			if i >= len(b) {
				return 0, false
			}
			if b[i] == closer {
				return i + 1, true
			}
			if b[i] != ',' {
				return 0, false
			}
			i = skipSpace(b, i+1)
		}
	}
	return 0, false
}
