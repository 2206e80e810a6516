package doors

import (
	"testing"
)

// TestFailure checks the status line of each failure reason of the tree.
func TestFailure(t *testing.T) {
	cases := map[string]string{
		"not found":              "404 Not Found",
		"forbidden":              "403 Forbidden",
		"invalid resource":       "400 Invalid Resource",
		"exists":                 "409 Exists",
		"invalid JSON":           "400 Invalid JSON content",
		"invalid entity":         "400 Invalid Entity",
		"unknown method":         "400 Unknown Method",
		"no subscriber":          "400 No Subscriber",
		"too many subscriptions": "400 Too Many Subscriptions",
		"":                       "400 Bad Request",
		"bad\r\nline":            "400 Bad Line",
		"bad\x7fline":            "400 Bad Request",
	}
	for reason, want := range cases {
		if got := failure(reason).Error(); got != want {
			t.Errorf("%q: %q, want %q", reason, got, want)
		}
	}
}

// TestParseReply checks that a reply's fields keep their order and bytes.
func TestParseReply(t *testing.T) {
	r, err := parseReply([]byte(`{"msg_id":7,"code":"success","resource":"/a","type":"application/json","entity":{"z": 1,"a":[1, 2]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if r.code != "success" {
		t.Errorf("code %q", r.code)
	}
	if got := string(r.object()); got != `{"resource":"/a","type":"application/json","entity":{"z": 1,"a":[1, 2]}}` {
		t.Errorf("object %s", got)
	}
	for _, bad := range []string{``, `[]`, `{"a":}`, `"x"`} {
		if _, err := parseReply([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
