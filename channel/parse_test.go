package channel

import (
	"encoding/json"
	"reflect"
	"testing"
	"unicode/utf8"
)

// parseCases are messages of docs/channel.md's shapes, and ones the fast
// path leaves to encoding/json.
var parseCases = []string{
	`{"method":"PUT","resource":"/a/b","entity":{"j":1,"k":[1,2,{"x":"y"}]},"persistent":true,"msg_id":7}`,
	`{ "method" : "SUBSCRIBE", "resource": "/a", "since": 12, "epoch": "ab12", "msg_id": "x" }`,
	`{"method":"NOTIFY","resource":"/r","data":{"t":1,"pad":"xxx"},"offer":true,"msg_id":1.5e3}`,
	`{"method":"POST","resource":"/r","id":"z","type":"text","expires":2.5,"group":["a","b"],"owner":"me","rules":"r","partial":false,"stream":true}`,
	`{"method":"GET","resource":"/r","unknown":{"deep":[[[]]]},"msg_id":null}`,
	`{"Method":"GET","resource":"/r"}`,
	`{"method":"G\u0045T","resource":"/r"}`,
	`{"method":null,"resource":"/r"}`,
	`{"method":"GET","resource":"/é/ü"}`,
	`{"since":-1}`, `{"since":1.0}`, `{"expires":1e999}`, `{"persistent":"yes"}`,
	`{"method":"GET"} x`, `{"method":"GET",}`, `{}`, ` {} `, `{"msg_id":[1]}`, `{"entity":{"a":}`,
	`{"data":"a\"b"}`, `{"resource":"a` + "\t" + `b"}`,
}

// TestParseFast: each case parses as with encoding/json alone, and the
// shapes of docs/channel.md (the first five cases) take the fast path.
func TestParseFast(t *testing.T) {
	for i, c := range parseCases {
		checkParseFast(t, []byte(c))
		if m := (message{}); i < 5 && !parseFast([]byte(c), &m) {
			t.Errorf("%s: left to encoding/json", c)
		}
	}
}

// checkParseFast fails t when parseFast answers data otherwise than
// json.Unmarshal.
func checkParseFast(t *testing.T, data []byte) {
	t.Helper()
	var fast, want message
	ok := parseFast(data, &fast)
	err := json.Unmarshal(data, &want)
	if !ok {
		return
	}
	if err != nil {
		t.Fatalf("%q: the fast path read it, encoding/json refused it: %v", data, err)
	}
	if !reflect.DeepEqual(fast, want) {
		t.Fatalf("%q: fast path %+v, encoding/json %+v", data, fast, want)
	}
}

// FuzzParseFast: whatever a client sends, the fast path reads what
// encoding/json reads, or leaves it to encoding/json.
func FuzzParseFast(f *testing.F) {
	for _, c := range parseCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !utf8.Valid(data) {
			return // parseMessage refuses it before
		}
		checkParseFast(t, data)
	})
}

// BenchmarkParseMessage: a PUT as the fleet's bench sends it.
func BenchmarkParseMessage(b *testing.B) {
	data := []byte(`{"method":"PUT","resource":"/w1/c2/r3","entity":{"j":3},"persistent":true,"msg_id":3}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, reason := parseMessage(data); reason != "" {
			b.Fatal(reason)
		}
	}
}
