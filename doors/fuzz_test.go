package doors

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/reso-project/reso/channel"
)

// FuzzParseQuery checks that the door's own parameters never reach the
// tree and that the others pass through as sent.
func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{"", "watch", "watch=full&deep=2", "expires=5&like=a%25", "expires=%35", "&&x=1&", "expires=1&expires=2", "w%61tch=diff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := parseQuery(raw)
		if err != nil {
			return
		}
		if q.hasExpires && q.expires > MaxExpires {
			t.Errorf("%q: expires %d", raw, q.expires)
		}
		if q.rest == "" {
			return
		}
		for _, part := range strings.Split(q.rest, "&") {
			name, _, _ := strings.Cut(part, "=")
			if n := unescape(name); n == "expires" || n == "watch" {
				t.Errorf("%q: %q passed to the tree", raw, part)
			}
			if !strings.Contains(raw, part) {
				t.Errorf("%q: %q not as sent", raw, part)
			}
		}
	})
}

// FuzzParseReply checks that any reply the door reads gives back a JSON
// object.
func FuzzParseReply(f *testing.F) {
	for _, s := range []string{`{"msg_id":1,"code":"success","entity":{"a":[1,2]}}`, `{"code":"failed","reason":"not found"}`, `{}`, `[`, `{"a":1}x`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := parseReply(data)
		if err != nil {
			return
		}
		if obj := r.object(); !json.Valid(obj) {
			t.Errorf("%q: object %q is not JSON", data, obj)
		}
		failure(r.reason) // never panics, whatever the reason
	})
}

// FuzzParseEventID checks the reading of Last-Event-ID: what it accepts
// is "<epoch>:<seq>" with a valid epoch, or a bare seq, and it reads back
// the same when written as the stream writes ids.
func FuzzParseEventID(f *testing.F) {
	for _, s := range []string{"5", "3f9a0c1d2e4b5a69:42", " e:1 ", "e:", ":1", "E:1", "a:b:1", "18446744073709551616", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		epoch, seq, err := parseEventID(v)
		if err != nil {
			if err != errInvalidEventID {
				t.Errorf("%q: error %v", v, err)
			}
			return
		}
		if epoch != "" && !channel.ValidEpoch(epoch) {
			t.Errorf("%q: epoch %q", v, epoch)
		}
		w := &watcher{epoch: epoch}
		if e2, s2, err := parseEventID(w.eventID(seq)); err != nil || e2 != epoch || s2 != seq {
			t.Errorf("%q: read as %q %d, its id %q read as %q %d %v", v, epoch, seq, w.eventID(seq), e2, s2, err)
		}
	})
}
