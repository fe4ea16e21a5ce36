package jepsen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"time"

	"olympos.io/encoding/edn"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// convert reads the op maps of data and turns them into a well-formed
// history.
func convert(data []byte, name string, opts Options) (history.History, error) {
	var (
		h     history.History
		lines []int // the line of each op
		last  time.Duration
	)
	err := newSource(data).read(name, func(o *opText) error {
		op, hasTime, err := convertOp(o, opts)
		if err != nil {
			return err
		}
		// Jepsen's ops are in index order but stamped by different threads:
		// a time may be a little before the one of the op before it. The
		// order is kept and the time raised.
		if !hasTime || op.Time < last {
			op.Time = last
		}
		last = op.Time
		op.Index = len(h)
		h = append(h, op)
		lines = append(lines, o.line)
		return nil
	})
	if err != nil {
		return nil, err
	}
	setClients(h)
	nameFaults(h)
	if err := history.Validate(h); err != nil {
		e := &Error{File: name, Err: err}
		var oe *history.OpError
		if errors.As(err, &oe) && oe.Index >= 0 && oe.Index < len(h) {
			e.Op, e.Line = oe.Index+1, lines[oe.Index]
		}
		return nil, e
	}
	return h, nil
}

// nameOf returns the name of a keyword, a symbol or a string.
func nameOf(v any) (string, bool) {
	switch v := v.(type) {
	case edn.Keyword:
		return string(v), true
	case edn.Symbol:
		return string(v), true
	case string:
		return v, true
	}
	return "", false
}

// isLockOp reports whether f is an op of the lock itself, whose key is
// DefaultKey when the op map has no :key.
func isLockOp(f string) bool {
	switch f {
	case history.FAcquire, history.FRelease, history.FRenew, history.FLeaseLost:
		return true
	}
	return false
}

// convertOp converts one op map; hasTime is false when it has no :time.
func convertOp(o *opText, opts Options) (op history.Op, hasTime bool, err error) {
	if err := convertType(o, &op); err != nil {
		return op, false, err
	}
	if err := convertProcess(o, &op); err != nil {
		return op, false, err
	}
	// :f
	if v, ok := o.field("f"); ok {
		if s, ok := nameOf(v); ok {
			op.F = s
		} else if v != nil {
			op.F = o.rawField("f")
		}
	}
	if hasTime, err = convertTime(o, &op); err != nil {
		return op, false, err
	}
	convertKey(o, &op)
	// :value
	value, _ := o.field("value")
	if value != nil {
		op.Value = jsonValue(value, func() string { return o.rawField("value") })
	}
	if err := convertToken(o, &op, value); err != nil {
		return op, false, err
	}
	// :error
	if v, ok := o.field("error"); ok && v != nil {
		if s, ok := nameOf(v); ok {
			op.Error = s
		} else {
			op.Error = o.rawField("error")
		}
	}
	if op.F == history.FAcquire && op.Type == history.Invoke {
		op.TTL = opts.TTL
	}
	return op, hasTime, nil
}

// convertType sets op's type from :type, which must be :invoke, :ok,
// :fail or :info.
func convertType(o *opText, op *history.Op) error {
	v, ok := o.field("type")
	if !ok {
		return errors.New("no :type")
	}
	t, _ := nameOf(v)
	switch history.Type(t) {
	case history.Invoke, history.OK, history.Fail, history.Info:
		op.Type = history.Type(t)
		return nil
	}
	return fmt.Errorf(":type %s: want :invoke, :ok, :fail or :info", o.rawField("type"))
}

// convertProcess sets op's process from :process, a process number from 0
// or :nemesis.
func convertProcess(o *opText, op *history.Op) error {
	v, ok := o.field("process")
	if !ok {
		return errors.New("no :process")
	}
	if p, ok := v.(int64); ok {
		if p < 0 || p > math.MaxInt32 {
			return fmt.Errorf(":process %d: want a process number from 0, or :nemesis", p)
		}
		op.Process = int(p)
		return nil
	}
	if s, ok := nameOf(v); ok && s == "nemesis" {
		op.Process = history.NemesisProcess
		return nil
	}
	return fmt.Errorf(":process %s: want a process number from 0, or :nemesis", o.rawField("process"))
}

// convertTime sets op's time from :time, nanoseconds from 0; hasTime is
// false when :time is missing or nil.
func convertTime(o *opText, op *history.Op) (hasTime bool, err error) {
	v, ok := o.field("time")
	if !ok {
		return false, nil
	}
	switch t := v.(type) {
	case nil:
		return false, nil
	case int64:
		if t < 0 {
			return false, fmt.Errorf(":time %d is negative", t)
		}
		op.Time = time.Duration(t)
		return true, nil
	}
	return false, fmt.Errorf(":time %s: want an integer number of nanoseconds", o.rawField("time"))
}

// convertKey sets op's key from :key: an integer in decimal, a name, or
// any other value as its text; a client's op of the lock itself without a
// key is on DefaultKey.
func convertKey(o *opText, op *history.Op) {
	if v, ok := o.field("key"); ok {
		switch k := v.(type) {
		case nil:
		case int64:
			op.Key = strconv.FormatInt(k, 10)
		default:
			if s, ok := nameOf(v); ok {
				op.Key = s
			} else {
				op.Key = o.rawField("key")
			}
		}
	}
	if op.Key == "" && op.Process != history.NemesisProcess && isLockOp(op.F) {
		op.Key = DefaultKey
	}
}

// convertToken sets op's fencing token from :token, or, for an acquire ok
// without one, from a :token in its map value.
func convertToken(o *opText, op *history.Op, value any) (err error) {
	if v, ok := o.field("token"); ok {
		op.Token, err = token(v)
		return err
	}
	vm, ok := value.(map[any]any)
	if !ok || op.F != history.FAcquire || op.Type != history.OK {
		return nil
	}
	for _, k := range keys("token") {
		if tv, ok := vm[k]; ok {
			op.Token, err = token(tv)
			return err
		}
	}
	return nil
}

// token returns a fencing token: an integer from 0; anything that is not an
// integer (nil, a string) is no token.
func token(v any) (uint64, error) {
	switch t := v.(type) {
	case int64:
		if t < 0 {
			return 0, fmt.Errorf(":token %d is negative", t)
		}
		return uint64(t), nil
	case big.Int:
		if t.Sign() < 0 || !t.IsUint64() {
			return 0, fmt.Errorf(":token %s is not a 64-bit unsigned integer", t.String())
		}
		return t.Uint64(), nil
	}
	return 0, nil
}

// jsonValue converts an EDN value to JSON where it can: integers, floats,
// booleans and strings as themselves, keywords and symbols as their names,
// vectors, lists and sets as arrays (a set's elements in the order of their
// JSON text), and maps whose keys are keywords, symbols, strings or integers
// as objects. Anything else (a map with a composite key, a tagged value, a
// character) makes the whole value a JSON string of its EDN text.
func jsonValue(v any, ednText func() string) json.RawMessage {
	if j, ok := toJSON(v); ok {
		if b, err := json.Marshal(j); err == nil {
			return b
		}
	}
	b, _ := json.Marshal(ednText())
	return b
}

func toJSON(v any) (any, bool) {
	switch v := v.(type) {
	case nil, bool, int64, string:
		return v, true
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, false
		}
		return v, true
	case big.Int:
		return json.Number(v.String()), true
	case *big.Int:
		return json.Number(v.String()), true
	case edn.Keyword:
		return string(v), true
	case edn.Symbol:
		return string(v), true
	case *any:
		return toJSON(*v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			j, ok := toJSON(e)
			if !ok {
				return nil, false
			}
			out[i] = j
		}
		return out, true
	case map[any]bool: // a set
		type elem struct {
			j    any
			text []byte
		}
		elems := make([]elem, 0, len(v))
		for e := range v {
			j, ok := toJSON(e)
			if !ok {
				return nil, false
			}
			text, err := json.Marshal(j)
			if err != nil {
				return nil, false
			}
			elems = append(elems, elem{j, text})
		}
		slices.SortFunc(elems, func(a, b elem) int { return bytes.Compare(a.text, b.text) })
		out := make([]any, len(elems))
		for i, e := range elems {
			out[i] = e.j
		}
		return out, true
	case map[any]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			var ks string
			switch k := k.(type) {
			case int64:
				ks = strconv.FormatInt(k, 10)
			default:
				s, ok := nameOf(k)
				if !ok {
					return nil, false
				}
				ks = s
			}
			if _, dup := out[ks]; dup {
				return nil, false
			}
			j, ok := toJSON(e)
			if !ok {
				return nil, false
			}
			out[ks] = j
		}
		return out, true
	}
	return nil, false
}
