package channel

import (
	"encoding/json"
	"testing"
)

// TestAppendString checks the JSON strings of frames and of the
// messages doors build.
func TestAppendString(t *testing.T) {
	cases := map[string]string{
		"/a?x=1&y=<2>": `"/a?x=1&y=<2>"`,
		"q\"b\\c":      `"q\"b\\c"`,
		"\x01\n":       `"\u0001\n"`,
		"a\u2028b":     `"a\u2028b"`,
		"caf\xc3\xa9":  "\"caf\xc3\xa9\"",
		"bad\xff":      `"bad\ufffd"`,
	}
	for in, want := range cases {
		got := string(AppendString(nil, in))
		if got != want {
			t.Errorf("%q: %s, want %s", in, got, want)
		}
		var back string
		if err := json.Unmarshal([]byte(got), &back); err != nil {
			t.Errorf("%q: %s is not JSON: %v", in, got, err)
		}
	}
}

// TestChangeNotes checks the two notifications of a change byte for
// byte, with escapes and with a missing type, entity and from (a
// DELETE's), each encoded in the room its size function gives.
func TestChangeNotes(t *testing.T) {
	for _, c := range []struct {
		kind, key, path, parent, name, typ string
		pub                                []byte
		from                               string
		seq                                uint64
		note, up                           string
	}{
		{"PUT", "update", "/a/\"b", "/a", "\"b", "application/json", []byte(`{"n":1}`), "c1", 7,
			`{"notify":"PUT","resource":"/a/\"b","type":"application/json","entity":{"n":1},"from":"c1","seq":7}`,
			`{"notify":"UPDATE","resource":"/a","update":"\"b","type":"application/json","entity":{"n":1},"seq":7}`},
		{"DELETE", "delete", "/a/b", "/a", "b", "", nil, "", 18446744073709551615,
			`{"notify":"DELETE","resource":"/a/b","type":null,"entity":null,"from":null,"seq":18446744073709551615}`,
			`{"notify":"UPDATE","resource":"/a","delete":"b","type":null,"entity":null,"seq":18446744073709551615}`},
	} {
		note := noteBytes(c.kind, c.path, c.typ, c.pub, c.from, c.seq)
		up := upBytes(c.key, c.parent, c.name, c.typ, c.pub, c.seq)
		if string(note) != c.note || string(up) != c.up {
			t.Errorf("got\n%s\n%s\nwant\n%s\n%s", note, up, c.note, c.up)
		}
		if cap(note) != len(note) || cap(up) != len(up) {
			t.Errorf("%s: not capped at their lengths", c.kind)
		}
	}
}

// TestChangeNotesRoom: each notification of a change is encoded in the
// room its size function reserves, without growing it, whether the type,
// the entity and the from are given or null.
func TestChangeNotesRoom(t *testing.T) {
	for _, c := range []struct {
		kind, key, typ string
		pub            []byte
		from           string
	}{
		{"DELETE", "delete", "", nil, ""},
		{"DELETE", "delete", "", nil, "c1"},
		{"PUT", "create", "entity", []byte(`{"n":1}`), "c1"},
		{"PUT", "update", "presence", []byte(`{}`), ""},
	} {
		allocs := testing.AllocsPerRun(10, func() {
			noteBytes(c.kind, "/bench/w/c1/123456", c.typ, c.pub, c.from, 18446744073709551615)
			upBytes(c.key, "/bench/w/c1", "123456", c.typ, c.pub, 18446744073709551615)
		})
		if allocs != 2 {
			t.Errorf("%s %s: %v allocations, want 2", c.kind, c.key, allocs)
		}
	}
}
