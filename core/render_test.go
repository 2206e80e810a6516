package core

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// Types exercising the value model.
type (
	renderTagged struct {
		Name    string `json:"name"`
		Size    int64  `json:"size,omitempty"`
		Secret  string `json:"-"`
		Dash    string `json:"-,"`
		Plain   bool
		Options string `json:",omitempty"`
		hidden  int
	}
	renderValuer    struct{ v any }
	renderLoop      struct{}
	renderPtrValuer struct{ n int }
	renderRaw       string // supplies its own JSON and XML
	renderPtrRaw    struct{}
	renderCycle     struct{ Next *renderCycle }
	renderString    string
	renderInt       int16
	renderNode      Node
	renderItems     []any
	renderFields    []Field
	renderBadText   struct{}
)

func (v renderValuer) Value() any     { return v.v }
func (renderLoop) Value() any         { return renderLoop{} }
func (p *renderPtrValuer) Value() any { return p.n }

func (r renderRaw) AppendJSON(dst []byte) []byte { return append(dst, `{"raw": true}`...) }
func (r renderRaw) AppendXML(dst []byte) []byte  { return append(dst, "<raw/>"...) }

func (*renderPtrRaw) AppendJSON(dst []byte) []byte { return append(dst, "1"...) }
func (*renderPtrRaw) AppendXML(dst []byte) []byte  { return append(dst, "<x/>"...) }

func (renderBadText) MarshalText() ([]byte, error) { return nil, errors.New("no text") }

var (
	renderACL = Node{"file", Record{
		{"name", "myfile.txt"},
		{"acl", List{Node{"allow", "ann"}, Node{"allow", "admin"}}},
	}}
	renderConfig = Node{"config", Record{{"directory", "."}}}
)

type renderCase struct {
	name string
	v    any
	want string
}

// renderJSONCases are cases whose JSON is fixed by docs/wire.md#json.
func renderJSONCases() []renderCase {
	var nilNode *Node
	var nilMap map[string]any
	var nilRaw *renderPtrRaw
	x := 7
	px := &x
	return []renderCase{
		{"golden acl", renderACL, `{"file": {"name": "myfile.txt", "acl": [{"allow": "ann"}, {"allow": "admin"}]}}`},
		{"golden config", renderConfig, `{"config": {"directory": "."}}`},
		{"empty list", List{}, `[]`},
		{"nil list", List(nil), `[]`},
		{"empty record", Record{}, `{}`},
		{"nil", nil, `null`},
		{"node nil", Node{"a", nil}, `{"a": null}`},
		{"node list", Node{"l", List{1, "x", nil}}, `{"l": [1, "x", null]}`},
		{"node node", Node{"a", Node{"b", true}}, `{"a": {"b": true}}`},
		{"field", Field{"n", 1}, `{"n": 1}`},
		{"record nil field", Record{{"a", nil}, {"b", false}}, `{"a": null, "b": false}`},
		{"bools", List{true, false}, `[true, false]`},
		{"ints", List{int8(-128), int16(-5), int32(7), int64(math.MinInt64), math.MaxInt, 0}, `[-128, -5, 7, -9223372036854775808, 9223372036854775807, 0]`},
		{"uints", List{uint8(255), uint16(1), uint32(2), uint64(math.MaxUint64), uint(3), uintptr(4)}, `[255, 1, 2, 18446744073709551615, 3, 4]`},
		{"floats", List{1.0, 0.5, float32(0.1), math.Copysign(0, -1)}, `[1.0, 0.5, 0.1, -0.0]`},
		{"nan inf", List{math.NaN(), math.Inf(1), math.Inf(-1), float32(math.Inf(1))}, `[null, null, null, null]`},
		{"strings", []string{"a", "b"}, `["a", "b"]`},
		{"empty strings", []string{}, `[]`},
		{"any slice", []any{"a", 1}, `["a", 1]`},
		{"int slice", []int{1, 2, 3}, `[1, 2, 3]`},
		{"byte slice", []byte{1, 2}, `[1, 2]`},
		{"array", [2]string{"x", "y"}, `["x", "y"]`},
		{"map any sorted", map[string]any{"b": 2, "a": 1, "c": List{}}, `{"a": 1, "b": 2, "c": []}`},
		{"map string sorted", map[string]string{"z": "1", "y": "2"}, `{"y": "2", "z": "1"}`},
		{"map int keys", map[int]bool{10: true, 2: false, 1: true}, `{"1": true, "10": true, "2": false}`},
		{"map named keys", map[renderString]int{"b": 1, "a": 2}, `{"a": 2, "b": 1}`},
		{"nil map", nilMap, `{}`},
		{"struct tags", renderTagged{Name: "n", Secret: "s", Dash: "d", Plain: true, hidden: 1}, `{"name": "n", "size": 0, "-": "d", "Plain": true, "Options": ""}`},
		{"struct pointer", &renderTagged{Name: "p"}, `{"name": "p", "size": 0, "-": "", "Plain": false, "Options": ""}`},
		{"nil node pointer", nilNode, `null`},
		{"node pointer", &Node{"a", 1}, `{"a": 1}`},
		{"pointer pointer", &px, `7`},
		{"named string", renderString("s"), `"s"`},
		{"named int", renderInt(-3), `-3`},
		{"named node", renderNode{"a", "b"}, `{"a": "b"}`},
		{"named list", renderItems{1, "b"}, `[1, "b"]`},
		{"named record", renderFields{{"a", 1}}, `{"a": 1}`},
		{"valuer", renderValuer{Node{"v", 1}}, `{"v": 1}`},
		{"valuer nil", renderValuer{}, `null`},
		{"valuer in record", Record{{"a", renderValuer{"x"}}}, `{"a": "x"}`},
		{"valuer loop", renderLoop{}, `null`},
		{"pointer valuer", &renderPtrValuer{3}, `3`},
		{"nil pointer valuer", (*renderPtrValuer)(nil), `null`},
		{"json appender", Record{{"r", renderRaw("ignored")}}, `{"r": {"raw": true}}`},
		{"nil json appender", nilRaw, `null`},
		{"text marshaler", time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC), `"2024-01-02T03:04:05Z"`},
		{"text marshaler error", renderBadText{}, `null`},
		{"error", errors.New("boom"), `"boom"`},
		{"complex", complex(1, 2), `"(1+2i)"`},
		{"cycle", Node{"c", Record{{"n", renderLoop{}}}}, `{"c": {"n": null}}`},
	}
}

func TestRenderJSON(t *testing.T) {
	for _, tc := range renderJSONCases() {
		t.Run(tc.name, func(t *testing.T) {
			got := AppendJSON([]byte("prefix:"), tc.v)
			if want := "prefix:" + tc.want; string(got) != want {
				t.Errorf("AppendJSON(%#v)\n got %s\nwant %s", tc.v, got, want)
			}
			if !json.Valid(got[len("prefix:"):]) {
				t.Errorf("invalid JSON %s", got)
			}
		})
	}
}

func TestRenderJSONCycle(t *testing.T) {
	c := &renderCycle{}
	c.Next = c
	got := AppendJSON(nil, c)
	if !json.Valid(got) {
		t.Fatalf("invalid JSON %s", got)
	}
	if n := bytes.Count(got, []byte(`{"Next": `)); n < 10 || n > maxRenderDepth {
		t.Errorf("cycle rendered %d levels: %s", n, got)
	}
	if !bytes.Contains(got, []byte("null")) {
		t.Errorf("cycle does not end in null: %s", got)
	}
}

func TestRenderJSONString(t *testing.T) {
	for _, tc := range []renderCase{
		{"plain", "hello, world", `"hello, world"`},
		{"empty", "", `""`},
		{"quote backslash", `a"b\c/d`, `"a\"b\\c/d"`},
		{"short escapes", "\n\r\t\b\f", `"\n\r\t\b\f"`},
		{"controls", "\x00\x01\x1f\x7f", `"\u0000\u0001\u001f\u007f"`},
		{"latin", "café", `"caf\u00e9"`},
		{"c1", "\u0080\u009f", `"\u0080\u009f"`},
		{"line separator", "\u2028", `"\u2028"`},
		{"bmp upper", "\uffff\ufffd", `"\uffff\ufffd"`},
		{"emoji", "😀", `"\ud83d\ude00"`},
		{"max rune", "\U0010ffff", `"\udbff\udfff"`},
		{"invalid utf8", "a\xffb\xc3", `"a\ufffdb\ufffd"`},
		{"encoded surrogate", "\xed\xa0\x80", `"\ufffd\ufffd\ufffd"`},
		{"html", "<>&'", `"<>&'"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := AppendJSON(nil, tc.v); string(got) != tc.want {
				t.Errorf("AppendJSON(%q) = %s, want %s", tc.v, got, tc.want)
			}
		})
	}
}

// TestRenderFloat checks Python repr(float) compatibility.
func TestRenderFloat(t *testing.T) {
	for _, tc := range []struct {
		f    any
		want string
	}{
		{0.0, "0.0"},
		{1.0, "1.0"},
		{0.1, "0.1"},
		{1e-05, "1e-05"},
		{0.0001, "0.0001"},
		{0.00012345, "0.00012345"},
		{1e16, "1e+16"},
		{1e15, "1000000000000000.0"},
		{1234567890123456.0, "1234567890123456.0"},
		{123456789012345678.0, "1.2345678901234568e+17"},
		{123.456, "123.456"},
		{-0.0, "0.0"}, // the constant -0.0 is +0 in Go
		{math.Copysign(0, -1), "-0.0"},
		{-2.5, "-2.5"},
		{1.5e300, "1.5e+300"},
		{5e-324, "5e-324"},
		{math.MaxFloat64, "1.7976931348623157e+308"},
		{1e22, "1e+22"},
		{2.5e-5, "2.5e-05"},
		{100.0, "100.0"},
		{float64(1 << 53), "9007199254740992.0"},
		{float32(0.1), "0.1"},
		{float32(16777216), "16777216.0"},
		{float32(1e-7), "1e-07"},
		{float32(3.4028235e38), "3.4028235e+38"},
	} {
		t.Run(fmt.Sprint(tc.want), func(t *testing.T) {
			for _, r := range []struct {
				name   string
				append func([]byte, any) []byte
			}{{"json", AppendJSON}, {"xml", AppendXML}} {
				if got := r.append(nil, tc.f); string(got) != tc.want {
					t.Errorf("%s(%v) = %s, want %s", r.name, tc.f, got, tc.want)
				}
			}
			if got := AppendText(nil, tc.f); string(got) != tc.want+"\n" {
				t.Errorf("AppendText(%v) = %q, want %q", tc.f, got, tc.want+"\n")
			}
		})
	}
}

func TestRenderXML(t *testing.T) {
	var nilRaw *renderPtrRaw
	for _, tc := range []renderCase{
		{"golden acl", renderACL, `<file><name>myfile.txt</name><acl><allow>ann</allow><allow>admin</allow></acl></file>`},
		{"golden config", renderConfig, `<config><directory>.</directory></config>`},
		{"nil", nil, ``},
		{"node nil", Node{"empty", nil}, `<empty />`},
		{"node empty string", Node{"e", ""}, `<e />`},
		{"node empty list", Node{"e", List{}}, `<e />`},
		{"node nil pointer", Node{"e", (*Node)(nil)}, `<e />`},
		{"node valuer nil", Node{"e", renderValuer{}}, `<e />`},
		{"node node", Node{"a", Node{"b", 1}}, `<a><b>1</b></a>`},
		{"record nil field", Record{{"a", nil}, {"b", 2}}, `<a /><b>2</b>`},
		{"field", Field{"f", "v"}, `<f>v</f>`},
		{"list of scalars", List{"a", 1, true, nil, 2.5}, `a1true2.5`},
		{"strings", []string{"a", "<"}, `a&lt;`},
		{"numbers", List{Node{"i", -3}, Node{"u", uint64(math.MaxUint64)}, Node{"f", 1e16}}, `<i>-3</i><u>18446744073709551615</u><f>1e+16</f>`},
		{"non-finite", List{Node{"n", math.NaN()}, Node{"p", math.Inf(1)}, Node{"m", math.Inf(-1)}}, `<n>NaN</n><p>inf</p><m>-inf</m>`},
		{"map sorted", map[string]any{"b": 2, "a": nil}, `<a /><b>2</b>`},
		{"struct", renderTagged{Name: "n", Plain: true}, `<name>n</name><size>0</size><_- /><Plain>true</Plain><Options />`},
		{"valuer", renderValuer{Node{"v", "x"}}, `<v>x</v>`},
		{"valuer loop", Node{"l", renderLoop{}}, `<l />`},
		{"xml appender", Node{"r", renderRaw("ignored")}, `<r><raw/></r>`},
		{"nil xml appender", Node{"r", nilRaw}, `<r />`},
		{"escaping", "a<b>&c\"d'e", `a&lt;b&gt;&amp;c"d'e`},
		{"carriage return", "a\r\nb", "a&#xD;\nb"},
		{"tab newline", "a\tb\nc", "a\tb\nc"},
		{"controls", "a\x00b\x1f\x7f", "a\ufffdb\ufffd\x7f"},
		{"invalid utf8", "a\xffb\xed\xa0\x80", "a\ufffdb\ufffd\ufffd\ufffd"},
		{"non-characters", "\ufffe\uffff\ufffd", "\ufffd\ufffd\ufffd"},
		{"unicode", "é😀\u2028", "é😀\u2028"},
		{"cdata end", "]]>", "]]&gt;"},
		{"name empty", Node{"", 1}, `<_>1</_>`},
		{"name digit", Node{"1a", 1}, `<_1a>1</_1a>`},
		{"name dash", Node{"-x", nil}, `<_-x />`},
		{"name dot", Node{".x", nil}, `<_.x />`},
		{"name space", Node{"a b", nil}, `<a_b />`},
		{"name colon", Node{"ns:x", nil}, `<ns_x />`},
		{"name markup", Node{"<a>", nil}, `<_a_ />`},
		{"name invalid utf8", Node{"a\xffb", nil}, `<a_b />`},
		{"name valid", Node{"a-b.c_d1", nil}, `<a-b.c_d1 />`},
		{"name xml prefix", Node{"xmlthing", nil}, `<xmlthing />`},
		{"name latin", Node{"café", nil}, `<café />`},
		{"name cjk", Node{"日本語", nil}, `<日本語 />`},
		{"name katakana", Node{"データ", nil}, `<データ />`},
		{"name combining first", Node{"\u0301x", nil}, "<_\u0301x />"},
		{"name emoji", Node{"a😀", nil}, `<a_ />`},
		{"name field", Record{{"1", "x"}}, `<_1>x</_1>`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := AppendXML([]byte("<p>"), tc.v)
			if want := "<p>" + tc.want; string(got) != want {
				t.Errorf("AppendXML(%#v)\n got %s\nwant %s", tc.v, got, want)
			}
			renderCheckXML(t, append(got, "</p>"...))
		})
	}
}

// renderCheckXML fails t when doc is not a well-formed XML document.
func renderCheckXML(t *testing.T, doc []byte) {
	t.Helper()
	if _, err := renderParseXML(doc); err != nil {
		t.Errorf("%v in %q", err, doc)
	}
}

// renderParseXML parses doc strictly and returns its character data.
func renderParseXML(doc []byte) (string, error) {
	d := xml.NewDecoder(bytes.NewReader(doc))
	d.Strict = true
	var text strings.Builder
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return text.String(), nil
		}
		if err != nil {
			return "", err
		}
		if cd, ok := tok.(xml.CharData); ok {
			text.Write(cd)
		}
	}
}

// TestRenderXMLNameTables checks that every character the name tables allow
// is accepted by encoding/xml and by the XML 1.0 fifth edition.
func TestRenderXMLNameTables(t *testing.T) {
	fifthStart := func(r rune) bool {
		for _, rg := range [][2]rune{
			{'A', 'Z'}, {'_', '_'}, {'a', 'z'}, {0xC0, 0xD6}, {0xD8, 0xF6}, {0xF8, 0x2FF},
			{0x370, 0x37D}, {0x37F, 0x1FFF}, {0x200C, 0x200D}, {0x2070, 0x218F}, {0x2C00, 0x2FEF},
			{0x3001, 0xD7FF}, {0xF900, 0xFDCF}, {0xFDF0, 0xFFFD}, {0x10000, 0xEFFFF},
		} {
			if rg[0] <= r && r <= rg[1] {
				return true
			}
		}
		return false
	}
	fifthChar := func(r rune) bool {
		return fifthStart(r) || r == '-' || r == '.' || '0' <= r && r <= '9' || r == 0xB7 ||
			0x300 <= r && r <= 0x36F || r == 0x203F || r == 0x2040
	}
	parses := func(s string) bool {
		_, err := renderParseXML([]byte("<" + s + "/>"))
		return err == nil
	}
	var starts, chars int
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if isXMLNameStart(r) {
			starts++
			if !fifthStart(r) || !parses(string(r)) || r == ':' {
				t.Errorf("name start %U is not valid", r)
			}
		}
		if isXMLNameChar(r) {
			chars++
			if !fifthChar(r) || !parses("a"+string(r)) || r == ':' {
				t.Errorf("name character %U is not valid", r)
			}
		}
	}
	if starts < 30000 || chars <= starts {
		t.Errorf("tables too small: %d start, %d name characters", starts, chars)
	}
}

func TestRenderText(t *testing.T) {
	for _, tc := range []renderCase{
		{"nil", nil, ""},
		{"empty string", "", ""},
		{"string", "x y", "x y\n"},
		{"int", 12, "12\n"},
		{"bool", false, "false\n"},
		{"golden config", renderConfig, "config:\n  directory: .\n"},
		{"golden path", Node{"path", "some/where"}, "path: some/where\n"},
		{"golden acl", renderACL, "file:\n  name: myfile.txt\n  acl:\n    - allow: ann\n    - allow: admin\n"},
		{"node nil", Node{"a", nil}, "a:\n"},
		{"node empty string", Node{"a", ""}, "a:\n"},
		{"node empty list", Node{"a", List{}}, "a:\n"},
		{"node node", Node{"a", Node{"b", 1.5}}, "a:\n  b: 1.5\n"},
		{"record", Record{{"a", 1}, {"b", nil}, {"c", "x"}}, "a: 1\nb:\nc: x\n"},
		{"field", Field{"f", true}, "f: true\n"},
		{"list", List{Node{"a", 1}, "b"}, "- a: 1\n- b\n"},
		{"list nil item", List{nil, "", 1}, "-\n-\n- 1\n"},
		{"nested list", List{List{1, 2}, 3}, "- - 1\n  - 2\n- 3\n"},
		{"list record item", List{Record{{"a", 1}, {"b", 2}}}, "- a: 1\n  b: 2\n"},
		{"strings", []string{"a", "b"}, "- a\n- b\n"},
		{"node strings", Node{"s", []string{"a"}}, "s:\n  - a\n"},
		{"listing", Node{"files", List{Node{"file", Record{{"name", "a"}, {"size", 1}}}}},
			"files:\n  - file:\n      name: a\n      size: 1\n"},
		{"map", map[string]int{"b": 1, "a": 2}, "a: 2\nb: 1\n"},
		{"struct", renderTagged{Name: "n"}, "name: n\nsize: 0\n-:\nPlain: false\nOptions:\n"},
		{"valuer", Node{"v", renderValuer{List{1}}}, "v:\n  - 1\n"},
		{"valuer loop", Node{"v", renderLoop{}}, "v:\n"},
		{"nil pointer", Node{"p", (*Node)(nil)}, "p:\n"},
		{"non-finite", List{math.NaN(), math.Inf(-1)}, "- NaN\n- -inf\n"},
		{"multi-line raw", Node{"m", "a\nb"}, "m: a\nb\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := AppendText([]byte("p\n"), tc.v)
			if want := "p\n" + tc.want; string(got) != want {
				t.Errorf("AppendText(%#v)\n got %q\nwant %q", tc.v, got, want)
			}
		})
	}
}

// renderListing is the value of a typical directory listing.
func renderListing() Node {
	files := make(List, 20)
	for i := range files {
		name := "file-" + strconv.Itoa(i) + ".txt"
		files[i] = Node{"file", Record{
			{"name", name},
			{"url", "/files/some/where/" + name},
			{"size", int64(1000 * i)},
			{"mtime", 1700000000.25 + float64(i)},
		}}
	}
	return Node{"files", files}
}

// TestRenderGolden compares the renderings of a listing with the files in
// testdata/render; RENDER_UPDATE_GOLDEN=1 rewrites them.
func TestRenderGolden(t *testing.T) {
	v := List{renderListing(), renderACL, renderConfig}
	for _, tc := range []struct {
		file   string
		append func([]byte, any) []byte
	}{
		{"listing.json", AppendJSON},
		{"listing.xml", AppendXML},
		{"listing.txt", AppendText},
	} {
		t.Run(tc.file, func(t *testing.T) {
			got := tc.append(nil, v)
			path := filepath.Join("testdata", "render", tc.file)
			if os.Getenv("RENDER_UPDATE_GOLDEN") == "1" {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("rendering differs from %s:\n%s", path, got)
			}
		})
	}
}

func TestNegotiate(t *testing.T) {
	for _, tc := range []struct{ typ, want string }{
		{"", TypeJSON},
		{"  ", TypeJSON},
		{"application/json", TypeJSON},
		{"text/xml", TypeXML},
		{"TEXT/XML", TypeXML},
		{"text/plain", TypePlain},
		{"text/plain, */*", TypeJSON},
		{"text/xml text/plain", TypeXML},
		{"text/plain,text/xml", TypeXML},
		{"text/xml, application/json", TypeJSON},
		{"image/png", TypeOctet},
		{"text/html;q=0.9", TypeOctet},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			if got := Negotiate(tc.typ); got != tc.want {
				t.Errorf("Negotiate(%q) = %q, want %q", tc.typ, got, tc.want)
			}
		})
	}
}

func TestRenderContentType(t *testing.T) {
	for _, tc := range []struct{ typ, wantType, wantBody string }{
		{"", TypeJSON, `{"config": {"directory": "."}}`},
		{"*/*", TypeJSON, `{"config": {"directory": "."}}`},
		{"text/xml", TypeXML, `<config><directory>.</directory></config>`},
		{"text/plain", TypePlain, "config:\n  directory: .\n"},
		{"image/png", TypeOctet, "config:\n  directory: .\n"},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			ct, body := Render(tc.typ, renderConfig)
			if ct != tc.wantType || string(body) != tc.wantBody {
				t.Errorf("Render(%q) = %q, %q; want %q, %q", tc.typ, ct, body, tc.wantType, tc.wantBody)
			}
		})
	}
}

// renderFuzzTree decodes fuzz bytes into a value tree of bounded depth.
type renderFuzzTree struct{ b []byte }

func (d *renderFuzzTree) byte() byte {
	if len(d.b) == 0 {
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *renderFuzzTree) str() string {
	n := min(int(d.byte()%16), len(d.b))
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *renderFuzzTree) u64() uint64 {
	var x uint64
	for range 8 {
		x = x<<8 | uint64(d.byte())
	}
	return x
}

func (d *renderFuzzTree) value(depth int) any {
	if len(d.b) == 0 {
		return nil
	}
	op := d.byte() % 12
	if depth >= 8 {
		op %= 7
	}
	switch op {
	case 0:
		return nil
	case 1, 2:
		return d.str()
	case 3:
		return int64(d.u64())
	case 4:
		return math.Float64frombits(d.u64())
	case 5:
		return math.Float32frombits(uint32(d.u64()))
	case 6:
		return d.byte()&1 == 1
	case 7:
		return Node{d.str(), d.value(depth + 1)}
	case 8:
		r := Record{}
		for range d.byte() % 4 {
			r = append(r, Field{d.str(), d.value(depth + 1)})
		}
		return r
	case 9:
		l := List{}
		for range d.byte() % 4 {
			l = append(l, d.value(depth+1))
		}
		return l
	case 10:
		m := map[string]any{}
		for range d.byte() % 4 {
			m[d.str()] = d.value(depth + 1)
		}
		return m
	default:
		return d.u64()
	}
}

func renderFuzzSeeds(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x07\x04file\x08\x02\x04name\x01\x05a.txt\x03acl\x09\x02\x07\x05allow\x01\x03ann\x07\x05allow\x00"))
	f.Add([]byte("\x09\x03\x04\x7f\xf8\x00\x00\x00\x00\x00\x01\x05\x00\x00\x00\x00\x80\x00\x00\x00\x06\x01"))
	f.Add([]byte("\x0a\x02\x02b:c\x01\x04\xff\xfe\r\x00\x01a\x0b\xff\xff\xff\xff\xff\xff\xff\xff"))
	f.Add([]byte("\x07\x03<&>\x01\x06\xf0\x9f\x98\x80\xed\xa0"))
}

// renderWalkJSON checks that the next JSON value of dec is the rendering of v.
func renderWalkJSON(dec *json.Decoder, v any) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	want := func(w any) error {
		if tok != w {
			return fmt.Errorf("got token %#v, want %#v", tok, w)
		}
		return nil
	}
	num := func() (string, error) {
		n, ok := tok.(json.Number)
		if !ok {
			return "", fmt.Errorf("got token %#v, want a number", tok)
		}
		return n.String(), nil
	}
	fields := func(r Record) error {
		if err := want(json.Delim('{')); err != nil {
			return err
		}
		for _, f := range r {
			if tok, err = dec.Token(); err != nil {
				return err
			}
			if err := want(string([]rune(f.Name))); err != nil {
				return err
			}
			if err := renderWalkJSON(dec, f.Value); err != nil {
				return err
			}
		}
		if tok, err = dec.Token(); err != nil {
			return err
		}
		return want(json.Delim('}'))
	}
	switch x := v.(type) {
	case nil:
		return want(nil)
	case bool:
		return want(x)
	case string:
		return want(string([]rune(x))) // invalid bytes become U+FFFD one by one
	case int64, uint64:
		s, err := num()
		if err == nil && s != fmt.Sprint(x) {
			err = fmt.Errorf("got %s, want %d", s, x)
		}
		return err
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return want(nil)
		}
		s, err := num()
		if err != nil {
			return err
		}
		if g, err := strconv.ParseFloat(s, 64); err != nil || math.Float64bits(g) != math.Float64bits(x) {
			return fmt.Errorf("got %s, want %v", s, x)
		}
		return nil
	case float32:
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return want(nil)
		}
		s, err := num()
		if err != nil {
			return err
		}
		if g, err := strconv.ParseFloat(s, 32); err != nil || math.Float32bits(float32(g)) != math.Float32bits(x) {
			return fmt.Errorf("got %s, want float32 %v", s, x)
		}
		return nil
	case Node:
		return fields(Record{{x.Name, x.Content}})
	case Record:
		return fields(x)
	case map[string]any:
		return fields(recordFromMap(x))
	case List:
		if err := want(json.Delim('[')); err != nil {
			return err
		}
		for _, e := range x {
			if err := renderWalkJSON(dec, e); err != nil {
				return err
			}
		}
		if tok, err = dec.Token(); err != nil {
			return err
		}
		return want(json.Delim(']'))
	}
	return fmt.Errorf("unexpected tree value %#v", v)
}

func FuzzRenderJSON(f *testing.F) {
	renderFuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		v := (&renderFuzzTree{data}).value(0)
		out := AppendJSON(nil, v)
		if !json.Valid(out) {
			t.Fatalf("invalid JSON %q for %#v", out, v)
		}
		for _, c := range out {
			if c >= utf8.RuneSelf || c < 0x20 {
				t.Fatalf("non-ASCII or control byte in %q", out)
			}
		}
		dec := json.NewDecoder(bytes.NewReader(out))
		dec.UseNumber()
		if err := renderWalkJSON(dec, v); err != nil {
			t.Fatalf("%v\nJSON %s\ntree %#v", err, out, v)
		}
		if _, err := dec.Token(); err != io.EOF {
			t.Fatalf("trailing data in %s", out)
		}
	})
}

// renderXMLText is the character data that the XML form of v holds.
func renderXMLText(b *strings.Builder, v any) {
	switch x := v.(type) {
	case string:
		for _, r := range x {
			if r == '\t' || r == '\n' || r == '\r' || r >= 0x20 && r <= 0xd7ff || r >= 0xe000 && r <= 0xfffd || r >= 0x10000 {
				b.WriteRune(r)
			} else {
				b.WriteRune(utf8.RuneError)
			}
		}
	case float32:
		b.Write(appendFloat(nil, float64(x), 32))
	case float64:
		b.Write(appendFloat(nil, x, 64))
	case int64, uint64, bool:
		fmt.Fprint(b, x)
	case Node:
		renderXMLText(b, x.Content)
	case Record:
		for _, f := range x {
			renderXMLText(b, f.Value)
		}
	case map[string]any:
		renderXMLText(b, recordFromMap(x))
	case List:
		for _, e := range x {
			renderXMLText(b, e)
		}
	}
}

func FuzzRenderXML(f *testing.F) {
	renderFuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		v := (&renderFuzzTree{data}).value(0)
		doc := AppendXML([]byte("<root>"), v)
		doc = append(doc, "</root>"...)
		text, err := renderParseXML(doc)
		if err != nil {
			t.Fatalf("%v in %q for %#v", err, doc, v)
		}
		var want strings.Builder
		renderXMLText(&want, v)
		if text != want.String() {
			t.Fatalf("character data %q, want %q in %q", text, want.String(), doc)
		}
	})
}

func FuzzRenderText(f *testing.F) {
	renderFuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		v := (&renderFuzzTree{data}).value(0)
		out := AppendText(nil, v)
		if len(out) > 0 && out[len(out)-1] != '\n' {
			t.Fatalf("output %q does not end with a newline", out)
		}
		for _, s := range renderStrings(nil, v) {
			if !bytes.Contains(out, []byte(s)) {
				t.Fatalf("output %q lacks %q", out, s)
			}
		}
	})
}

// renderStrings appends the names and string scalars of v to dst.
func renderStrings(dst []string, v any) []string {
	switch x := v.(type) {
	case string:
		return append(dst, x)
	case Node:
		return renderStrings(append(dst, x.Name), x.Content)
	case Record:
		for _, f := range x {
			dst = renderStrings(append(dst, f.Name), f.Value)
		}
	case map[string]any:
		for k, e := range x {
			dst = renderStrings(append(dst, k), e)
		}
	case List:
		for _, e := range x {
			dst = renderStrings(dst, e)
		}
	}
	return dst
}

func BenchmarkRenderJSON(b *testing.B) { renderBenchmark(b, AppendJSON) }

func BenchmarkRenderXML(b *testing.B) { renderBenchmark(b, AppendXML) }

func BenchmarkRenderText(b *testing.B) { renderBenchmark(b, AppendText) }

func renderBenchmark(b *testing.B, appendValue func([]byte, any) []byte) {
	var v any = renderListing() // boxed once, as a handler result is
	b.Run("reuse", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf = appendValue(buf[:0], v)
		}
		b.SetBytes(int64(len(buf)))
	})
	b.Run("new", func(b *testing.B) {
		b.ReportAllocs()
		var n int
		for b.Loop() {
			n = len(appendValue(nil, v))
		}
		b.SetBytes(int64(n))
	})
}
