package tests

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// want is an expected answer: the exact status line, the exact
// Content-Type, and the exact body ("" means an empty body).
type want struct {
	status string
	ctype  string
	body   string
}

func check(t *testing.T, got response, w want) {
	t.Helper()
	if got.StatusLine != w.status {
		t.Errorf("status line %q, want %q (body %q)", got.StatusLine, w.status, got.Body)
	}
	if ct := got.Header.Get("Content-Type"); ct != w.ctype {
		t.Errorf("Content-Type %q, want %q", ct, w.ctype)
	}
	if got.Body != w.body {
		t.Errorf("body\n%q\nwant\n%q", got.Body, w.body)
	}
}

const (
	ok200  = "HTTP/1.1 200 OK"
	jsonCT = "application/json"
	xmlCT  = "text/xml"
	textCT = "text/plain"
	octCT  = "application/octet-stream"
)

func statusBody(line string) string { return strings.TrimPrefix(line, "HTTP/1.1 ") + "\n" }

func errorWant(line string) want { return want{status: line, ctype: textCT, body: statusBody(line)} }

const (
	listingRoot = `{"files": [` +
		`{"file": {"name": "hello.txt", "url": "/file/hello.txt", "size": 13, "mtime": 1700000000}}, ` +
		`{"file": {"name": "inside-link", "url": "/file/inside-link", "size": 13, "mtime": 1700000000}}, ` +
		`{"dir": {"name": "sub", "url": "/files/sub"}}]}`
	listingSub = `{"files": [` +
		`{"file": {"name": "data.bin", "url": "/file/sub/data.bin", "size": 36, "mtime": 1700000000}}, ` +
		`{"dir": {"name": "deeper", "url": "/files/sub/deeper"}}]}`
)

// TestReadOnlyRoutes checks every answer of the open application that does
// not change state, byte for byte (docs/wire.md#example-routes and
// docs/wire.md#status-line-table).
func TestReadOnlyRoutes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		method string
		target string
		want   want
	}{
		{"config", "GET", "/config", want{ok200, jsonCT, `{"config": {"directory": "."}}`}},
		{"config json prefix", "GET", "/json/config", want{ok200, jsonCT, `{"config": {"directory": "."}}`}},
		{"config xml", "GET", "/xml/config", want{ok200, xmlCT, `<config><directory>.</directory></config>`}},
		{"config with other query", "GET", "/config?x=1", want{ok200, jsonCT, `{"config": {"directory": "."}}`}},
		{"files", "GET", "/files", want{ok200, jsonCT, listingRoot}},
		{"files slash", "GET", "/files/", want{ok200, jsonCT, listingRoot}},
		{"files sub", "GET", "/files/sub", want{ok200, jsonCT, listingSub}},
		{"files sub slash", "GET", "/files/sub/", want{ok200, jsonCT, listingSub}},
		{"files empty dir", "GET", "/files/sub/deeper", want{ok200, jsonCT, `{"files": []}`}},
		{"files xml", "GET", "/xml/files/sub", want{ok200, xmlCT, `<files>` +
			`<file><name>data.bin</name><url>/file/sub/data.bin</url><size>36</size><mtime>1700000000</mtime></file>` +
			`<dir><name>deeper</name><url>/files/sub/deeper</url></dir></files>`}},
		{"files dotdot", "GET", "/files/../", errorWant("HTTP/1.1 400 Invalid Path")},
		{"files encoded dotdot", "GET", "/files/%2e%2e/", errorWant("HTTP/1.1 400 Invalid Path")},
		{"files dotdot inside", "GET", "/files/sub/../sub", errorWant("HTTP/1.1 400 Invalid Path")},
		{"files xml dotdot", "GET", "/xml/files/..", errorWant("HTTP/1.1 400 Invalid Path")},
		{"files missing", "GET", "/files/nope", errorWant("HTTP/1.1 404 Not Found")},
		{"files of a file", "GET", "/files/hello.txt", errorWant("HTTP/1.1 404 Not Found")},
		{"files through outside link", "GET", "/files/outside-link", errorWant("HTTP/1.1 404 Not Found")},
		{"files through outside link deeper", "GET", "/files/outside-link/etc", errorWant("HTTP/1.1 404 Not Found")},
		{"file", "GET", "/file/hello.txt", want{ok200, octCT, fixtureHello}},
		{"file sub", "GET", "/file/sub/data.bin", want{ok200, octCT, fixtureData}},
		{"file inside link", "GET", "/file/inside-link", want{ok200, octCT, fixtureHello}},
		{"file xml prefix keeps bytes", "GET", "/xml/file/hello.txt", want{ok200, octCT, fixtureHello}},
		{"file dir", "GET", "/file/sub", errorWant("HTTP/1.1 404 Not Found")},
		{"file missing", "GET", "/file/nope", errorWant("HTTP/1.1 404 Not Found")},
		{"file empty", "GET", "/file/", errorWant("HTTP/1.1 404 Not Found")},
		{"file outside link", "GET", "/file/outside-link/etc/passwd", errorWant("HTTP/1.1 404 Not Found")},
		{"file dangling", "GET", "/file/dangling", errorWant("HTTP/1.1 404 Not Found")},
		{"file dotdot", "GET", "/file/../../../../etc/passwd", errorWant("HTTP/1.1 404 Not Found")},
		{"file encoded dotdot", "GET", "/file/%2e%2e/%2e%2e/%2e%2e/etc/passwd", errorWant("HTTP/1.1 404 Not Found")},
		{"file encoded slash dotdot", "GET", "/file/..%2f..%2f..%2fetc%2fpasswd", errorWant("HTTP/1.1 404 Not Found")},
		{"users", "GET", "/users", want{ok200, jsonCT, `{"result": [{"url": "/users/0"}, {"url": "/users/1"}]}`}},
		{"users slash", "GET", "/users/", want{ok200, jsonCT, `{"result": [{"url": "/users/0"}, {"url": "/users/1"}]}`}},
		{"users xml", "GET", "/xml/users", want{ok200, xmlCT, `<result><url>/users/0</url><url>/users/1</url></result>`}},
		{"user 0", "GET", "/users/0", want{ok200, jsonCT, `{"result": {"username": "alice", "name": "Alice Example", "email": "alice@example.org"}}`}},
		{"user 1", "GET", "/users/1", want{ok200, jsonCT, `{"result": {"username": "bob"}}`}},
		{"user 0 name", "GET", "/users/0/name", want{ok200, jsonCT, `{"result": "Alice Example"}`}},
		{"user 0 name xml", "GET", "/xml/users/0/email", want{ok200, xmlCT, `<result>alice@example.org</result>`}},
		{"user 1 missing field", "GET", "/users/1/name", errorWant("HTTP/1.1 400 Invalid Scope")},
		{"user out of range", "GET", "/users/2", errorWant("HTTP/1.1 400 Invalid Scope")},
		{"user negative", "GET", "/users/-1", errorWant("HTTP/1.1 400 Invalid Scope")},
		{"user not a number", "GET", "/users/x", errorWant("HTTP/1.1 400 Invalid Scope")},
		{"user scalar segment", "GET", "/users/0/name/more", errorWant("HTTP/1.1 400 Invalid Scope")},
		{"users prefix only", "GET", "/usersx", want{"HTTP/1.1 404 Not Found", textCT, ""}},
		{"no route", "GET", "/nothing", want{"HTTP/1.1 404 Not Found", textCT, ""}},
		{"post files", "POST", "/files", want{"HTTP/1.1 404 Not Found", textCT, ""}},
		{"delete config", "DELETE", "/config", want{"HTTP/1.1 404 Not Found", textCT, ""}},
		{"post users", "POST", "/users", want{"HTTP/1.1 404 Not Found", textCT, ""}},
	}
	eachMode(t, func(t *testing.T, m mode) {
		s := shared(t, m)
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				var got response
				if c.method == "GET" {
					got = s.get(t, c.target)
				} else {
					got = s.do(t, c.method, c.target, "", "Content-Length: 0")
				}
				w := c.want
				if strings.HasPrefix(w.status, "HTTP/1.1 404 Not Found") && w.body == "" {
					// The router's 404 lists the route forms.
					w.body = routeForms
				}
				check(t, got, w)
			})
		}
	})
}

// routeForms is the body of the router's 404 answer.
const routeForms = "404 Not Found\n" +
	"GET,PUT,POST /(?P<type>xml|plain|html)/(?P<path>.*)\n" +
	"GET,PUT,POST /json/(?P<path>.*)\n" +
	"GET /config\\?directory=(?P<directory>[^&]*)\n" +
	"GET,PUT,POST /config(?:$|\\?)\n" +
	"GET /files(?:/|$|\\?)\n" +
	"GET /file/\n" +
	"GET /users(?:/|$|\\?)\n" +
	"GET /private/\n" +
	"GET /channel(?:$|\\?)\n" +
	"GET,PUT,POST,DELETE /channel/\n" +
	"GET,PUT,POST,DELETE,SEND,CANCEL /login/\n" +
	"GET,PUT,POST,DELETE /call(?:/|$|\\?)\n" +
	"GET,PUT,POST,DELETE /user(?:/|$|\\?)\n" +
	"GET /console/\n" +
	"GET /(?:$|\\?)\n"

func TestPlainRepresentation(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		s := shared(t, m)
		got := s.get(t, "/plain/config")
		check(t, got, want{ok200, textCT, "config:\n  directory: .\n"})
		got = s.get(t, "/plain/users/0/name")
		check(t, got, want{ok200, textCT, "result: Alice Example\n"})
	})
}

func TestConfigChanges(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		s := start(t, m)
		config := func(dir string) {
			t.Helper()
			check(t, s.get(t, "/config"), want{ok200, jsonCT, `{"config": {"directory": "` + dir + `"}}`})
		}
		empty := want{ok200, textCT, ""}
		// GET /config?directory= rewrites to PUT with a text body.
		check(t, s.get(t, "/config?directory=sub"), empty)
		config("sub")
		check(t, s.get(t, "/files"), want{ok200, jsonCT, strings.ReplaceAll(listingSub, "/sub/", "/")})
		// The value is percent-decoded.
		check(t, s.get(t, "/config?directory=sub%2Fdeeper"), empty)
		config("sub/deeper")
		check(t, s.get(t, "/xml/config?directory=."), empty)
		config(".")
		// PUT with a text body.
		check(t, s.do(t, "PUT", "/config", "sub", "Content-Type: text/plain"), empty)
		config("sub")
		// POST is rewritten to PUT; a JSON string body.
		check(t, s.do(t, "POST", "/config", `"."`, "Content-Type: Application/JSON"), empty)
		config(".")
		// Bad JSON changes nothing.
		check(t, s.do(t, "PUT", "/config", `{"directory": `, "Content-Type: application/json"), errorWant("HTTP/1.1 400 Invalid JSON content"))
		config(".")
		// A JSON value that is not a string, or an empty body, is refused.
		check(t, s.do(t, "PUT", "/config", `42`, "Content-Type: application/json"), errorWant("HTTP/1.1 400 Invalid Directory"))
		check(t, s.do(t, "PUT", "/config", ``, "Content-Length: 0"), errorWant("HTTP/1.1 400 Invalid Directory"))
		config(".")
		// No Content-Length and not chunked.
		check(t, s.do(t, "PUT", "/config", ""), errorWant("HTTP/1.1 400 Invalid Content-Length"))
		check(t, s.do(t, "POST", "/json/config", ""), errorWant("HTTP/1.1 400 Invalid Content-Length"))
		// Chunked bodies are accepted.
		chunked := "PUT /config HTTP/1.1\r\nHost: x\r\nConnection: close\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n3\r\nsub\r\n0\r\n\r\n"
		check(t, raw(t, s.Addr, chunked), empty)
		config("sub")
		// A directory that cannot be listed gives 404 for listings.
		check(t, s.get(t, "/config?directory=does-not-exist"), empty)
		check(t, s.get(t, "/files"), errorWant("HTTP/1.1 404 Not Found"))
		check(t, s.get(t, "/file/hello.txt"), errorWant("HTTP/1.1 404 Not Found"))
		// A badly encoded value.
		check(t, s.get(t, "/config?directory=%zz"), errorWant("HTTP/1.1 400 Invalid Query"))
		config("does-not-exist")
	})
}

func TestBodyLimit(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		s := start(t, m, "-body-limit", "16")
		check(t, s.do(t, "PUT", "/config", strings.Repeat("a", 17), "Content-Type: text/plain"), errorWant("HTTP/1.1 413 Request Entity Too Large"))
		check(t, s.do(t, "PUT", "/config", strings.Repeat("a", 16), "Content-Type: text/plain"), want{ok200, textCT, ""})
	})
}

// TestUsersFile loads another list with -users, keeping field order, and
// reaches 404 Object Not Found through a null value.
func TestUsersFile(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		dir := t.TempDir()
		file := filepath.Join(dir, "users.json")
		data := `[{"username": "carol", "zeta": "z", "alpha": "a", "manager": null, "tags": ["x", "y"], "age": 7}]`
		if err := os.WriteFile(file, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		s := start(t, m, "-users", file)
		check(t, s.get(t, "/users/0"), want{ok200, jsonCT,
			`{"result": {"username": "carol", "zeta": "z", "alpha": "a", "manager": "/users/0/manager", "tags": "/users/0/tags", "age": "/users/0/age"}}`})
		check(t, s.get(t, "/users/0/tags"), want{ok200, jsonCT, `{"result": [{"url": "/users/0/tags/0"}, {"url": "/users/0/tags/1"}]}`})
		check(t, s.get(t, "/users/0/tags/1"), want{ok200, jsonCT, `{"result": "y"}`})
		check(t, s.get(t, "/users/0/age"), want{ok200, jsonCT, `{"result": 7}`})
		check(t, s.get(t, "/users/0/manager"), want{ok200, jsonCT, `{"result": null}`})
		check(t, s.get(t, "/users/0/manager/name"), errorWant("HTTP/1.1 404 Object Not Found"))
	})
}

func TestBadUsersFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "users.json")
	os.WriteFile(file, []byte(`{"not": "a list"}`), 0o644)
	_, err := startIn(t, dir, mode{name: "compiled"}, "-users", file)
	if err == nil || !strings.Contains(err.Error(), "users:") {
		t.Fatalf("want a start-up error naming users, got %v", err)
	}
}

func TestDownloadRangeAndConditional(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		s := shared(t, m)
		got := s.get(t, "/file/sub/data.bin", "Range: bytes=10-15")
		check(t, got, want{"HTTP/1.1 206 Partial Content", octCT, fixtureData[10:16]})
		if cr := got.Header.Get("Content-Range"); cr != "bytes 10-15/36" {
			t.Errorf("Content-Range %q", cr)
		}
		got = s.get(t, "/file/sub/data.bin", "If-Modified-Since: "+fixtureTime.UTC().Format(http.TimeFormat))
		if got.StatusLine != "HTTP/1.1 304 Not Modified" {
			t.Errorf("status line %q, want 304", got.StatusLine)
		}
		got = s.get(t, "/file/sub/data.bin")
		if lm := got.Header.Get("Last-Modified"); lm != fixtureTime.UTC().Format(http.TimeFormat) {
			t.Errorf("Last-Modified %q", lm)
		}
	})
}

// TestReadError answers 400 Error Reading File for a file that exists but
// cannot be opened: a symbolic link loop.
func TestReadError(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		s := start(t, m)
		if err := os.Symlink("loop", filepath.Join(s.Dir, "loop")); err != nil {
			t.Fatal(err)
		}
		check(t, s.get(t, "/file/loop"), errorWant("HTTP/1.1 400 Error Reading File"))
	})
}

// TestKeepAlive sends requests with custom reason phrases one after another
// on one connection, which must stay open.
func TestKeepAlive(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		s := shared(t, m)
		c, err := net.DialTimeout("tcp", s.Addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(c)
		seq := []struct{ target, status string }{
			{"/files/..", "HTTP/1.1 400 Invalid Path"},
			{"/config", "HTTP/1.1 200 OK"},
			{"/users/9", "HTTP/1.1 400 Invalid Scope"},
			{"/nothing", "HTTP/1.1 404 Not Found"},
			{"/users/1/name", "HTTP/1.1 400 Invalid Scope"},
			{"/file/hello.txt", "HTTP/1.1 200 OK"},
		}
		for _, q := range seq {
			fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", q.target)
			got := readResponse(t, br, false)
			if got.StatusLine != q.status {
				t.Fatalf("%s: status line %q, want %q", q.target, got.StatusLine, q.status)
			}
		}
		// Pipelined: both requests written before reading.
		io.WriteString(c, "GET /users/7 HTTP/1.1\r\nHost: x\r\n\r\nGET /files/.. HTTP/1.1\r\nHost: x\r\n\r\n")
		if got := readResponse(t, br, false); got.StatusLine != "HTTP/1.1 400 Invalid Scope" {
			t.Fatalf("pipelined 1: %q", got.StatusLine)
		}
		if got := readResponse(t, br, false); got.StatusLine != "HTTP/1.1 400 Invalid Path" {
			t.Fatalf("pipelined 2: %q", got.StatusLine)
		}
	})
}

// TestNoCookieEcho: cookies the request carries are not sent back.
func TestNoCookieEcho(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		s := shared(t, m)
		got := s.get(t, "/config", "Cookie: token=abc; user_id=3")
		if sc := got.Header.Values("Set-Cookie"); len(sc) != 0 {
			t.Errorf("Set-Cookie %q", sc)
		}
	})
}

func TestVersionFlag(t *testing.T) {
	t.Parallel()
	out, err := execOutput(binary, "-version")
	if err != nil || !strings.HasPrefix(out, "reso ") {
		t.Fatalf("-version: %q %v", out, err)
	}
}

func TestBadFlag(t *testing.T) {
	t.Parallel()
	_, err := startIn(t, t.TempDir(), mode{name: "compiled"}, "-no-such-flag")
	if err == nil {
		t.Fatal("an unknown flag started the server")
	}
}
