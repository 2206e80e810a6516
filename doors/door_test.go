package doors_test

import (
	"strings"
	"testing"

	channelplugin "github.com/reso-project/reso/plugins/channel"
)

// TestDoor checks the HTTP door's translation both ways: the message it
// builds from a request and the status line, headers and body it makes of
// the reply.
func TestDoor(t *testing.T) {
	s := newServer(t, channelplugin.New())
	cases := []struct {
		name                 string
		method, target, body string
		header               []string
		status, wantBody     string
		msg                  string // the message the tree got; "" when none
		identity             string
		location             string
	}{
		{name: "put", method: "PUT", target: "/channel/a", body: "{\"x\": 1,\n \"b\": [2]}", status: "HTTP/1.1 200 OK", wantBody: "{}",
			msg: `{"method":"PUT","resource":"/a","msg_id":1,"entity":{"x":1,"b":[2]}}`},
		{name: "get", method: "GET", target: "/channel/a", status: "HTTP/1.1 200 OK", wantBody: `{"x":1,"b":[2]}`,
			msg: `{"method":"GET","resource":"/a","msg_id":1}`},
		{name: "identity", method: "GET", target: "/channel/a", header: []string{"X-User", "ann@example.com"}, status: "HTTP/1.1 200 OK", wantBody: `{"x":1,"b":[2]}`,
			msg: `{"method":"GET","resource":"/a","msg_id":1}`, identity: "ann@example.com"},
		{name: "query passes through", method: "GET", target: "/channel/a[x]?deep=2&like=a%25&expires=5&order=desc", status: "HTTP/1.1 200 OK", wantBody: `{"x":1,"b":[2]}`,
			msg: `{"method":"GET","resource":"/a[x]?deep=2&like=a%25&order=desc","msg_id":1,"expires":5}`},
		{name: "not found", method: "GET", target: "/channel/nothing", status: "HTTP/1.1 404 Not Found", wantBody: "404 Not Found\n",
			msg: `{"method":"GET","resource":"/nothing","msg_id":1}`},
		{name: "forbidden", method: "DELETE", target: "/channel/forbidden/x", header: []string{"X-User", "ann@example.com"}, status: "HTTP/1.1 403 Forbidden", wantBody: "403 Forbidden\n",
			msg: `{"method":"DELETE","resource":"/forbidden/x","msg_id":1}`, identity: "ann@example.com"},
		{name: "forbidden to an anonymous caller", method: "DELETE", target: "/channel/forbidden/x", status: "HTTP/1.1 401 Unauthorized", wantBody: "401 Unauthorized\n",
			msg: `{"method":"DELETE","resource":"/forbidden/x","msg_id":1}`},
		{name: "rules", method: "GET", target: "/channel/a?rules", status: "HTTP/1.1 200 OK",
			msg: `{"method":"RULES","resource":"/a","msg_id":1}`},
		{name: "rules changed", method: "PUT", target: "/channel/a?rules", body: `{"rules": "self:cruds", "group": ["b@example.com"], "other": 1}`, status: "HTTP/1.1 200 OK",
			msg: `{"method":"RULES","resource":"/a","msg_id":1,"rules":"self:cruds","group":["b@example.com"]}`},
		{name: "rules not an object", method: "PUT", target: "/channel/a?rules", body: `["self:r"]`, status: "HTTP/1.1 400 Invalid JSON content"},
		{name: "rules by POST", method: "POST", target: "/channel/a?rules", body: `{}`, status: "HTTP/1.1 405 Method Not Allowed"},
		{name: "invalid resource from the tree", method: "GET", target: "/channel/a/../b", status: "HTTP/1.1 400 Invalid Resource"},
		{name: "invalid resource in the door", method: "GET", target: "/channel/a%3Fb", status: "HTTP/1.1 400 Invalid Resource", wantBody: "400 Invalid Resource\n"},
		{name: "trailing slash", method: "GET", target: "/channel/a/", status: "HTTP/1.1 400 Invalid Resource",
			msg: `{"method":"GET","resource":"/a/","msg_id":1}`},
		{name: "empty segment", method: "PUT", target: "/channel//a", body: `{}`, status: "HTTP/1.1 400 Invalid Resource",
			msg: `{"method":"PUT","resource":"//a","msg_id":1,"entity":{}}`},
		{name: "not UTF-8", method: "GET", target: "/channel/a%ff", status: "HTTP/1.1 400 Invalid Resource"},
		{name: "invalid JSON", method: "PUT", target: "/channel/a", body: "{x", status: "HTTP/1.1 400 Invalid JSON content"},
		{name: "too large", method: "PUT", target: "/channel/a", body: `"` + strings.Repeat("x", 2000) + `"`, status: "HTTP/1.1 413 Request Entity Too Large"},
		{name: "lease", method: "PUT", target: "/channel/lease?expires=30", body: `{}`, status: "HTTP/1.1 200 OK", wantBody: "{}",
			msg: `{"method":"PUT","resource":"/lease","msg_id":1,"entity":{},"expires":30}`},
		{name: "bad expires", method: "PUT", target: "/channel/lease?expires=-1", status: "HTTP/1.1 400 Invalid Expires"},
		{name: "expires too far", method: "PUT", target: "/channel/lease?expires=99999999999", status: "HTTP/1.1 400 Invalid Expires"},
		{name: "post", method: "POST", target: "/channel/r%20s", body: `{"m": "hi"}`, status: "HTTP/1.1 201 Created", wantBody: `{"id":"n1"}`,
			msg: `{"method":"POST","resource":"/r s","msg_id":1,"entity":{"m":"hi"}}`, location: "/channel/r%20s/n1"},
		{name: "put without body", method: "PUT", target: "/channel/empty", status: "HTTP/1.1 200 OK", wantBody: "{}",
			msg: `{"method":"PUT","resource":"/empty","msg_id":1}`},
		{name: "delete", method: "DELETE", target: "/channel/a", status: "HTTP/1.1 200 OK", wantBody: "{}",
			msg: `{"method":"DELETE","resource":"/a","msg_id":1}`},
		{name: "deleted", method: "GET", target: "/channel/a", status: "HTTP/1.1 404 Not Found"},
		{name: "bad watch", method: "GET", target: "/channel/a?watch=all", status: "HTTP/1.1 400 Invalid Watch"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := len(s.tree.Calls())
			status, h, body := s.do(t, c.method, c.target, c.body, c.header...)
			if status != c.status {
				t.Errorf("status %q, want %q (body %q)", status, c.status, body)
			}
			if c.wantBody != "" && body != c.wantBody {
				t.Errorf("body %q, want %q", body, c.wantBody)
			}
			if c.location != h.Get("Location") {
				t.Errorf("Location %q, want %q", h.Get("Location"), c.location)
			}
			if strings.HasPrefix(c.status, "HTTP/1.1 2") && h.Get("Content-Type") != "application/json" {
				t.Errorf("Content-Type %q", h.Get("Content-Type"))
			}
			calls := s.tree.Calls()[before:]
			if c.msg == "" {
				return
			}
			if len(calls) != 1 {
				t.Fatalf("%d calls, want 1: %v", len(calls), calls)
			}
			if calls[0].Msg != c.msg {
				t.Errorf("message\n%s\nwant\n%s", calls[0].Msg, c.msg)
			}
			if calls[0].Identity != c.identity {
				t.Errorf("identity %q, want %q", calls[0].Identity, c.identity)
			}
			if !strings.HasPrefix(calls[0].From, "http-") {
				t.Errorf("from %q", calls[0].From)
			}
		})
	}
}
