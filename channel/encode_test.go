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

// TestNoteHeads checks the two notifications of a change, encoded before
// their seq and completed (again, as an attempt that waited does), byte
// for byte, each capped so that appending to one leaves the other whole.
func TestNoteHeads(t *testing.T) {
	h := noteHeads("PUT", "update", "/a/\"b", "/a", "\"b", "application/json", []byte(`{"n":1}`), "c1")
	h.complete(18446744073709551615)
	note, up := h.complete(7)
	wantNote := `{"notify":"PUT","resource":"/a/\"b","type":"application/json","entity":{"n":1},"from":"c1","seq":7}`
	wantUp := `{"notify":"UPDATE","resource":"/a","update":"\"b","type":"application/json","entity":{"n":1},"seq":7}`
	if string(note) != wantNote || string(up) != wantUp {
		t.Fatalf("got\n%s\n%s\nwant\n%s\n%s", note, up, wantNote, wantUp)
	}
	_ = append(note, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"...)
	if string(up) != wantUp {
		t.Fatalf("appending to the first changed the second: %s", up)
	}
	n := &node{path: "/a/b", parent: &node{path: "/a"}}
	note, up = changeNotes("DELETE", "delete", n, "", 18446744073709551615)
	wantNote = `{"notify":"DELETE","resource":"/a/b","type":null,"entity":null,"from":null,"seq":18446744073709551615}`
	wantUp = `{"notify":"UPDATE","resource":"/a","delete":"b","type":null,"entity":null,"seq":18446744073709551615}`
	if string(note) != wantNote || string(up) != wantUp {
		t.Fatalf("got\n%s\n%s\nwant\n%s\n%s", note, up, wantNote, wantUp)
	}
}

// TestNoteHeadsRoom: the notifications of a change are encoded in the
// room noteHeads reserves, without growing it, whether the type, the
// entity and the from are given or null (a DELETE's, on every removal of
// a connection's transients).
func TestNoteHeadsRoom(t *testing.T) {
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
			noteHeads(c.kind, c.key, "/bench/w/c1/123456", "/bench/w/c1", "123456", c.typ, c.pub, c.from)
		})
		if allocs != 1 {
			t.Errorf("%s %s: %v allocations, want 1", c.kind, c.key, allocs)
		}
	}
}
