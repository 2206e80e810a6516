package tests

import (
	"os"
	"path/filepath"
	"testing"
)

// The tests of this file send bytes that are not UTF-8 in the path, a
// header, a file name, a body and a setting. Compiled in they were always
// answered; with -isolate, reso.plugin.v1 carried them in proto3 string
// fields, which refused to marshal them (500 "grpc: error while marshaling:
// string field contains invalid UTF-8"). Every answer must be the one
// compiled in, byte for byte, in both modes.

// TestNotUTF8Header: GET /users/0 with User-Agent: \xff.
func TestNotUTF8Header(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		s := shared(t, m)
		check(t, s.get(t, "/users/0", "User-Agent: \xff"),
			want{ok200, jsonCT, `{"result": {"username": "alice", "name": "Alice Example", "email": "alice@example.org"}}`})
		check(t, s.get(t, "/xml/users/0", "User-Agent: caf\xe9", "X-Other: \xff\xfe"),
			want{ok200, xmlCT, `<result><username>alice</username><name>Alice Example</name><email>alice@example.org</email></result>`})
	})
}

// TestNotUTF8FileName: a listed file whose name is not UTF-8 (caf\xe9.txt,
// Latin-1), listed, in every representation, and downloaded by its URL.
func TestNotUTF8FileName(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		s := start(t, m)
		name := filepath.Join(s.Dir, "caf\xe9.txt")
		if err := os.WriteFile(name, []byte("caf\xe9\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(name, fixtureTime, fixtureTime); err != nil {
			t.Fatal(err)
		}
		entry := `{"file": {"name": "caf\ufffd.txt", "url": "/file/caf%E9.txt", "size": 5, "mtime": 1700000000}}, `
		check(t, s.get(t, "/files"), want{ok200, jsonCT, `{"files": [` + entry + listingRoot[len(`{"files": [`):]})
		check(t, s.get(t, "/file/caf%E9.txt"), want{ok200, octCT, "caf\xe9\n"})
		check(t, s.get(t, "/file/caf%e9.txt"), want{ok200, octCT, "caf\xe9\n"})
		check(t, s.get(t, "/xml/files"), want{ok200, xmlCT, "<files><file><name>caf\ufffd.txt</name><url>/file/caf%E9.txt</url><size>5</size><mtime>1700000000</mtime></file>" +
			"<file><name>hello.txt</name><url>/file/hello.txt</url><size>13</size><mtime>1700000000</mtime></file>" +
			"<file><name>inside-link</name><url>/file/inside-link</url><size>13</size><mtime>1700000000</mtime></file>" +
			"<dir><name>sub</name><url>/files/sub</url></dir></files>"})
		check(t, s.get(t, "/plain/files"), want{ok200, textCT, "files:\n" +
			"  - file:\n      name: caf\xe9.txt\n      url: /file/caf%E9.txt\n      size: 5\n      mtime: 1700000000\n" +
			"  - file:\n      name: hello.txt\n      url: /file/hello.txt\n      size: 13\n      mtime: 1700000000\n" +
			"  - file:\n      name: inside-link\n      url: /file/inside-link\n      size: 13\n      mtime: 1700000000\n" +
			"  - dir:\n      name: sub\n      url: /files/sub\n"})
	})
}

// TestNotUTF8Setting: PUT /config with a text body \xff sets the shared
// directory setting to that byte, and GET /config shows it; a directory
// whose name is not UTF-8 is then configured and listed.
func TestNotUTF8Setting(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		s := start(t, m)
		empty := want{ok200, textCT, ""}
		check(t, s.do(t, "PUT", "/config", "\xff", "Content-Type: text/plain"), empty)
		check(t, s.get(t, "/config"), want{ok200, jsonCT, `{"config": {"directory": "\ufffd"}}`})
		check(t, s.get(t, "/plain/config"), want{ok200, textCT, "config:\n  directory: \xff\n"})
		check(t, s.get(t, "/xml/config"), want{ok200, xmlCT, "<config><directory>\ufffd</directory></config>"})

		dir := filepath.Join(s.Dir, "d\xe9")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "x\xe9"), []byte("12"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(filepath.Join(dir, "x\xe9"), fixtureTime, fixtureTime); err != nil {
			t.Fatal(err)
		}
		check(t, s.do(t, "PUT", "/config", "d\xe9", "Content-Type: text/plain"), empty)
		check(t, s.get(t, "/plain/config"), want{ok200, textCT, "config:\n  directory: d\xe9\n"})
		check(t, s.get(t, "/files"), want{ok200, jsonCT, `{"files": [{"file": {"name": "x\ufffd", "url": "/file/x%E9", "size": 2, "mtime": 1700000000}}]}`})
		check(t, s.get(t, "/file/x%E9"), want{ok200, octCT, "12"})
		// The rewrite GET /config?directory= sets it from the query.
		check(t, s.get(t, "/config?directory=."), empty)
		check(t, s.get(t, "/config?directory=d%E9"), empty)
		check(t, s.get(t, "/plain/config"), want{ok200, textCT, "config:\n  directory: d\xe9\n"})
	})
}
