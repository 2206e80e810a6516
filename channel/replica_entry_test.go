package channel

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// entryCases are entries whose lines the fast path writes and reads, and
// ones it leaves to encoding/json.
var entryCases = []entry{
	{V: entryVersion, K: kindMsg, P: "0a1b", Node: "n1", Conn: "ws-1", From: "ws-1", Who: "alice@example.com", At: 1764080000123, Msg: []byte(`{"method":"PUT","resource":"/a"}`)},
	{V: entryVersion, K: kindMsg, P: "p", Node: "n1", Call: true, ID: "x1", At: -5, Count: true, Msg: []byte{}},
	{V: entryVersion, K: kindMsg, P: "p", Node: "n3", Conn: "ws-1", From: "ws-1", At: 9, Redo: true, Msg: []byte(`{"method":"PUT","resource":"/a"}`)},
	{V: entryVersion, K: kindEnd, P: "p", Node: "n1", Conn: "ws-1"},
	{V: entryVersion, K: kindDead, Node: "n2"},
	{V: entryVersion, K: kindExpire, P: "p", Path: "/a/b", Lease: 1<<63 + 7},
	{V: entryVersion, K: kindMsg, Who: `quote " backslash \ tab 	 <&> é ` + "\u2028 \x00 \xff", Msg: []byte("\n")},
	{},
}

// TestEntryCodec: every entry's line is the one encoding/json writes,
// and decodeEntry gives back the entry encoding/json reads from it.
func TestEntryCodec(t *testing.T) {
	for _, e := range entryCases {
		data := e.encode()
		head, _, _ := bytes.Cut(data, []byte{'\n'})
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(&e); err != nil {
			t.Fatal(err)
		}
		if want := bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}); !bytes.Equal(head, want) {
			t.Errorf("line %s\nwant %s", head, want)
		}
		var got, want entry
		if err := decodeEntry(data, &got); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		if err := json.Unmarshal(head, &want); err != nil {
			t.Fatal(err)
		}
		want.Msg = e.Msg
		if e.Msg == nil {
			want.Msg = nil
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: decoded %+v, want %+v", data, got, want)
		}
	}
}

// FuzzEntryHead: whatever the line, decodeEntry reads what encoding/json
// reads, and fails where it fails.
func FuzzEntryHead(f *testing.F) {
	for _, e := range entryCases {
		head, _, _ := bytes.Cut(e.encode(), []byte{'\n'})
		f.Add(head)
	}
	for _, s := range []string{`{}`, `{"v":2, "k":"msg"}`, `{"V":2}`, `{"v":02}`, `{"v":-0}`, `{"lease":-1}`,
		`{"at":1e3}`, `{"v":1234567890123456789}`, `{"k":null}`, `{"call":tru}`, `{"k":"a"}x`, `{"v":2,}`, `{"p":"\u0041"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, head []byte) {
		if bytes.IndexByte(head, '\n') >= 0 {
			return // the line ends at the first newline
		}
		var got, want entry
		gotErr := decodeEntry(head, &got)
		wantErr := json.Unmarshal(head, &want)
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("%q: error %v, encoding/json %v", head, gotErr, wantErr)
		}
		if gotErr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: %+v, encoding/json %+v", head, got, want)
		}
	})
}

// BenchmarkEntry: one client's entry written and read, as a proposer
// and every node of a fleet do.
func BenchmarkEntry(b *testing.B) {
	e := entryCases[0]
	b.ReportAllocs()
	for b.Loop() {
		var d entry
		if err := decodeEntry(e.encode(), &d); err != nil {
			b.Fatal(err)
		}
	}
}
