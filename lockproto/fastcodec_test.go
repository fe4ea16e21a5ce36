package lockproto

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestAppendRequest checks that the fast encoder writes what encoding/json
// means, and declines what it does not handle.
func TestAppendRequest(t *testing.T) {
	zero := 0.0
	tests := []struct {
		name string
		req  Request
		fast bool
	}{
		{"acquire", Request{Type: TypeAcquire, ID: 1, Key: "k1", TTLMS: 1000}, true},
		{"acquire with wait", Request{Type: TypeAcquire, ID: 2, Key: "k", TTLMS: 1500.25, WaitMS: 3000}, true},
		{"release", Request{Type: TypeRelease, ID: 18446744073709551615, Key: "k", Owner: "6f1c2f0e9a4b4c43", Token: 7}, true},
		{"tiny ttl", Request{Type: TypeAcquire, ID: 3, Key: "k", TTLMS: 1e-7}, true},
		{"huge ttl", Request{Type: TypeAcquire, ID: 3, Key: "k", TTLMS: 1e300}, true},
		{"key with a quote", Request{Type: TypeAcquire, ID: 4, Key: `a"b`, TTLMS: 1}, false},
		{"owner beyond ASCII", Request{Type: TypeRelease, ID: 5, Key: "k", Owner: "é"}, false},
		{"reap", Request{Type: TypeReap, ID: 6, Queues: []string{"q"}, TimeoutMS: &zero}, false},
		{"capture", Request{Type: TypeCapture, ID: 7, Queue: "q", Limit: 1}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, ok := appendRequest(nil, tc.req)
			if ok != tc.fast {
				t.Fatalf("fast path taken: %v, want %v", ok, tc.fast)
			}
			line, err := encodeRequest([]byte("stale"), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			line = line[len("stale"):]
			if ok && string(out) != string(line) {
				t.Fatalf("encodeRequest %q, appendRequest %q", line, out)
			}
			if line[len(line)-1] != '\n' {
				t.Fatalf("no newline: %q", line)
			}
			want, _ := json.Marshal(tc.req)
			var got, exp map[string]any
			if err := json.Unmarshal(line, &got); err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			if err := json.Unmarshal(want, &exp); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, exp) {
				t.Fatalf("fast %q means %v; encoding/json %q means %v", line, got, want, exp)
			}
		})
	}
}

var replyCorpus = []string{
	`{"type":"ok","id":7,"owner":"6f1c2f0e9a4b4c43","token":12,"until_ms":1153.25,"lease_ms":1000,"received_ms":153.1,"now_ms":153.4}`,
	`{"type":"not-acquired","id":1}`,
	` { "type" : "ok" , "id" : 3 , "session" : true , "never" : false } `,
	`{"type":"ok","id":3,"owner":null,"token":null,"session":null}`,
	`{"type":"ok","type":null,"id":1,"id":2}`,
	`{"type":"error","id":4,"message":"READONLY You can't write against a read only replica."}`,
	`{"type":"lost","key":"k","owner":"o"}`,
	`{"type":"init_ok","client":"x","abilities":["lost"],"wall_ms":1.7e12}`,
	`{"Type":"ok","id":1}`,
	`{"type":"ok","id":1.0}`,
	`{"type":"ok","id":-1}`,
	`{"type":"ok","id":01}`,
	`{"type":"ok","id":1e2}`,
	`{"type":"ok","until_ms":-0.5e-3}`,
	`{"type":"ok","until_ms":1e400}`,
	`{"type":"ok","until_ms":.5}`,
	`{"type":"ok","token":"12"}`,
	`{"type":"ok","owner":12}`,
	`{"type":"ok","owner":"a\"b"}`,
	`{"type":"ok","owner":"é"}`,
	`{"type":"ok","session":1}`,
	`{"type":"ok","extra":{"a":1}}`,
	`{"type":"ok"} x`,
	`{"type":"ok",}`,
	`{"type":"ok"`,
	`{}`,
	`[]`,
	`acquired k`,
	``,
	`{"type":"ok","id":1}` + "\r",
	`{"type":"ok","never":tru}`,
	`{"type":"ok","tasks":[{"task":"t","queue":"q"}]}`,
}

// FuzzParseReply checks the fast reply decoder against encoding/json:
// where it decodes a line, encoding/json decodes it to the same Reply
// without error.
func FuzzParseReply(f *testing.F) {
	for _, s := range replyCorpus {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		fast, ok := parseReplyFast([]byte(line))
		if !ok {
			return
		}
		var want Reply
		if err := json.Unmarshal([]byte(line), &want); err != nil {
			t.Fatalf("fast path decoded %q, which encoding/json rejects: %v", line, err)
		}
		if !reflect.DeepEqual(fast, want) {
			t.Fatalf("%q: fast path %+v, encoding/json %+v", line, fast, want)
		}
	})
}

// TestParseReplyFastTakesCommonReplies checks that the replies of a call's
// common path take the fast path (else its benchmark measures nothing).
func TestParseReplyFastTakesCommonReplies(t *testing.T) {
	for _, s := range replyCorpus[:7] {
		if _, ok := parseReplyFast([]byte(s)); !ok {
			t.Errorf("%q: not taken by the fast path", s)
		}
	}
}
