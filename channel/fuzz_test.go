package channel

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// FuzzExec checks the message parser and every method with any frame: no
// panic, every frame valid JSON, exactly one reply for a message with a
// msg_id (carrying it) and at most one otherwise; Call always answers
// once.
func FuzzExec(f *testing.F) {
	for _, s := range []string{
		`{"method":"PUT","resource":"/a/b","entity":{"x":1,"_y":2},"msg_id":1}`,
		`{"method":"PUT","resource":"/a[x]","entity":[1,{"a":"\u00e9"}],"msg_id":"s"}`,
		`{"method":"PUT","resource":"/a","partial":true,"entity":{"\u005fz":1},"msg_id":true}`,
		`{"method":"POST","resource":"/a","id":"c","msg_id":2.5}`,
		`{"method":"GET","resource":"/a?deep=2&like=%25b%&limit=1&offset=0&order=desc","msg_id":3}`,
		`{"method":"GET","resource":"/a[x]","msg_id":4}`,
		`{"method":"DELETE","resource":"/a","msg_id":5}`,
		`{"method":"SUBSCRIBE","resource":"/a","since":0,"msg_id":6}`,
		`{"method":"NOTIFY","resource":"/a","data":{"k":[]},"msg_id":7}`,
		`{"method":"UNSUBSCRIBE","resource":"/a","msg_id":8}`,
		`{"method":"PUT","resource":"/x","expires":1,"msg_id":9}`,
		`{"method":"RULES","resource":"/a/b","rules":"self:cruds group:rs anon:-","group":["b@example.com"],"owner":"c@example.com","msg_id":10}`,
		`{"method":"RULES","resource":"/a","group":null,"rules":"","msg_id":11}`,
		`{"method":"SUBSCRIBE","resource":"/a/b","stream":true,"msg_id":12}`,
		`{"msg_id":{"a":1}}`, `[]`, `{`, `"x"`, ``, `{"msg_id":null,"method":1}`,
	} {
		f.Add([]byte(s))
	}
	tr, err := New(context.Background(), nil, Options{QueueFrames: 1 << 20, QueueBytes: 1 << 30})
	if err != nil {
		f.Fatal(err)
	}
	defer tr.Close()
	c, _ := tr.Connect("c", "")
	c.Exec(context.Background(), []byte(`{"method":"SUBSCRIBE","resource":"/a"}`))
	c.Exec(context.Background(), []byte(`{"method":"SUBSCRIBE","resource":"/"}`))
	f.Fuzz(func(t *testing.T, msg []byte) {
		var fields map[string]json.RawMessage
		wantID := []byte(nil)
		badID := false // a msg_id that is not a scalar: refused
		if json.Unmarshal(msg, &fields) == nil && utf8.Valid(msg) && fields != nil {
			if id, ok := fields["msg_id"]; ok && string(id) != "null" {
				var b bytes.Buffer
				json.Compact(&b, id)
				wantID = b.Bytes()
				if wantID[0] == '[' || wantID[0] == '{' {
					wantID, badID = nil, true
				}
			}
		}
		c.Exec(context.Background(), msg)
		replies := 0
		for _, fr := range drain(t, c) {
			var m map[string]json.RawMessage
			if err := json.Unmarshal([]byte(fr), &m); err != nil || !json.Valid([]byte(fr)) {
				t.Fatalf("invalid frame %q: %v", fr, err)
			}
			if _, ok := m["code"]; ok {
				replies++
				if wantID != nil && !bytes.Equal(m["msg_id"], wantID) {
					t.Fatalf("reply %s to msg_id %s", fr, wantID)
				}
				if badID && (m["msg_id"] != nil || string(m["reason"]) != `"invalid msg_id"`) {
					t.Fatalf("reply %s to %q", fr, msg)
				}
			}
		}
		if replies > 1 || (wantID != nil || badID) && replies != 1 {
			t.Fatalf("%d replies to %q", replies, msg)
		}
		if r := tr.Call(context.Background(), "h", "", msg); !json.Valid(r) {
			t.Fatalf("Call reply %q", r)
		}
	})
}
